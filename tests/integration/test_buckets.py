"""Bucket API through boto3: create/head/delete/list, name rules, location, ACL stubs."""

import urllib.parse

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, unique_bucket, raw, parse_error


def test_create_head_list_delete(s3):
    name = unique_bucket("bk")
    r = s3.create_bucket(Bucket=name)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert s3.head_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    listed = s3.list_buckets()
    names = [b["Name"] for b in listed["Buckets"]]
    assert name in names
    assert names == sorted(names)
    for b in listed["Buckets"]:
        assert b["CreationDate"] is not None
    assert "Owner" in listed and listed["Owner"].get("ID")
    r = s3.delete_bucket(Bucket=name)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_head_missing_bucket_404(s3):
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=unique_bucket("missing"))
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_delete_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=unique_bucket("missing"))
    assert err_code(e.value) == ("NoSuchBucket", 404)


def test_list_objects_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=unique_bucket("missing"))
    assert err_code(e.value) == ("NoSuchBucket", 404)


def test_put_object_missing_bucket(s3):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=unique_bucket("missing"), Key="k", Body=b"x")
    assert err_code(e.value) == ("NoSuchBucket", 404)


def test_create_twice_owned_by_you(s3, bucket):
    # AWS in us-east-1 (the suite's region): 200 for a bucket the caller owns; other regions
    # answer 409 BucketAlreadyOwnedByYou (test_aws_answers.py).
    assert s3.create_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_delete_not_empty(s3, bucket):
    s3.put_object(Bucket=bucket, Key="x", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert err_code(e.value) == ("BucketNotEmpty", 409)
    s3.head_bucket(Bucket=bucket)
    s3.delete_object(Bucket=bucket, Key="x")
    s3.delete_bucket(Bucket=bucket)


def test_delete_bucket_with_only_nested_key(s3, bucket):
    s3.put_object(Bucket=bucket, Key="deep/er/key", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert err_code(e.value) == ("BucketNotEmpty", 409)
    s3.delete_object(Bucket=bucket, Key="deep/er/key")
    # folders left behind by the nested key do not count as content
    s3.delete_bucket(Bucket=bucket)
    with pytest.raises(ClientError):
        s3.head_bucket(Bucket=bucket)


def test_recreate_after_delete_is_empty(s3):
    name = unique_bucket("re")
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="gone", Body=b"1")
    s3.delete_object(Bucket=name, Key="gone")
    s3.delete_bucket(Bucket=name)
    s3.create_bucket(Bucket=name)
    assert s3.list_objects_v2(Bucket=name)["KeyCount"] == 0
    s3.delete_bucket(Bucket=name)


BAD_NAMES = [
    "ab",                      # too short
    "a" * 64,                  # too long
    "UpperCase",               # uppercase
    "under_score",
    "-startdash",
    "enddash-",
    ".startdot",
    "enddot.",
    "two..dots",
    "192.168.5.4",             # IP address
    "xn--prefixed",
    "name-s3alias",
    "with space",
    "bad!char",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_invalid_bucket_names(server, name):
    # boto3 validates some names client-side, so send the request raw (signed by botocore).
    path = "/" + urllib.parse.quote(name, safe="")
    r = raw(server, "PUT", path)
    assert r.status == 400, r
    assert r.error().get("Code") == "InvalidBucketName", r


@pytest.mark.parametrize("name", ["abc", "a" * 63, "with.dots.ok", "digits-123", "3starts-with-digit"])
def test_valid_bucket_names(s3, name):
    s3.create_bucket(Bucket=name)
    s3.head_bucket(Bucket=name)
    s3.delete_bucket(Bucket=name)


def test_get_bucket_location(s3, bucket):
    r = s3.get_bucket_location(Bucket=bucket)
    # us-east-1 is reported as an empty LocationConstraint (None in boto3)
    assert r.get("LocationConstraint") in (None, "", "us-east-1")


def test_get_bucket_location_missing(s3):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_location(Bucket=unique_bucket("missing"))
    assert err_code(e.value) == ("NoSuchBucket", 404)


def test_create_bucket_malformed_xml(server):
    name = unique_bucket("mx")
    r = raw(server, "PUT", "/" + name, body=b"<CreateBucketConfiguration><Loc")
    assert r.status == 400, r
    assert r.error().get("Code") in ("MalformedXML", "InvalidArgument"), r
    raw(server, "DELETE", "/" + name)


def test_bucket_acl(s3, bucket):
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert acl["Owner"].get("ID")
    perms = [g["Permission"] for g in acl["Grants"]]
    assert "FULL_CONTROL" in perms
    s3.put_bucket_acl(Bucket=bucket, ACL="private")


def test_object_acl(s3, bucket):
    s3.put_object(Bucket=bucket, Key="acl", Body=b"x")
    acl = s3.get_object_acl(Bucket=bucket, Key="acl")
    assert "FULL_CONTROL" in [g["Permission"] for g in acl["Grants"]]
    s3.put_object_acl(Bucket=bucket, Key="acl", ACL="private")
    with pytest.raises(ClientError) as e:
        s3.get_object_acl(Bucket=bucket, Key="missing-acl")
    assert err_code(e.value) == ("NoSuchKey", 404)


def test_put_object_with_private_acl_header(s3, bucket):
    s3.put_object(Bucket=bucket, Key="acl2", Body=b"x", ACL="private")
    assert s3.get_object(Bucket=bucket, Key="acl2")["Body"].read() == b"x"


def test_list_buckets_error_shape_when_unsigned(server):
    r = raw(server, "GET", "/", sign=False)
    assert r.status == 403
    e = r.error()
    assert e.get("Code") == "AccessDenied"
    assert e.get("RequestId")

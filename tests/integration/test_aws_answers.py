"""Answers that must be exactly AWS S3's (status, code, headers) where cairn's own choice
would be plausible too: CreateBucket of an owned bucket in us-east-1, no x-amz-version-id in
a bucket never versioned, a repeated CompleteMultipartUpload, a part uploaded twice, more than
10 object tags, an UploadPartCopy range outside its source, an empty continuation-token,
control characters in listings, presigned X-Amz-Expires out of range and malformed presigned
queries, a SigV2 Date before the epoch, a POST form sent to another bucket than its policy's.
docs/S3-ERRORS.md names these tests beside the rows they cover."""

import base64
import datetime
import hashlib
import hmac
import json
import threading
import urllib.parse
import xml.etree.ElementTree as ET

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import (ACCESS, REGION, S3NS, SECRET, empty_bucket, err_code, raw, running_server,
                      signing_key, unique_bucket)

MIB = 1024 * 1024
MIN = 5 * MIB


def _headers(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"]


# --- CreateBucket ---------------------------------------------------------------------------

def test_create_owned_bucket_in_us_east_1_is_200(s3, bucket):
    # AWS's legacy us-east-1 behaviour: creating a bucket you already own succeeds.
    r = s3.create_bucket(Bucket=bucket)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.head_bucket(Bucket=bucket)


def test_create_owned_bucket_elsewhere_is_409():
    region = "eu-west-1"
    with running_server(extra_args=["--region", region]) as srv:
        c = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS,
                         aws_secret_access_key=SECRET, region_name=region,
                         config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                       retries={"max_attempts": 0}))
        name = unique_bucket("owned")
        cfg = {"LocationConstraint": region}
        c.create_bucket(Bucket=name, CreateBucketConfiguration=cfg)
        with pytest.raises(ClientError) as e:
            c.create_bucket(Bucket=name, CreateBucketConfiguration=cfg)
        assert err_code(e.value) == ("BucketAlreadyOwnedByYou", 409)


# --- tags ---------------------------------------------------------------------------------------

def test_more_than_ten_object_tags_is_invalid_tag(s3, bucket):
    s3.put_object(Bucket=bucket, Key="t", Body=b"x")
    tags = {"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]}
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="t", Tagging=tags)
    assert err_code(e.value) == ("InvalidTag", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="t2", Body=b"x", Tagging="&".join(f"k{i}=v" for i in range(11)))
    assert err_code(e.value) == ("InvalidTag", 400)


# --- UploadPartCopy range ------------------------------------------------------------------------

def test_upload_part_copy_range_outside_source_is_invalid_range(s3, bucket):
    s3.put_object(Bucket=bucket, Key="src", Body=b"0123456789")
    uid = s3.create_multipart_upload(Bucket=bucket, Key="dst")["UploadId"]
    cs = {"Bucket": bucket, "Key": "src"}
    for rng in ("bytes=0-10", "bytes=10-12", "bytes=50-60"):
        with pytest.raises(ClientError) as e:
            s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1, CopySource=cs,
                                CopySourceRange=rng)
        assert err_code(e.value) == ("InvalidRange", 416), rng
    r = s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=uid, PartNumber=1, CopySource=cs,
                            CopySourceRange="bytes=0-9")
    assert r["CopyPartResult"]["ETag"] == '"%s"' % hashlib.md5(b"0123456789").hexdigest()


# --- listings ------------------------------------------------------------------------------------

def test_empty_continuation_token_lists_from_the_start(server, s3, bucket):
    for k in ("a", "b"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = raw(server, "GET", f"/{bucket}", query=[("list-type", "2"), ("continuation-token", "")])
    assert r.status == 200, r
    root = ET.fromstring(r.body)
    assert [c.find(S3NS + "Key").text for c in root.findall(S3NS + "Contents")] == ["a", "b"]


@pytest.mark.parametrize("list_type", ["1", "2"])
def test_control_characters_are_xml_character_references(server, s3, bucket, list_type):
    s3.put_object(Bucket=bucket, Key="line\none", Body=b"x")
    s3.put_object(Bucket=bucket, Key="tab\tdir/x", Body=b"x")
    q = [("prefix", "line\n")] + ([("list-type", "2")] if list_type == "2" else [])
    r = raw(server, "GET", f"/{bucket}", query=q)
    assert r.status == 200, r
    assert b"<Key>line&#10;one</Key>" in r.body, r.body
    assert b"<Prefix>line&#10;</Prefix>" in r.body, r.body
    assert ET.fromstring(r.body).find(S3NS + "Contents").find(S3NS + "Key").text == "line\none"
    q = [("delimiter", "/")] + ([("list-type", "2")] if list_type == "2" else [])
    r = raw(server, "GET", f"/{bucket}", query=q)
    assert b"<Prefix>tab&#9;dir/</Prefix>" in r.body, r.body
    # with encoding-type=url they are percent-encoded, as before
    r = raw(server, "GET", f"/{bucket}", query=q + [("encoding-type", "url")])
    assert b"<Prefix>tab%09dir/</Prefix>" in r.body, r.body


def test_control_characters_in_version_listing(server, s3, bucket):
    s3.put_object(Bucket=bucket, Key="v\rkey", Body=b"x")
    r = raw(server, "GET", f"/{bucket}", query=[("versions", "")])
    assert r.status == 200 and b"<Key>v&#13;key</Key>" in r.body, r.body

"""Bucket versioning through boto3 (and one aws cli call), compared with what AWS S3
documents: Put/GetBucketVersioning, the Unversioned -> Enabled -> Suspended transitions and
their version lists (the "null" version), GET/HEAD/DELETE with versionId, delete markers
(404 + x-amz-delete-marker, 405 for the marker's own id, removing it restores the object),
ListObjectVersions (markers, pagination, delimiter, encoding-type), DeleteObjects with
versions, CopyObject / UploadPartCopy from a version, tagging of an old version, multipart
completion creating a version. Every version's data is read back and compared."""

import json
import os
import re
import shutil
import subprocess
import urllib.parse
import xml.etree.ElementTree as ET

import pytest
from botocore.exceptions import ClientError

from conftest import (ACCESS, REGION, S3NS, SECRET, err_code, parse_error, raw,
                      unique_bucket)

VID = re.compile(r"^[0-9a-f]{32}$")


def set_versioning(s3, bucket, status):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": status})


def versions_of(s3, bucket, **kw):
    """One ListObjectVersions page: the ordered (kind, key, version id, is latest) entries
    as the XML document has them (boto3 splits Version and DeleteMarker into two lists, so
    their interleaving is read from the body itself), and boto3's parsed reply."""
    captured = {}

    def grab(http_response, **_):
        captured["body"] = http_response.content

    ev = "after-call.s3.ListObjectVersions"
    s3.meta.events.register(ev, grab)
    try:
        r = s3.list_object_versions(Bucket=bucket, **kw)
    finally:
        s3.meta.events.unregister(ev, grab)
    seq = []
    root = ET.fromstring(captured["body"])
    url = root.findtext(S3NS + "EncodingType") == "url"  # boto3 asks for it by default
    for el in root:
        tag = el.tag.replace(S3NS, "")
        if tag in ("Version", "DeleteMarker"):
            key = el.find(S3NS + "Key").text
            seq.append(("V" if tag == "Version" else "D",
                        urllib.parse.unquote_plus(key) if url else key,
                        el.find(S3NS + "VersionId").text,
                        el.find(S3NS + "IsLatest").text == "true"))
    # the document and boto3's two lists agree
    parsed = [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
    parsed += [(d["Key"], d["VersionId"], d["IsLatest"]) for d in r.get("DeleteMarkers", [])]
    assert sorted(parsed) == sorted(e[1:] for e in seq)
    return seq, r


def body_of(s3, bucket, key, vid=None):
    kw = {"VersionId": vid} if vid else {}
    return s3.get_object(Bucket=bucket, Key=key, **kw)["Body"].read()


def vbucket(s3):
    name = unique_bucket("ver")
    s3.create_bucket(Bucket=name)
    return name


def purge(s3, name):
    """Removes every version and marker, then the bucket (bounded, best effort)."""
    try:
        for _ in range(50):
            r = s3.list_object_versions(Bucket=name, MaxKeys=1000)
            objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
                    for v in r.get("Versions", []) + r.get("DeleteMarkers", [])]
            if not objs:
                break
            s3.delete_objects(Bucket=name, Delete={"Objects": objs, "Quiet": True})
        for u in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=name, Key=u["Key"], UploadId=u["UploadId"])
        s3.delete_bucket(Bucket=name)
    except Exception:
        pass


@pytest.fixture
def vb(s3):
    """A bucket with versioning Enabled."""
    name = vbucket(s3)
    set_versioning(s3, name, "Enabled")
    yield name
    purge(s3, name)


@pytest.fixture
def ub(s3):
    """A bucket never versioned (yet)."""
    name = vbucket(s3)
    yield name
    purge(s3, name)


# --- Put/GetBucketVersioning --------------------------------------------------------------

def test_bucket_versioning_config(s3, server, ub):
    r = s3.get_bucket_versioning(Bucket=ub)
    assert "Status" not in r
    rr = raw(server, "GET", f"/{ub}", "versioning")
    assert rr.status == 200 and b"<VersioningConfiguration" in rr.body and b"Status" not in rr.body
    # never versioned + Suspended is allowed (AWS)
    set_versioning(s3, ub, "Suspended")
    assert s3.get_bucket_versioning(Bucket=ub)["Status"] == "Suspended"
    set_versioning(s3, ub, "Enabled")
    assert s3.get_bucket_versioning(Bucket=ub)["Status"] == "Enabled"
    set_versioning(s3, ub, "Suspended")
    assert s3.get_bucket_versioning(Bucket=ub)["Status"] == "Suspended"
    # MfaDelete Disabled is accepted and ignored; Enabled is not supported
    s3.put_bucket_versioning(Bucket=ub, VersioningConfiguration={"Status": "Enabled",
                                                                  "MFADelete": "Disabled"})
    assert s3.get_bucket_versioning(Bucket=ub)["Status"] == "Enabled"
    doc = ('<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
           '<Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>')
    r = raw(server, "PUT", f"/{ub}", "versioning", body=doc)
    assert r.status == 501 and parse_error(r.body)["Code"] == "NotImplemented"
    for bad in ("<VersioningConfiguration><Status>Bogus</Status></VersioningConfiguration>",
                "<VersioningConfiguration></VersioningConfiguration>",
                "<Versioning><Status>Enabled</Status></Versioning>",
                "<VersioningConfiguration><Status>Enabled</Status>",
                ""):
        r = raw(server, "PUT", f"/{ub}", "versioning", body=bad)
        assert (r.status, parse_error(r.body)["Code"]) == (400, "MalformedXML"), bad
    assert s3.get_bucket_versioning(Bucket=ub)["Status"] == "Enabled"
    for op in (lambda: s3.get_bucket_versioning(Bucket="no-such-bucket-v"),
               lambda: set_versioning(s3, "no-such-bucket-v", "Enabled")):
        with pytest.raises(ClientError) as ei:
            op()
        assert err_code(ei.value) == ("NoSuchBucket", 404)


# --- the transitions AWS documents ----------------------------------------------------------

def test_transitions_unversioned_enabled_suspended(s3, ub):
    k = "doc.txt"
    # Unversioned: no version id; the object is the "null" version
    r = s3.put_object(Bucket=ub, Key=k, Body=b"v0")
    assert "VersionId" not in r
    assert "VersionId" not in s3.head_object(Bucket=ub, Key=k)
    seq, _ = versions_of(s3, ub)
    assert seq == [("V", k, "null", True)]
    assert body_of(s3, ub, k, "null") == b"v0"

    # Enabled: each PUT makes a new version; the null version stays
    set_versioning(s3, ub, "Enabled")
    id1 = s3.put_object(Bucket=ub, Key=k, Body=b"v1")["VersionId"]
    id2 = s3.put_object(Bucket=ub, Key=k, Body=b"v2")["VersionId"]
    assert VID.match(id1) and VID.match(id2) and id1 != id2
    h = s3.head_object(Bucket=ub, Key=k)
    assert h["VersionId"] == id2 and h["ContentLength"] == 2
    seq, _ = versions_of(s3, ub)
    assert seq == [("V", k, id2, True), ("V", k, id1, False), ("V", k, "null", False)]
    for vid, data in ((id2, b"v2"), (id1, b"v1"), ("null", b"v0"), (None, b"v2")):
        assert body_of(s3, ub, k, vid) == data
    # markers inside one key's versions, the null version among them
    assert versions_of(s3, ub, KeyMarker=k, VersionIdMarker=id2)[0] == [
        ("V", k, id1, False), ("V", k, "null", False)]
    assert versions_of(s3, ub, KeyMarker=k, VersionIdMarker="null")[0] == []

    # Suspended: a PUT replaces the null version; versions with ids stay
    set_versioning(s3, ub, "Suspended")
    r = s3.put_object(Bucket=ub, Key=k, Body=b"v3")
    assert r["VersionId"] == "null"
    seq, _ = versions_of(s3, ub)
    assert seq == [("V", k, "null", True), ("V", k, id2, False), ("V", k, id1, False)]
    assert body_of(s3, ub, k, "null") == b"v3"
    assert body_of(s3, ub, k) == b"v3"
    assert body_of(s3, ub, k, id1) == b"v1"

    # Suspended: a DELETE adds a null delete marker (the null version v3 is gone)
    r = s3.delete_object(Bucket=ub, Key=k)
    assert r["DeleteMarker"] is True and r["VersionId"] == "null"
    seq, _ = versions_of(s3, ub)
    assert seq == [("D", k, "null", True), ("V", k, id2, False), ("V", k, id1, False)]
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=ub, Key=k)
    assert err_code(ei.value) == ("NoSuchKey", 404)

    # Enabled again: new versions on top of the null marker
    set_versioning(s3, ub, "Enabled")
    id4 = s3.put_object(Bucket=ub, Key=k, Body=b"v4")["VersionId"]
    seq, _ = versions_of(s3, ub)
    assert seq == [("V", k, id4, True), ("D", k, "null", False), ("V", k, id2, False),
                   ("V", k, id1, False)]
    assert [body_of(s3, ub, k, v) for v in (id4, id2, id1)] == [b"v4", b"v2", b"v1"]
    assert body_of(s3, ub, k) == b"v4"


def test_suspended_put_replaces_only_null(s3, vb):
    a1 = s3.put_object(Bucket=vb, Key="a", Body=b"1")["VersionId"]
    set_versioning(s3, vb, "Suspended")
    s3.put_object(Bucket=vb, Key="a", Body=b"n1")
    s3.put_object(Bucket=vb, Key="a", Body=b"n2")
    seq, _ = versions_of(s3, vb)
    assert seq == [("V", "a", "null", True), ("V", "a", a1, False)]
    assert body_of(s3, vb, "a") == b"n2" and body_of(s3, vb, "a", a1) == b"1"
    # deleting the null version by id promotes the newest remaining one
    r = s3.delete_object(Bucket=vb, Key="a", VersionId="null")
    assert r["VersionId"] == "null" and "DeleteMarker" not in r
    assert body_of(s3, vb, "a") == b"1"
    assert versions_of(s3, vb)[0] == [("V", "a", a1, True)]


# --- GET/HEAD/DELETE with versionId, delete markers -----------------------------------------

def test_version_id_errors(s3, server, vb):
    vid = s3.put_object(Bucket=vb, Key="k", Body=b"x")["VersionId"]
    unknown = "0" * 32
    for bad in ("nope", "ABCDEF" + "0" * 26, "0" * 31, ""):
        r = raw(server, "GET", f"/{vb}/k", [("versionId", bad)])
        err = parse_error(r.body)
        assert (r.status, err["Code"]) == (400, "InvalidArgument"), bad
        r = raw(server, "HEAD", f"/{vb}/k", [("versionId", bad)])
        assert r.status == 400
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=vb, Key="k", VersionId=unknown)
    assert err_code(ei.value) == ("NoSuchVersion", 404)
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=vb, Key="k", VersionId=unknown)
    assert err_code(ei.value)[1] == 404
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=vb, Key="other", VersionId=vid)
    assert err_code(ei.value) == ("NoSuchVersion", 404)
    # DELETE of an unknown version: 204, nothing changes (AWS)
    r = raw(server, "DELETE", f"/{vb}/k", [("versionId", unknown)])
    assert r.status == 204
    assert s3.delete_object(Bucket=vb, Key="nokey", VersionId=unknown)[
        "ResponseMetadata"]["HTTPStatusCode"] == 204
    r = raw(server, "DELETE", f"/{vb}/k", [("versionId", "junk")])
    assert (r.status, parse_error(r.body)["Code"]) == (400, "InvalidArgument")
    assert body_of(s3, vb, "k", vid) == b"x"
    h = s3.head_object(Bucket=vb, Key="k", VersionId=vid)
    assert h["VersionId"] == vid and h["ContentLength"] == 1


def test_delete_version_by_id(s3, vb):
    ids = [s3.put_object(Bucket=vb, Key="k", Body=f"d{i}".encode())["VersionId"] for i in range(3)]
    # a noncurrent version: only it goes
    r = s3.delete_object(Bucket=vb, Key="k", VersionId=ids[1])
    assert r["VersionId"] == ids[1] and r["ResponseMetadata"]["HTTPStatusCode"] == 204
    seq, _ = versions_of(s3, vb)
    assert seq == [("V", "k", ids[2], True), ("V", "k", ids[0], False)]
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=vb, Key="k", VersionId=ids[1])
    assert err_code(ei.value) == ("NoSuchVersion", 404)
    # the latest: the next newest becomes the latest
    s3.delete_object(Bucket=vb, Key="k", VersionId=ids[2])
    assert body_of(s3, vb, "k") == b"d0"
    assert s3.head_object(Bucket=vb, Key="k")["VersionId"] == ids[0]
    assert versions_of(s3, vb)[0] == [("V", "k", ids[0], True)]
    # the last one: the key is gone, no marker left behind
    s3.delete_object(Bucket=vb, Key="k", VersionId=ids[0])
    assert versions_of(s3, vb)[0] == []
    assert s3.list_objects_v2(Bucket=vb)["KeyCount"] == 0


def test_delete_marker_behaviour(s3, server, vb):
    v1 = s3.put_object(Bucket=vb, Key="m/obj", Body=b"payload-1")["VersionId"]
    s3.put_object(Bucket=vb, Key="m/keep", Body=b"k")
    r = s3.delete_object(Bucket=vb, Key="m/obj")
    assert r["DeleteMarker"] is True and VID.match(r["VersionId"])
    dm = r["VersionId"]
    # GET/HEAD of the key: 404 with x-amz-delete-marker and the marker's id
    for method in ("GET", "HEAD"):
        rr = raw(server, method, f"/{vb}/m/obj")
        assert rr.status == 404, method
        assert rr.headers.get("x-amz-delete-marker") == "true"
        assert rr.headers.get("x-amz-version-id") == dm
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=vb, Key="m/obj")
    assert err_code(ei.value) == ("NoSuchKey", 404)
    assert ei.value.response["ResponseMetadata"]["HTTPHeaders"]["x-amz-delete-marker"] == "true"
    # GET/HEAD of the marker's own id: 405 MethodNotAllowed with its headers
    for method in ("GET", "HEAD"):
        rr = raw(server, method, f"/{vb}/m/obj", [("versionId", dm)])
        assert rr.status == 405, method
        assert rr.headers.get("x-amz-delete-marker") == "true"
        assert rr.headers.get("x-amz-version-id") == dm
        assert rr.headers.get("Last-Modified")
        if method == "GET":
            assert parse_error(rr.body)["Code"] == "MethodNotAllowed"
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=vb, Key="m/obj", VersionId=dm)
    assert err_code(ei.value) == ("MethodNotAllowed", 405)
    # listings hide the key; the old version is still readable by id
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=vb).get("Contents", [])] == ["m/keep"]
    assert [o["Key"] for o in s3.list_objects(Bucket=vb).get("Contents", [])] == ["m/keep"]
    assert body_of(s3, vb, "m/obj", v1) == b"payload-1"
    # a second DELETE adds a second marker
    dm2 = s3.delete_object(Bucket=vb, Key="m/obj")["VersionId"]
    seq, _ = versions_of(s3, vb, Prefix="m/obj")
    assert seq == [("D", "m/obj", dm2, True), ("D", "m/obj", dm, False), ("V", "m/obj", v1, False)]
    # removing the markers restores the object
    for m in (dm2, dm):
        r = s3.delete_object(Bucket=vb, Key="m/obj", VersionId=m)
        assert r["DeleteMarker"] is True and r["VersionId"] == m
    assert body_of(s3, vb, "m/obj") == b"payload-1"
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket=vb)["Contents"]) == ["m/keep", "m/obj"]
    # a delete marker on a key that never existed is still a marker (AWS)
    r = s3.delete_object(Bucket=vb, Key="never")
    assert r["DeleteMarker"] is True
    assert versions_of(s3, vb, Prefix="never")[0] == [("D", "never", r["VersionId"], True)]


# --- ListObjectVersions -----------------------------------------------------------------------

def test_list_versions_pagination(s3, server, vb):
    expect = []
    data = {}
    for key in ("a", "b/1", "b/2", "c"):
        ids = []
        for i in range(3):
            body = f"{key}-{i}".encode() * (i + 1)
            vid = s3.put_object(Bucket=vb, Key=key, Body=body)["VersionId"]
            data[(key, vid)] = body
            ids.append(("V", key, vid))
        if key == "b/1":
            ids.append(("D", key, s3.delete_object(Bucket=vb, Key=key)["VersionId"]))
        ids.reverse()
        expect += [(k, key, vid, i == 0) for i, (k, _, vid) in enumerate(ids)]
    full, r = versions_of(s3, vb)
    assert full == expect and r["IsTruncated"] is False
    assert r["MaxKeys"] == 1000 and r["Name"] == vb
    for v in r["Versions"]:
        assert v["ETag"].strip('"') and v["Size"] == len(data[(v["Key"], v["VersionId"])])
        assert v["StorageClass"] == "STANDARD" and v["Owner"]["ID"]
    for d in r["DeleteMarkers"]:
        assert d["Owner"]["ID"] and "Size" not in d
    # every version's data read back
    for (key, vid), body in data.items():
        assert body_of(s3, vb, key, vid) == body
    # by hand, 2 at a time, through both markers
    got, kw, pages = [], {}, 0
    while pages < 50:
        page, r = versions_of(s3, vb, MaxKeys=2, **kw)
        pages += 1
        assert len(page) <= 2
        got += page
        if not r["IsTruncated"]:
            break
        assert r["NextKeyMarker"] == page[-1][1] and r["NextVersionIdMarker"] == page[-1][2]
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}
    assert got == expect and pages == (len(expect) + 1) // 2
    # boto3's paginator
    seen = []
    for p in s3.get_paginator("list_object_versions").paginate(Bucket=vb,
                                                              PaginationConfig={"PageSize": 3}):
        seen += [(v["Key"], v["VersionId"]) for v in p.get("Versions", []) + p.get("DeleteMarkers", [])]
    assert sorted(seen) == sorted((e[1], e[2]) for e in expect) and len(seen) == len(expect)
    # key-marker alone: keys strictly after it
    page, _ = versions_of(s3, vb, KeyMarker="b/2")
    assert page == [e for e in expect if e[1] > "b/2"]
    # prefix
    page, _ = versions_of(s3, vb, Prefix="b/")
    assert page == [e for e in expect if e[1].startswith("b/")]
    # parameter errors
    r = raw(server, "GET", f"/{vb}", [("versions", ""), ("version-id-marker", expect[0][2])])
    assert (r.status, parse_error(r.body)["Code"]) == (400, "InvalidArgument")
    r = raw(server, "GET", f"/{vb}", [("versions", ""), ("key-marker", "a"),
                                      ("version-id-marker", "zz")])
    assert (r.status, parse_error(r.body)["Code"]) == (400, "InvalidArgument")
    for mk in ("-1", "abc"):
        r = raw(server, "GET", f"/{vb}", [("versions", ""), ("max-keys", mk)])
        assert (r.status, parse_error(r.body)["Code"]) == (400, "InvalidArgument"), mk
    r = raw(server, "GET", f"/{vb}", [("versions", ""), ("max-keys", "5000")])
    assert r.status == 200 and b"<MaxKeys>1000</MaxKeys>" in r.body
    r = raw(server, "GET", f"/{vb}", [("versions", ""), ("encoding-type", "zip")])
    assert r.status == 400
    with pytest.raises(ClientError) as ei:
        s3.list_object_versions(Bucket="no-such-bucket-v")
    assert err_code(ei.value) == ("NoSuchBucket", 404)


def test_list_versions_delimiter_and_encoding(s3, server, vb):
    for key in ("dir/x", "dir/y", "dir/sub/z", "top", "sp ace+plus"):
        s3.put_object(Bucket=vb, Key=key, Body=b"1")
        s3.put_object(Bucket=vb, Key=key, Body=b"22")
    r = s3.list_object_versions(Bucket=vb, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dir/"]
    assert sorted({v["Key"] for v in r["Versions"]}) == ["sp ace+plus", "top"]
    assert len(r["Versions"]) == 4 and r["Delimiter"] == "/"
    r = s3.list_object_versions(Bucket=vb, Delimiter="/", Prefix="dir/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dir/sub/"]
    assert [v["Key"] for v in r["Versions"]] == ["dir/x", "dir/x", "dir/y", "dir/y"]
    # pagination across a common prefix: one entry per page
    entries, kw = [], {}
    for _ in range(20):
        r = s3.list_object_versions(Bucket=vb, Delimiter="/", MaxKeys=1, **kw)
        entries += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        entries += [(v["Key"], v["VersionId"]) for v in r.get("Versions", [])]
        if not r["IsTruncated"]:
            break
        kw = {"KeyMarker": r["NextKeyMarker"]}
        if r.get("NextVersionIdMarker"):
            kw["VersionIdMarker"] = r["NextVersionIdMarker"]
    assert entries[0] == "dir/" and len(entries) == 5
    assert [e[0] for e in entries[1:]] == ["sp ace+plus", "sp ace+plus", "top", "top"]
    # encoding-type=url asked for explicitly: boto3 hands the encoded keys through
    r = s3.list_object_versions(Bucket=vb, Prefix="sp", EncodingType="url")
    assert [v["Key"] for v in r["Versions"]] == ["sp%20ace%2Bplus"] * 2
    rr = raw(server, "GET", f"/{vb}", [("versions", ""), ("prefix", "sp")])
    assert rr.status == 200 and rr.body.count(b"<Key>sp ace+plus</Key>") == 2


# --- DeleteObjects with versions ----------------------------------------------------------------

def test_delete_objects_with_versions(s3, vb):
    a1 = s3.put_object(Bucket=vb, Key="a", Body=b"a1")["VersionId"]
    a2 = s3.put_object(Bucket=vb, Key="a", Body=b"a2")["VersionId"]
    b1 = s3.put_object(Bucket=vb, Key="b", Body=b"b1")["VersionId"]
    cm = s3.delete_object(Bucket=vb, Key="c")["VersionId"]
    r = s3.delete_objects(Bucket=vb, Delete={"Objects": [
        {"Key": "a", "VersionId": a1},          # a noncurrent version
        {"Key": "b"},                           # creates a marker
        {"Key": "c", "VersionId": cm},          # removes a marker
        {"Key": "a", "VersionId": "f" * 32},    # unknown: deleted (AWS)
        {"Key": "a", "VersionId": "bogus"},     # malformed
    ]})
    deleted = {(d["Key"], d.get("VersionId")): d for d in r["Deleted"]}
    assert set(deleted) == {("a", a1), ("b", None), ("c", cm), ("a", "f" * 32)}
    assert "DeleteMarker" not in deleted[("a", a1)]
    assert deleted[("b", None)]["DeleteMarker"] is True
    bm = deleted[("b", None)]["DeleteMarkerVersionId"]
    assert VID.match(bm)
    assert deleted[("c", cm)]["DeleteMarker"] is True
    assert deleted[("c", cm)]["DeleteMarkerVersionId"] == cm
    assert [(e["Key"], e["VersionId"], e["Code"]) for e in r["Errors"]] == [("a", "bogus", "NoSuchVersion")]
    seq, _ = versions_of(s3, vb)
    assert seq == [("V", "a", a2, True), ("D", "b", bm, True), ("V", "b", b1, False)]
    assert body_of(s3, vb, "a") == b"a2" and body_of(s3, vb, "b", b1) == b"b1"


# --- copies, tagging and multipart with versions ------------------------------------------------

def test_copy_from_version(s3, vb, ub):
    v1 = s3.put_object(Bucket=vb, Key="src", Body=b"first", Metadata={"n": "1"})["VersionId"]
    v2 = s3.put_object(Bucket=vb, Key="src", Body=b"second!")["VersionId"]
    r = s3.copy_object(Bucket=vb, Key="dst", CopySource={"Bucket": vb, "Key": "src", "VersionId": v1})
    assert r["CopySourceVersionId"] == v1 and VID.match(r["VersionId"])
    assert body_of(s3, vb, "dst") == b"first"
    assert s3.head_object(Bucket=vb, Key="dst")["Metadata"] == {"n": "1"}
    # restoring an old version onto its own key makes it the latest again (a new version)
    r = s3.copy_object(Bucket=vb, Key="src", CopySource={"Bucket": vb, "Key": "src", "VersionId": v1})
    v3 = r["VersionId"]
    assert v3 not in (v1, v2) and body_of(s3, vb, "src") == b"first"
    assert [e[2] for e in versions_of(s3, vb, Prefix="src")[0]] == [v3, v2, v1]
    # into an unversioned bucket: no version id for the copy
    r = s3.copy_object(Bucket=ub, Key="x", CopySource={"Bucket": vb, "Key": "src", "VersionId": v2})
    assert r["CopySourceVersionId"] == v2 and "VersionId" not in r
    assert body_of(s3, ub, "x") == b"second!"
    # errors: unknown version, malformed version, a delete marker's version
    dm = s3.delete_object(Bucket=vb, Key="src")["VersionId"]
    cases = [("0" * 32, ("NoSuchVersion", 404)), ("bad-id", ("InvalidArgument", 400)),
             (dm, ("InvalidRequest", 400))]
    for vid, want in cases:
        with pytest.raises(ClientError) as ei:
            s3.copy_object(Bucket=vb, Key="dst2", CopySource={"Bucket": vb, "Key": "src", "VersionId": vid})
        assert err_code(ei.value) == want, vid
    with pytest.raises(ClientError) as ei:  # latest is a marker
        s3.copy_object(Bucket=vb, Key="dst2", CopySource={"Bucket": vb, "Key": "src"})
    assert err_code(ei.value) == ("NoSuchKey", 404)


def test_tagging_old_version(s3, server, vb):
    v1 = s3.put_object(Bucket=vb, Key="t", Body=b"1", Tagging="a=1")["VersionId"]
    v2 = s3.put_object(Bucket=vb, Key="t", Body=b"2")["VersionId"]
    r = s3.put_object_tagging(Bucket=vb, Key="t", VersionId=v1,
                              Tagging={"TagSet": [{"Key": "old", "Value": "yes"}]})
    assert r["VersionId"] == v1
    r = s3.get_object_tagging(Bucket=vb, Key="t", VersionId=v1)
    assert r["VersionId"] == v1 and r["TagSet"] == [{"Key": "old", "Value": "yes"}]
    r = s3.get_object_tagging(Bucket=vb, Key="t")
    assert r["VersionId"] == v2 and r["TagSet"] == []
    assert s3.head_object(Bucket=vb, Key="t", VersionId=v1)["ResponseMetadata"][
        "HTTPHeaders"]["x-amz-tagging-count"] == "1"
    s3.put_object_tagging(Bucket=vb, Key="t", Tagging={"TagSet": [{"Key": "new", "Value": "1"}]})
    assert s3.get_object_tagging(Bucket=vb, Key="t", VersionId=v1)["TagSet"] == [{"Key": "old", "Value": "yes"}]
    r = s3.delete_object_tagging(Bucket=vb, Key="t", VersionId=v1)
    assert r["VersionId"] == v1
    assert s3.get_object_tagging(Bucket=vb, Key="t", VersionId=v1)["TagSet"] == []
    assert s3.get_object_tagging(Bucket=vb, Key="t", VersionId=v2)["TagSet"] == [{"Key": "new", "Value": "1"}]
    # the data of both versions is untouched
    assert body_of(s3, vb, "t", v1) == b"1" and body_of(s3, vb, "t") == b"2"
    with pytest.raises(ClientError) as ei:
        s3.get_object_tagging(Bucket=vb, Key="t", VersionId="0" * 32)
    assert err_code(ei.value) == ("NoSuchVersion", 404)
    with pytest.raises(ClientError) as ei:
        s3.put_object_tagging(Bucket=vb, Key="t", VersionId="0" * 32, Tagging={"TagSet": []})
    assert err_code(ei.value) == ("NoSuchVersion", 404)
    r = raw(server, "GET", f"/{vb}/t", [("tagging", ""), ("versionId", "nope")])
    assert (r.status, parse_error(r.body)["Code"]) == (400, "InvalidArgument")


def test_multipart_creates_version(s3, vb):
    v1 = s3.put_object(Bucket=vb, Key="mp", Body=b"small")["VersionId"]
    part1 = os.urandom(5 * 1024 * 1024)
    up = s3.create_multipart_upload(Bucket=vb, Key="mp")["UploadId"]
    e1 = s3.upload_part(Bucket=vb, Key="mp", UploadId=up, PartNumber=1, Body=part1)["ETag"]
    # a part copied from the older version of the key
    r = s3.upload_part_copy(Bucket=vb, Key="mp", UploadId=up, PartNumber=2,
                            CopySource={"Bucket": vb, "Key": "mp", "VersionId": v1})
    assert r["CopySourceVersionId"] == v1
    e2 = r["CopyPartResult"]["ETag"]
    r = s3.complete_multipart_upload(Bucket=vb, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    v2 = r["VersionId"]
    assert VID.match(v2) and v2 != v1
    assert body_of(s3, vb, "mp") == part1 + b"small"
    assert body_of(s3, vb, "mp", v2) == part1 + b"small"
    assert body_of(s3, vb, "mp", v1) == b"small"
    h = s3.head_object(Bucket=vb, Key="mp", VersionId=v2)
    assert h["VersionId"] == v2 and h["ETag"].endswith('-2"')
    seq, r = versions_of(s3, vb)
    assert seq == [("V", "mp", v2, True), ("V", "mp", v1, False)]
    assert r["Versions"][0]["Size"] == len(part1) + 5


def test_unversioned_bucket_unchanged(s3, server, ub):
    """A bucket never versioned: no version headers, DELETE removes, versionId=null works."""
    r = raw(server, "PUT", f"/{ub}/k", body=b"abc")
    assert r.status == 200 and r.headers.get("x-amz-version-id") is None
    r = raw(server, "GET", f"/{ub}/k")
    assert r.status == 200 and r.headers.get("x-amz-version-id") is None
    assert body_of(s3, ub, "k", "null") == b"abc"
    r = raw(server, "DELETE", f"/{ub}/k")
    assert r.status == 204 and r.headers.get("x-amz-delete-marker") is None
    assert s3.list_object_versions(Bucket=ub).get("Versions", []) == []
    s3.put_object(Bucket=ub, Key="k2", Body=b"z")
    s3.delete_object(Bucket=ub, Key="k2", VersionId="null")
    assert s3.list_objects_v2(Bucket=ub)["KeyCount"] == 0


# --- aws cli ---------------------------------------------------------------------------------

@pytest.mark.skipif(not (shutil.which("aws") or os.path.exists("/usr/bin/aws")), reason="no aws cli")
def test_aws_cli_list_object_versions(s3, server, vb, tmp_path):
    v1 = s3.put_object(Bucket=vb, Key="cli/a", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=vb, Key="cli/a", Body=b"2")["VersionId"]
    dm = s3.delete_object(Bucket=vb, Key="cli/a")["VersionId"]
    aws = "/usr/bin/aws" if os.path.exists("/usr/bin/aws") else shutil.which("aws")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "AWS_ACCESS_KEY_ID": ACCESS, "AWS_SECRET_ACCESS_KEY": SECRET,
           "AWS_DEFAULT_REGION": REGION, "AWS_PAGER": "", "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_CONFIG_FILE": str(tmp_path / "cfg"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "cred")}
    out = subprocess.run([aws, "--endpoint-url", server.endpoint, "s3api", "list-object-versions",
                          "--bucket", vb, "--prefix", "cli/", "--output", "json"],
                         env=env, capture_output=True, timeout=60, text=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [(v["Key"], v["VersionId"], v["IsLatest"]) for v in doc["Versions"]] == [
        ("cli/a", v2, False), ("cli/a", v1, False)]
    assert [(d["Key"], d["VersionId"], d["IsLatest"]) for d in doc["DeleteMarkers"]] == [
        ("cli/a", dm, True)]


def test_null_version_named_on_get_and_head(s3):
    """AWS names the null version on GET/HEAD once the bucket is (or was) versioned: an
    object written before versioning was enabled, and one written while suspended."""
    b = unique_bucket("nullvid")
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="old", Body=b"before")
    assert "VersionId" not in s3.head_object(Bucket=b, Key="old")
    set_versioning(s3, b, "Enabled")
    assert s3.head_object(Bucket=b, Key="old")["VersionId"] == "null"
    assert s3.get_object(Bucket=b, Key="old")["VersionId"] == "null"
    vid = s3.put_object(Bucket=b, Key="new", Body=b"x")["VersionId"]
    assert s3.head_object(Bucket=b, Key="new")["VersionId"] == vid != "null"
    set_versioning(s3, b, "Suspended")
    s3.put_object(Bucket=b, Key="sus", Body=b"y")
    assert s3.head_object(Bucket=b, Key="sus")["VersionId"] == "null"
    assert s3.get_object(Bucket=b, Key="sus", VersionId="null")["VersionId"] == "null"


def test_get_of_a_version_streams_to_its_end_across_its_deletion(s3, vb):
    """Deleting a noncurrent version while a GET of it streams: the GET returns it whole
    (the version's data folder outlives its readers, OBJ-6 in src/object/commit.c), and it
    is gone after."""
    old = os.urandom(40 * 1024 * 1024)  # 8 parts: more than socket buffers hold in flight
    up = s3.create_multipart_upload(Bucket=vb, Key="k")["UploadId"]
    parts = []
    for i in range(8):
        r = s3.upload_part(Bucket=vb, Key="k", UploadId=up, PartNumber=i + 1,
                           Body=old[i * 5 * 1024 * 1024:(i + 1) * 5 * 1024 * 1024])
        parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
    v1 = s3.complete_multipart_upload(Bucket=vb, Key="k", UploadId=up,
                                      MultipartUpload={"Parts": parts})["VersionId"]
    s3.put_object(Bucket=vb, Key="k", Body=b"v2")
    body = s3.get_object(Bucket=vb, Key="k", VersionId=v1)["Body"]
    got = body.read(64 * 1024)
    s3.delete_object(Bucket=vb, Key="k", VersionId=v1)
    got += body.read()
    body.close()
    assert got == old
    with pytest.raises(ClientError) as ei:
        s3.get_object(Bucket=vb, Key="k", VersionId=v1)
    assert err_code(ei.value) == ("NoSuchVersion", 404)
    assert s3.get_object(Bucket=vb, Key="k")["Body"].read() == b"v2"

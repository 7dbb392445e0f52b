"""ListObjects V1 and V2: prefix, delimiter, max-keys pagination that reproduces the full
sorted list, continuation tokens, marker, start-after, encoding-type=url with odd keys,
CommonPrefixes, fetch-owner, binary UTF-8 order, pagination stable while keys are added."""

import urllib.parse
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, raw, S3NS, md5_hex, unique_bucket

KEYS = [
    "a", "a/b", "a/c/d", "a/c/e", "a/c/", "a-b", "a.b", "a0", "ab", "b", "b/", "b/x", "b0", "B",
    "photos/2020/jan/1.jpg", "photos/2020/jan/2.jpg", "photos/2020/feb/1.jpg", "photos/2021/x.jpg",
    "photos/index.html", "z", "~tilde", "é", "ÿ", "\ufffd", "😀", "日本/語", "sp ace/k", "plus+/k",
    "pct%/k", "amp&/k", "lt<gt>/k", "x" * 200 + "/" + "y" * 250, "deep/" * 10 + "leaf",
]
SORTED = sorted(KEYS, key=lambda k: k.encode())


@pytest.fixture(scope="module")
def lb(server, s3):
    name = "listing-bucket"
    s3.create_bucket(Bucket=name)
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=name, Key=k, Body=k.encode()), KEYS))
    return name


def list_all_v2(s3, bucket, page, **kw):
    keys, prefixes, token, pages = [], [], None, 0
    for _ in range(2000):
        args = dict(Bucket=bucket, MaxKeys=page, **kw)
        if token:
            args["ContinuationToken"] = token
        r = s3.list_objects_v2(**args)
        pages += 1
        contents = [o["Key"] for o in r.get("Contents", [])]
        cps = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        assert len(contents) + len(cps) <= page
        assert r["KeyCount"] == len(contents) + len(cps)
        if token:
            assert r.get("ContinuationToken") == token
        keys += contents
        prefixes += cps
        if not r["IsTruncated"]:
            assert not r.get("NextContinuationToken")
            return keys, prefixes, pages
        assert r.get("NextContinuationToken")
        assert len(contents) + len(cps) > 0
        token = r["NextContinuationToken"]
    raise AssertionError("pagination did not end")


def list_all_v1(s3, bucket, page, **kw):
    keys, prefixes, marker = [], [], None
    for _ in range(2000):
        args = dict(Bucket=bucket, MaxKeys=page, **kw)
        if marker is not None:
            args["Marker"] = marker
        r = s3.list_objects(**args)
        contents = [o["Key"] for o in r.get("Contents", [])]
        cps = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        assert len(contents) + len(cps) <= page
        keys += contents
        prefixes += cps
        if not r["IsTruncated"]:
            return keys, prefixes
        if "Delimiter" in kw:
            assert r.get("NextMarker"), "NextMarker is required with a delimiter"
        marker = r.get("NextMarker") or (contents[-1] if contents else None)
        assert marker
    raise AssertionError("pagination did not end")


def expected(prefix="", delimiter=None, after=None):
    keys, cps = [], []
    for k in SORTED:
        if not k.startswith(prefix) or (after is not None and k.encode() <= after.encode()):
            continue
        if delimiter:
            i = k.find(delimiter, len(prefix))
            if i >= 0:
                cp = k[:i + len(delimiter)]
                if cp not in cps:
                    cps.append(cp)
                continue
        keys.append(k)
    return keys, cps


def test_full_list_binary_order(s3, lb):
    r = s3.list_objects_v2(Bucket=lb)
    assert [o["Key"] for o in r["Contents"]] == SORTED
    assert r["KeyCount"] == len(KEYS)
    assert r["IsTruncated"] is False
    r1 = s3.list_objects(Bucket=lb)
    assert [o["Key"] for o in r1["Contents"]] == SORTED


def test_entries_have_size_etag_date(s3, lb):
    r = s3.list_objects_v2(Bucket=lb)
    for o in r["Contents"]:
        assert o["Size"] == len(o["Key"].encode())
        assert o["ETag"] == f'"{md5_hex(o["Key"].encode())}"'
        assert o["LastModified"]
        assert o.get("StorageClass", "STANDARD") == "STANDARD"
        assert "Owner" not in o


def test_fetch_owner(s3, lb):
    r = s3.list_objects_v2(Bucket=lb, FetchOwner=True, MaxKeys=3)
    for o in r["Contents"]:
        assert o["Owner"].get("ID")
    r = s3.list_objects(Bucket=lb, MaxKeys=3)
    for o in r["Contents"]:
        assert o["Owner"].get("ID")


@pytest.mark.parametrize("page", [1, 2, 3, 7, 1000])
def test_v2_pagination(s3, lb, page):
    keys, cps, pages = list_all_v2(s3, lb, page)
    assert keys == SORTED and cps == []


@pytest.mark.parametrize("page", [1, 4, 1000])
def test_v1_pagination(s3, lb, page):
    keys, cps = list_all_v1(s3, lb, page)
    assert keys == SORTED and cps == []


@pytest.mark.parametrize("prefix", ["", "a", "a/", "a/c/", "b", "photos/2020/", "photos/2022", "é", "deep/deep/", "zz"])
def test_prefix(s3, lb, prefix):
    keys, cps, _ = list_all_v2(s3, lb, 1000, Prefix=prefix)
    assert (keys, cps) == expected(prefix)
    keys1, cps1 = list_all_v1(s3, lb, 1000, Prefix=prefix)
    assert (keys1, cps1) == expected(prefix)


@pytest.mark.parametrize("prefix", ["", "a/", "photos/", "photos/2020/", "b", "deep/", "nomatch/"])
@pytest.mark.parametrize("page", [1, 2, 1000])
def test_delimiter(s3, lb, prefix, page):
    want = expected(prefix, "/")
    keys, cps, _ = list_all_v2(s3, lb, page, Prefix=prefix, Delimiter="/")
    assert (keys, cps) == want
    keys1, cps1 = list_all_v1(s3, lb, page, Prefix=prefix, Delimiter="/")
    assert (keys1, cps1) == want


@pytest.mark.parametrize("delim", ["-", ".", "0", "c/", "/2020/"])
def test_other_delimiters(s3, lb, delim):
    keys, cps, _ = list_all_v2(s3, lb, 1000, Delimiter=delim)
    assert (keys, cps) == expected("", delim)
    keys, cps, _ = list_all_v2(s3, lb, 2, Delimiter=delim)
    assert (keys, cps) == expected("", delim)


def test_delimiter_response_fields(s3, lb):
    r = s3.list_objects_v2(Bucket=lb, Prefix="photos/", Delimiter="/")
    assert r["Prefix"] == "photos/"
    assert r["Delimiter"] == "/"
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["photos/2020/", "photos/2021/"]
    assert [o["Key"] for o in r["Contents"]] == ["photos/index.html"]
    assert r["KeyCount"] == 3


@pytest.mark.parametrize("after", ["", "a", "a/c/", "az", "b/", "photos/2020/jan/1.jpg", "é", "\uffff", "\U0010ffff"])
def test_start_after(s3, lb, after):
    keys, cps, _ = list_all_v2(s3, lb, 3, StartAfter=after)
    assert (keys, cps) == expected(after=after)
    r = s3.list_objects_v2(Bucket=lb, StartAfter=after, MaxKeys=1)
    assert r.get("StartAfter", "") == after


def test_start_after_with_delimiter(s3, lb):
    keys, cps, _ = list_all_v2(s3, lb, 2, StartAfter="a/b", Delimiter="/", Prefix="a/")
    assert keys == [] and cps == ["a/c/"]


def test_marker_v1(s3, lb):
    r = s3.list_objects(Bucket=lb, Marker="b0")
    assert [o["Key"] for o in r["Contents"]] == [k for k in SORTED if k.encode() > b"b0"]
    assert r["Marker"] == "b0"


def test_max_keys_zero(s3, lb):
    r = s3.list_objects_v2(Bucket=lb, MaxKeys=0)
    assert r.get("Contents") is None
    assert r["KeyCount"] == 0


def test_max_keys_invalid(server, lb):
    for q in (["list-type=2", "max-keys=-1"], ["max-keys=abc"]):
        r = raw(server, "GET", f"/{lb}", query="&".join(q))
        assert r.status == 400, (q, r)
        assert r.error().get("Code") == "InvalidArgument"


def test_invalid_continuation_token(server, lb):
    r = raw(server, "GET", f"/{lb}", query=[("list-type", "2"), ("continuation-token", "!!not-a-token!!")])
    assert r.status == 400, r
    assert r.error().get("Code") == "InvalidArgument"


def test_invalid_encoding_type(server, lb):
    r = raw(server, "GET", f"/{lb}", query=[("list-type", "2"), ("encoding-type", "base64")])
    assert r.status == 400, r
    assert r.error().get("Code") in ("InvalidArgument", "InvalidEncodingType")


def _xml_list(server, bucket, query):
    r = raw(server, "GET", f"/{bucket}", query=query)
    assert r.status == 200, r
    return r, ET.fromstring(r.body)


def test_encoding_type_url_v2(server, lb):
    odd = ["sp ace/k", "plus+/k", "pct%/k", "amp&/k", "lt<gt>/k", "é", "ÿ", "\ufffd", "😀", "日本/語"]
    r, root = _xml_list(server, lb, [("list-type", "2"), ("encoding-type", "url")])
    assert root.findtext(f"{S3NS}EncodingType") == "url"
    raw_keys = [c.findtext(f"{S3NS}Key") for c in root.findall(f"{S3NS}Contents")]
    for k in raw_keys:
        # only unreserved URL characters and escapes remain in an encoded key
        assert all(ch.isascii() and (ch.isalnum() or ch in "-_.~%/+*!'()") for ch in k), k
    decoded = [urllib.parse.unquote_plus(k) for k in raw_keys]
    assert decoded == SORTED
    for k in odd:
        assert k in decoded
    # with a delimiter the common prefixes are encoded too
    r, root = _xml_list(server, lb, [("list-type", "2"), ("encoding-type", "url"), ("delimiter", "/")])
    cps = [urllib.parse.unquote_plus(c.findtext(f"{S3NS}Prefix")) for c in root.findall(f"{S3NS}CommonPrefixes")]
    assert cps == expected("", "/")[1]


def test_encoding_type_url_prefix_echo(server, lb):
    r, root = _xml_list(server, lb, [("list-type", "2"), ("encoding-type", "url"), ("prefix", "sp ace/"),
                                     ("start-after", "sp ace/")])
    assert urllib.parse.unquote_plus(root.findtext(f"{S3NS}Prefix")) == "sp ace/"
    assert " " not in root.findtext(f"{S3NS}Prefix")
    assert [urllib.parse.unquote_plus(c.findtext(f"{S3NS}Key")) for c in root.findall(f"{S3NS}Contents")] == ["sp ace/k"]


def test_encoding_type_url_v1(server, lb):
    r, root = _xml_list(server, lb, [("encoding-type", "url"), ("delimiter", "/"), ("max-keys", "5")])
    assert root.findtext(f"{S3NS}IsTruncated") == "true"
    nm = root.findtext(f"{S3NS}NextMarker")
    assert nm
    keys = [urllib.parse.unquote_plus(c.findtext(f"{S3NS}Key")) for c in root.findall(f"{S3NS}Contents")]
    cps = [urllib.parse.unquote_plus(c.findtext(f"{S3NS}Prefix")) for c in root.findall(f"{S3NS}CommonPrefixes")]
    assert len(keys) + len(cps) == 5


def test_plain_xml_escapes_keys(server, lb):
    # without encoding-type, keys are XML-escaped text: the parser must give them back exactly
    r, root = _xml_list(server, lb, [("list-type", "2"), ("prefix", "lt<gt>")])
    assert [c.findtext(f"{S3NS}Key") for c in root.findall(f"{S3NS}Contents")] == ["lt<gt>/k"]


def test_empty_and_nomatch(s3, bucket):
    r = s3.list_objects_v2(Bucket=bucket)
    assert r["KeyCount"] == 0 and not r.get("Contents") and r["IsTruncated"] is False
    s3.put_object(Bucket=bucket, Key="k", Body=b"")
    r = s3.list_objects_v2(Bucket=bucket, Prefix="nomatch")
    assert r["KeyCount"] == 0 and not r.get("Contents")
    r = s3.list_objects(Bucket=bucket, Prefix="nomatch")
    assert not r.get("Contents")


def test_max_keys_capped_at_1000(s3, bucket):
    keys = [f"k{i:05d}" for i in range(1005)]
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=b""), keys))
    r = s3.list_objects_v2(Bucket=bucket, MaxKeys=5000)
    assert len(r["Contents"]) == 1000
    assert r["IsTruncated"] is True
    r2 = s3.list_objects_v2(Bucket=bucket, ContinuationToken=r["NextContinuationToken"])
    assert [o["Key"] for o in r["Contents"] + r2["Contents"]] == keys
    r = s3.list_objects(Bucket=bucket)
    assert len(r["Contents"]) == 1000 and r["IsTruncated"] is True


def test_pagination_stable_while_adding(s3, bucket):
    base = [f"s/{i:03d}" for i in range(0, 100, 2)]
    for k in base:
        s3.put_object(Bucket=bucket, Key=k, Body=b"")
    seen, token, added = [], None, []
    for n in range(200):
        args = dict(Bucket=bucket, MaxKeys=7)
        if token:
            args["ContinuationToken"] = token
        r = s3.list_objects_v2(**args)
        page = [o["Key"] for o in r.get("Contents", [])]
        seen += page
        # add keys before and after the current position
        for k in (f"s/{2 * n + 1:03d}", f"s/{99 - 2 * n:03d}", f"a{n:03d}"):
            if k not in added and k not in base:
                s3.put_object(Bucket=bucket, Key=k, Body=b"")
                added.append(k)
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert seen == sorted(seen), "pages out of order"
    assert len(seen) == len(set(seen)), "duplicate keys across pages"
    for k in base:
        assert k in seen, k


def test_list_missing_bucket_v1(s3):
    with pytest.raises(ClientError) as e:
        s3.list_objects(Bucket=unique_bucket("missing"))
    assert err_code(e.value) == ("NoSuchBucket", 404)

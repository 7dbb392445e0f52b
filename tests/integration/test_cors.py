"""Bucket CORS as AWS S3: Put/Get/DeleteBucketCors, the OPTIONS preflight (unauthenticated)
and the Access-Control-* headers of actual requests that carry an Origin."""
import pytest
from botocore.exceptions import ClientError

from conftest import err_code, raw

RULES = {"CORSRules": [
    {"ID": "app", "AllowedOrigins": ["https://app.example.com", "https://*.example.org"],
     "AllowedMethods": ["GET", "PUT", "POST"], "AllowedHeaders": ["content-type", "x-amz-*"],
     "ExposeHeaders": ["ETag", "x-amz-version-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET", "HEAD"]},
]}


def preflight(server, path, origin, method, headers=None):
    h = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        h["Access-Control-Request-Headers"] = headers
    return raw(server, "OPTIONS", path, headers=h, sign=False)


def test_config_round_trip_and_errors(s3, bucket):
    with pytest.raises(ClientError) as ei:
        s3.get_bucket_cors(Bucket=bucket)
    assert err_code(ei.value) == ("NoSuchCORSConfiguration", 404)
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=RULES)
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert got[0]["ID"] == "app" and got[0]["AllowedOrigins"] == RULES["CORSRules"][0]["AllowedOrigins"]
    assert got[0]["MaxAgeSeconds"] == 600 and got[1]["AllowedMethods"] == ["GET", "HEAD"]
    bad = [
        {"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]},
        {"CORSRules": [{"AllowedOrigins": ["https://*.*.x"], "AllowedMethods": ["GET"]}]},
        {"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}] * 101},
    ]
    for cfg in bad:
        with pytest.raises(ClientError) as ei:
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=cfg)
        assert err_code(ei.value) == ("InvalidRequest", 400), cfg
    s3.delete_bucket_cors(Bucket=bucket)
    with pytest.raises(ClientError) as ei:
        s3.get_bucket_cors(Bucket=bucket)
    assert err_code(ei.value) == ("NoSuchCORSConfiguration", 404)


def test_malformed_configurations(bucket, server):
    for body in [b"<CORSConfiguration/>",
                 b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>"
                 b"</CORSConfiguration>",
                 b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*"
                 b"</AllowedOrigin><Other/></CORSRule></CORSConfiguration>",
                 b"not xml"]:
        r = raw(server, "PUT", f"/{bucket}", query="cors", body=body)
        assert (r.status, r.error()["Code"]) == (400, "MalformedXML"), (body, r)


def test_preflight(s3, bucket, server):
    r = preflight(server, f"/{bucket}/k", "https://app.example.com", "PUT")
    assert (r.status, r.error()["Code"]) == (403, "AccessForbidden"), r   # no configuration
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=RULES)
    r = preflight(server, f"/{bucket}/some/key", "https://app.example.com", "PUT",
                  "Content-Type, X-Amz-Date")
    assert r.status == 200, r
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert r.headers["Access-Control-Allow-Credentials"] == "true"
    assert r.headers["Access-Control-Allow-Methods"] == "GET, PUT, POST"
    assert r.headers["Access-Control-Allow-Headers"] == "content-type, x-amz-date"
    assert r.headers["Access-Control-Max-Age"] == "600"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, x-amz-version-id"
    r = preflight(server, f"/{bucket}", "https://cdn.example.org", "POST")      # wildcard origin
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == "https://cdn.example.org"
    r = preflight(server, f"/{bucket}/k", "https://other.test", "GET")            # the "*" rule
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == "*", r
    assert r.headers.get("Access-Control-Allow-Credentials") is None
    for origin, method, hdrs in [("https://other.test", "PUT", None),                  # method
                                 ("https://app.example.com", "PUT", "authorization"),  # header
                                 ("https://evil.example.com.test", "DELETE", None)]:
        r = preflight(server, f"/{bucket}/k", origin, method, hdrs)
        assert (r.status, r.error()["Code"]) == (403, "AccessForbidden"), (origin, method, r)
    r = raw(server, "OPTIONS", f"/{bucket}/k", headers={"Access-Control-Request-Method": "GET"},
            sign=False)
    assert (r.status, r.error()["Code"]) == (400, "BadRequest"), r
    r = raw(server, "OPTIONS", f"/{bucket}/k", headers={"Origin": "https://app.example.com"}, sign=False)
    assert (r.status, r.error()["Code"]) == (403, "AccessForbidden"), r   # no method: as AWS
    r = preflight(server, "/no-such-bucket-cors/k", "https://app.example.com", "GET")
    assert (r.status, r.error()["Code"]) == (403, "AccessForbidden"), r   # as AWS
    assert r.error()["Message"].startswith("CORSResponse: This CORS request is not allowed.")
    r = preflight(server, f"/{bucket}/k", "https://app.example.com", "PUT", ",".join(["x-amz-a"] * 65))
    assert (r.status, r.error()["Code"]) == (403, "AccessForbidden"), r   # bounded work
    r = preflight(server, f"/{bucket}/k", "https://app.example.com", "PUT", ",".join(["x-amz-a"] * 64))
    assert r.status == 200, r


def test_actual_requests_carry_cors_headers(s3, bucket, server):
    s3.put_object(Bucket=bucket, Key="page.txt", Body=b"hello")
    r = raw(server, "GET", f"/{bucket}/page.txt", headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and r.body == b"hello"
    assert "Access-Control-Allow-Origin" not in r.headers          # no configuration yet
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=RULES)
    r = raw(server, "GET", f"/{bucket}/page.txt", headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and r.body == b"hello", r
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag, x-amz-version-id"
    assert r.headers["Access-Control-Max-Age"] == "600"
    assert "Origin" in r.headers["Vary"]
    assert r.headers["ETag"]  # the object's own headers are still there
    # HEAD is not in the first rule's methods: the second ("*", GET and HEAD) answers
    r = raw(server, "HEAD", f"/{bucket}/page.txt", headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == "*", r
    r = raw(server, "PUT", f"/{bucket}/up.txt", body=b"data", headers={"Origin": "https://app.example.com"})
    assert r.status == 200 and r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    r = raw(server, "DELETE", f"/{bucket}/up.txt", headers={"Origin": "https://app.example.com"})
    assert r.status == 204 and "Access-Control-Allow-Origin" not in r.headers  # DELETE not allowed
    r = raw(server, "GET", f"/{bucket}/missing", headers={"Origin": "https://x.test"})
    assert r.status == 404 and r.headers["Access-Control-Allow-Origin"] == "*"  # errors too
    r = raw(server, "GET", f"/{bucket}/page.txt")
    assert "Access-Control-Allow-Origin" not in r.headers          # no Origin, no CORS
    # an authentication failure carries them too, so the browser can read the error
    r = raw(server, "GET", f"/{bucket}/page.txt", headers={"Origin": "https://app.example.com"},
            secret="wrong-secret")
    assert r.status == 403 and r.error()["Code"] == "SignatureDoesNotMatch", r
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"

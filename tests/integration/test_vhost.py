"""Virtual-host-style addressing with --domain: boto3 with addressing_style=virtual talks to
bucket.localhost:PORT (resolved to 127.0.0.1 by patching getaddrinfo for *.localhost, so the
test does not depend on /etc/hosts), and raw requests with a Host header. Path style keeps
working beside it."""

import socket

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, make_client, raw, running_server

DOMAIN = "localhost"


@pytest.fixture(scope="module")
def vserver():
    with running_server(extra_args=["--domain", DOMAIN], name="vhost") as srv:
        yield srv


@pytest.fixture
def resolve_localhost(monkeypatch):
    real = socket.getaddrinfo

    def fake(host, *a, **kw):
        if isinstance(host, str) and (host == DOMAIN or host.endswith("." + DOMAIN)):
            host = "127.0.0.1"
        return real(host, *a, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


@pytest.fixture
def vclient(vserver, resolve_localhost):
    return make_client(vserver, s3={"addressing_style": "virtual"}, endpoint=f"http://{DOMAIN}:{vserver.port}")


def test_virtual_host_crud(vserver, vclient):
    vclient.create_bucket(Bucket="vbucket")
    vclient.put_object(Bucket="vbucket", Key="dir/key one", Body=b"virtual")
    assert vclient.get_object(Bucket="vbucket", Key="dir/key one")["Body"].read() == b"virtual"
    assert vclient.head_object(Bucket="vbucket", Key="dir/key one")["ContentLength"] == 7
    r = vclient.list_objects_v2(Bucket="vbucket", Prefix="dir/")
    assert [o["Key"] for o in r["Contents"]] == ["dir/key one"]
    assert "vbucket" in [b["Name"] for b in vclient.list_buckets()["Buckets"]]
    vclient.copy_object(Bucket="vbucket", Key="copy", CopySource={"Bucket": "vbucket", "Key": "dir/key one"})
    # path style on the same server sees the same objects
    p = make_client(vserver)
    assert p.get_object(Bucket="vbucket", Key="copy")["Body"].read() == b"virtual"
    vclient.delete_objects(Bucket="vbucket", Delete={"Objects": [{"Key": "copy"}, {"Key": "dir/key one"}]})
    vclient.delete_bucket(Bucket="vbucket")
    with pytest.raises(ClientError) as e:
        p.head_bucket(Bucket="vbucket")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_virtual_host_dotted_bucket(vserver, resolve_localhost):
    p = make_client(vserver)
    p.create_bucket(Bucket="dotted.bucket.name")
    p.put_object(Bucket="dotted.bucket.name", Key="k", Body=b"dots")
    host = f"dotted.bucket.name.{DOMAIN}:{vserver.port}"
    r = raw(vserver, "GET", "/k", host=host)
    assert r.status == 200 and r.body == b"dots", r
    p.delete_object(Bucket="dotted.bucket.name", Key="k")
    p.delete_bucket(Bucket="dotted.bucket.name")


def test_virtual_host_raw_host_header(vserver):
    p = make_client(vserver)
    p.create_bucket(Bucket="rawhost")
    host = f"rawhost.{DOMAIN}:{vserver.port}"
    r = raw(vserver, "PUT", "/obj", host=host, body=b"via host header")
    assert r.status == 200, r
    r = raw(vserver, "GET", "/obj", host=host)
    assert r.status == 200 and r.body == b"via host header", r
    # listing the bucket: GET / on the bucket host
    r = raw(vserver, "GET", "/", query="list-type=2", host=host)
    assert r.status == 200 and b"<Key>obj</Key>" in r.body, r
    # missing bucket through the host
    r = raw(vserver, "GET", "/obj", host=f"nosuchbucket.{DOMAIN}:{vserver.port}")
    assert r.status == 404 and r.error().get("Code") == "NoSuchBucket", r
    # the bare domain is the service (ListBuckets)
    r = raw(vserver, "GET", "/", host=f"{DOMAIN}:{vserver.port}")
    assert r.status == 200 and b"rawhost" in r.body, r
    # path style on 127.0.0.1 still works
    r = raw(vserver, "GET", "/rawhost/obj")
    assert r.status == 200 and r.body == b"via host header", r
    p.delete_object(Bucket="rawhost", Key="obj")
    p.delete_bucket(Bucket="rawhost")


def test_virtual_host_signature_mismatch_detected(vserver, resolve_localhost):
    bad = make_client(vserver, s3={"addressing_style": "virtual"}, endpoint=f"http://{DOMAIN}:{vserver.port}",
                      secret="wrong")
    with pytest.raises(ClientError) as e:
        bad.list_objects_v2(Bucket="anything")
    assert err_code(e.value) == ("SignatureDoesNotMatch", 403)


def test_virtual_host_presigned(vserver, vclient):
    import urllib.request
    vclient.create_bucket(Bucket="vpres")
    vclient.put_object(Bucket="vpres", Key="k", Body=b"presigned vhost")
    url = vclient.generate_presigned_url("get_object", Params={"Bucket": "vpres", "Key": "k"})
    assert url.startswith(f"http://vpres.{DOMAIN}:")
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"presigned vhost"
    vclient.delete_object(Bucket="vpres", Key="k")
    vclient.delete_bucket(Bucket="vpres")


def test_sigv2_virtual_host(vserver, resolve_localhost):
    import botocore.auth
    if "s3" not in botocore.auth.AUTH_TYPE_MAPS:
        pytest.skip("this botocore has no SigV2 ('s3') signer")
    c = make_client(vserver, signature_version="s3", s3={"addressing_style": "virtual"},
                    endpoint=f"http://{DOMAIN}:{vserver.port}")
    p = make_client(vserver)
    p.create_bucket(Bucket="vtwo")
    c.put_object(Bucket="vtwo", Key="dir/v2 key", Body=b"sigv2 vhost", Metadata={"m": "1"})
    assert c.get_object(Bucket="vtwo", Key="dir/v2 key")["Body"].read() == b"sigv2 vhost"
    c.head_bucket(Bucket="vtwo")
    assert [o["Key"] for o in c.list_objects(Bucket="vtwo", Prefix="dir/")["Contents"]] == ["dir/v2 key"]
    # (ListObjectsV2 is not checked with SigV2: botocore signs its resource as
    # "/vtwo?list-type=2", which neither AWS's rule nor MinIO's accepts.)
    c.delete_object(Bucket="vtwo", Key="dir/v2 key")
    c.delete_bucket(Bucket="vtwo")

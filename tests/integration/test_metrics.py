"""Prometheus metrics at /minio/v2/metrics/cluster and /node (DESIGN.md §1, MinIO's paths and
names): the bearer token as MinIO's `mc admin prometheus generate` makes it (made here
independently with hmac/hashlib, and by `cairn admin prometheus generate`), every way of
getting it wrong refused 403, CAIRN_PROMETHEUS_AUTH_TYPE=public, the text format, request
counters that follow the requests made, and drive gauges that follow a drive removed."""

import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import ACCESS, SECRET, CAIRN_BIN, http_get, make_client, unique_bucket, parse_error


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def token(sub=ACCESS, secret=SECRET, exp=None, alg="HS512"):
    exp = int(time.time()) + 3600 if exp is None else exp
    h = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    p = b64url(json.dumps({"exp": exp, "sub": sub, "iss": "prometheus"}).encode())
    sig = hmac.new(secret.encode(), f"{h}.{p}".encode(), hashlib.sha512).digest()
    return f"{h}.{p}.{b64url(sig)}"


def scrape(srv, what="cluster", tok=None, headers=None):
    h = dict(headers or {})
    if tok:
        h["Authorization"] = "Bearer " + tok
    return http_get(f"{srv.endpoint}/minio/v2/metrics/{what}", headers=h)


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$')


def parse(text):
    """{(name, labels): value}; every line is a comment or a well-formed sample, every
    sample's metric has HELP and TYPE lines before it."""
    out, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        m = SAMPLE.match(line)
        assert m, line
        assert m.group(1) in typed, line
        out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def value(samples, name, **labels):
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return samples.get((name, "{" + want + "}" if want else ""), 0.0)


def test_token_required_and_checked(server):
    st, _, body = scrape(server)
    assert st == 403 and parse_error(body)["Code"] == "AccessDenied"
    for bad in (token(secret="wrong-secret"), token(sub="nobody"), token(exp=int(time.time()) - 10),
                token(alg="HS256"), "not-a-token", token()[:-2]):
        st, _, body = scrape(server, tok=bad)
        assert st == 403, bad
        assert parse_error(body)["Code"] == "AccessDenied"
    st, _, _ = scrape(server, headers={"Authorization": "Basic Zm9vOmJhcg=="})
    assert st == 403
    st, hdrs, body = scrape(server, tok=token())
    assert st == 200
    assert hdrs["Content-Type"].startswith("text/plain; version=0.0.4")
    parse(body.decode())
    st, _, body = scrape(server, "bucket", tok=token())
    assert st == 404


def test_cli_generated_config_is_accepted(server):
    env = dict(os.environ, CAIRN_ROOT_USER=ACCESS, CAIRN_ROOT_PASSWORD=SECRET)
    for node in (False, True):
        args = [CAIRN_BIN, "admin", "prometheus", "generate", "--host", f"127.0.0.1:{server.port}"]
        p = subprocess.run(args + (["--node"] if node else []), capture_output=True, text=True,
                           env=env, timeout=30)
        assert p.returncode == 0, p.stderr
        tok = re.search(r"bearer_token: (\S+)", p.stdout).group(1)
        path = re.search(r"metrics_path: (\S+)", p.stdout).group(1)
        assert path == "/minio/v2/metrics/" + ("node" if node else "cluster")
        assert f"'127.0.0.1:{server.port}'" in p.stdout
        st, _, body = http_get(server.endpoint + path, headers={"Authorization": "Bearer " + tok})
        assert st == 200, body[:300]
    p = subprocess.run([CAIRN_BIN, "admin", "prometheus"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "usage" in p.stderr


def test_request_counters_follow_requests(server, s3):
    before = parse(scrape(server, tok=token())[2].decode())
    b = unique_bucket("metrics")
    s3.create_bucket(Bucket=b)
    body = os.urandom(10000)
    for i in range(5):
        s3.put_object(Bucket=b, Key=f"k{i}", Body=body)
    for i in range(3):
        assert s3.get_object(Bucket=b, Key=f"k{i}")["Body"].read() == body
    for i in range(2):
        with pytest.raises(Exception):
            s3.get_object(Bucket=b, Key="missing")
    s3.head_object(Bucket=b, Key="k0")
    bad = make_client(server, secret="not-the-secret")
    with pytest.raises(Exception):
        bad.list_buckets()
    after = parse(scrape(server, tok=token())[2].decode())

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("minio_s3_requests_total", api="putbucket") == 1
    assert delta("minio_s3_requests_total", api="putobject") == 5
    assert delta("minio_s3_requests_total", api="getobject") == 5
    assert delta("minio_s3_requests_total", api="headobject") == 1
    assert delta("minio_s3_requests_4xx_errors_total", api="getobject") == 2
    assert delta("minio_s3_requests_errors_total", api="getobject") == 2
    assert delta("minio_s3_requests_rejected_auth_total") == 1
    assert delta("minio_s3_traffic_received_bytes") >= 5 * len(body)
    assert delta("minio_s3_traffic_sent_bytes") >= 3 * len(body)
    assert value(after, "minio_s3_requests_inflight_total") == 0
    # time to first byte: every answered request in one bucket, cumulative over the bounds
    les = ["0.001", "0.005", "0.010", "0.025", "0.050", "0.100", "0.250", "0.500", "1.000", "2.500", "5.000",
           "10.000", "+Inf"]  # MinIO's "%.3f"
    ttfb = "minio_s3_requests_ttfb_seconds_distribution"
    for api, n in (("getobject", 5), ("putobject", 5), ("headobject", 1)):
        assert delta(ttfb, api=api, le="+Inf") == n, api
        assert delta(ttfb, api=api, le="10.000") == n, api  # none took 10 s here
        cum = [value(after, ttfb, api=api, le=le) for le in les]
        assert cum == sorted(cum) and cum[-1] == value(after, "minio_s3_requests_total", api=api), (api, cum)
    for i in range(5):
        s3.delete_object(Bucket=b, Key=f"k{i}")
    s3.delete_bucket(Bucket=b)


def test_node_metrics(server):
    m = parse(scrape(server, "node", tok=token())[2].decode())
    names = {n for n, _ in m}
    for n in ("minio_node_drive_total_bytes", "minio_node_drive_free_bytes", "minio_node_drive_used_bytes",
              "minio_node_process_resident_memory_bytes", "minio_node_process_cpu_total_seconds",
              "minio_node_file_descriptor_open_total", "minio_node_process_uptime_seconds",
              "minio_node_process_starttime_seconds"):
        assert n in names, n
    assert m[("minio_node_process_resident_memory_bytes", "")] > 1 << 20
    assert abs(m[("minio_node_process_starttime_seconds", "")] +
               m[("minio_node_process_uptime_seconds", "")] - time.time()) < 60
    for (n, labels), v in m.items():
        if n == "minio_node_drive_total_bytes":
            assert v > 0 and 'drive="' in labels


def test_public_mode_and_drive_gauges(drive_server, tmp_path):
    srv = drive_server([str(tmp_path / "d{1...4}")], env={"CAIRN_PROMETHEUS_AUTH_TYPE": "public"})
    st, _, body = scrape(srv)
    assert st == 200
    m = parse(body.decode())
    assert m[("minio_cluster_drive_total", "")] == 4
    assert m[("minio_cluster_drive_online_total", "")] == 4
    assert m[("minio_cluster_drive_offline_total", "")] == 0
    assert m[("cairn_cluster_parity_standard", "")] == 2
    raw = m[("minio_cluster_capacity_raw_total_bytes", "")]
    assert raw > 0 and m[("minio_cluster_capacity_usable_total_bytes", "")] == pytest.approx(raw / 2)
    shutil.rmtree(tmp_path / "d3")
    deadline = time.time() + 20
    while time.time() < deadline:
        m = parse(scrape(srv)[2].decode())
        if m[("minio_cluster_drive_offline_total", "")] == 1:
            break
        time.sleep(0.5)
    assert m[("minio_cluster_drive_offline_total", "")] == 1
    assert m[("minio_cluster_drive_online_total", "")] == 3
    node = parse(scrape(srv, "node")[2].decode())
    gone = [v for (n, labels), v in node.items()
            if n == "cairn_node_drive_online" and f'drive="{tmp_path / "d3"}"' in labels]
    assert gone == [0.0]
    events = {labels.split('drive="')[1].split('"')[0]: v for (n, labels), v in node.items()
              if n == "cairn_node_drive_offline_events_total"}
    assert len(events) == 4 and events[str(tmp_path / "d3")] >= 1
    assert all(v == 0 for d, v in events.items() if d != str(tmp_path / "d3")), events


def test_serving_gauges(drive_server, tmp_path):
    """The loop's figures: workers started and the most the pool may grow to (twice
    --workers), the scrape's own worker busy and its connection open, nothing waiting.
    (test_erasure.py::test_hung_workers_are_replaced checks them growing.)"""
    srv = drive_server([str(tmp_path / "d1")], env={"CAIRN_PROMETHEUS_AUTH_TYPE": "public"},
                       extra_args=("--workers", "6", "--loops", "1"))
    m = parse(scrape(srv, "node")[2].decode())
    assert m[("cairn_node_workers", "")] == 6
    assert m[("cairn_node_workers_max", "")] == 12
    assert m[("cairn_node_workers_busy", "")] >= 1  # this scrape
    assert m[("cairn_node_connections_open", "")] >= 1
    assert m[("minio_s3_requests_waiting_total", "")] == 0
    c = parse(scrape(srv, "cluster")[2].decode())  # with the other S3 figures, as MinIO's
    assert c[("minio_s3_requests_waiting_total", "")] == 0 and ("cairn_node_workers", "") not in c


def test_bad_auth_type_refused_at_start(tmp_path):
    env = dict(os.environ, CAIRN_PROMETHEUS_AUTH_TYPE="none")
    p = subprocess.run([CAIRN_BIN, "server", str(tmp_path / "d"), "--address", "127.0.0.1:1"],
                       capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode == 2
    assert "CAIRN_PROMETHEUS_AUTH_TYPE" in p.stderr
    assert not (tmp_path / "d").exists()  # refused before touching the drive

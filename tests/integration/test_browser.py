"""A real browser against cairn: headless Chromium loads a page from another origin
(a Python HTTP server on 127.0.0.1) whose script, as a web application's would, PUTs
through a presigned URL (a CORS preflight first), GETs the object back reading a header the
bucket's CORS rules expose, uploads a file with a POST policy form (fetch + FormData), and
tries a bucket without CORS rules, which the browser must block. What the page saw is read
from its DOM; what the server stored is read back with boto3."""
import functools
import http.server
import json
import shutil
import subprocess
import tempfile
import threading

import pytest

from conftest import free_port

CHROMIUM = shutil.which("chromium")

PAGE = """<!doctype html><html><body><pre id=out>running</pre><script>
const out = [];
(async () => {
  try {
    const p = await fetch(%(put)s, {method: 'PUT', headers: {'Content-Type': 'text/plain'},
                                    body: 'hello from the browser'});
    out.push('PUT ' + p.status + ' etag=' + p.headers.get('ETag'));
    const g = await fetch(%(get)s);
    out.push('GET ' + g.status + ' body=' + (await g.text()) + ' etag=' + g.headers.get('ETag'));
    const fd = new FormData();
    for (const [k, v] of Object.entries(%(fields)s)) fd.append(k, v);
    fd.append('file', new Blob(['posted by a form']), 'note.txt');
    const f = await fetch(%(post)s, {method: 'POST', body: fd});
    out.push('POST ' + f.status + ' etag=' + f.headers.get('ETag'));
  } catch (e) { out.push('ERROR ' + e); }
  try { await fetch(%(closed)s, {method: 'PUT', body: 'x'}); out.push('CLOSED allowed'); }
  catch (e) { out.push('CLOSED blocked ' + e.name); }
  document.getElementById('out').textContent = out.join('|');
})();
</script></body></html>"""


def test_browser_cross_origin_uploads_and_reads(s3, bucket, server):
    if not CHROMIUM:
        pytest.fail("chromium is not installed (scripts/deps.sh check installs it)")
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [{
        "AllowedOrigins": [origin], "AllowedMethods": ["GET", "PUT", "POST"],
        "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"]}]})
    closed = bucket + "-closed"
    s3.create_bucket(Bucket=closed)
    post = s3.generate_presigned_post(bucket, "form/${filename}",
                                      Conditions=[["starts-with", "$key", "form/"]])
    page = PAGE % {
        "put": json.dumps(s3.generate_presigned_url("put_object", Params={
            "Bucket": bucket, "Key": "from-browser.txt", "ContentType": "text/plain"})),
        "get": json.dumps(s3.generate_presigned_url("get_object", Params={
            "Bucket": bucket, "Key": "from-browser.txt"})),
        "closed": json.dumps(s3.generate_presigned_url("put_object", Params={"Bucket": closed, "Key": "x"})),
        "fields": json.dumps(post["fields"]), "post": json.dumps(post["url"])}
    www = tempfile.mkdtemp(prefix="cairn-browser-")
    with open(f"{www}/page.html", "w") as fh:
        fh.write(page)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass
    web = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Quiet, directory=www))
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                            f"--user-data-dir={www}/profile", "--virtual-time-budget=10000",
                            "--dump-dom", f"{origin}/page.html"],
                           capture_output=True, text=True, timeout=90)
    finally:
        web.shutdown()
        shutil.rmtree(www, ignore_errors=True)
    dom = r.stdout
    seen = dom[dom.find("<pre"):dom.find("</pre>")]
    etag = s3.head_object(Bucket=bucket, Key="from-browser.txt")["ETag"]
    assert f"PUT 200 etag={etag}" in seen, (seen, r.stderr[-2000:])
    assert f"GET 200 body=hello from the browser etag={etag}" in seen, seen
    assert "POST 204 etag=" in seen, seen
    assert "CLOSED blocked TypeError" in seen, seen
    assert s3.get_object(Bucket=bucket, Key="form/note.txt")["Body"].read() == b"posted by a form"
    with pytest.raises(Exception):
        s3.head_object(Bucket=closed, Key="x")
    s3.delete_bucket(Bucket=closed)

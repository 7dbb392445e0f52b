#!/usr/bin/python3
"""split-reads.py: reads across commits (quorum.c E13). Starts BIN on a fresh folder of drives
(DRIVES_PATTERN, e.g. "d{1...16}") on 127.0.0.1:9431, then 6 writers overwrite (and, with
DELETE_SHARE > 0, delete) two keys while 6 readers GET them for SECONDS seconds, and prints
the GETs and how many were answered 503 (a read that found the drives split between
versions and gave up).
usage: /usr/bin/python3 scripts/experiments/split-reads.py BIN DRIVES_PATTERN SECONDS [DELETE_SHARE]"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import boto3  # Debian: python3-boto3
from botocore.config import Config
from botocore.exceptions import ClientError

PORT = 9431


def client():
    return boto3.client("s3", endpoint_url=f"http://127.0.0.1:{PORT}", aws_access_key_id="cadmin",
                        aws_secret_access_key="cadminsecret", region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}))


def run(secs, dshare):
    keys = ["k0", "k1"]
    c = client()
    c.create_bucket(Bucket="bkt")
    for k in keys:
        c.put_object(Bucket="bkt", Key=k, Body=b"x" * 1000)
    stats = {"get": 0, "503": 0, "other": 0, "writes": 0}
    lock = threading.Lock()
    end = time.time() + secs

    def writer(i):
        cl, rnd = client(), random.Random(i)
        while time.time() < end:
            k = rnd.choice(keys)
            try:
                if rnd.random() < dshare:
                    cl.delete_object(Bucket="bkt", Key=k)
                else:
                    cl.put_object(Bucket="bkt", Key=k, Body=rnd.randbytes(rnd.choice([1000, 50000])))
                with lock:
                    stats["writes"] += 1
            except ClientError:
                with lock:
                    stats["other"] += 1

    def reader(i):
        cl, rnd = client(), random.Random(100 + i)
        while time.time() < end:
            try:
                cl.get_object(Bucket="bkt", Key=rnd.choice(keys))["Body"].read()
                with lock:
                    stats["get"] += 1
            except ClientError as e:
                st = e.response["ResponseMetadata"]["HTTPStatusCode"]
                with lock:
                    stats["get"] += 1
                    if st == 503:
                        stats["503"] += 1
                    elif st != 404:
                        stats["other"] += 1

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    ts += [threading.Thread(target=reader, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return stats


def main():
    binp, pattern, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    dshare = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    root = tempfile.mkdtemp(prefix="split-reads-")
    env = dict(os.environ, CAIRN_ROOT_USER="cadmin", CAIRN_ROOT_PASSWORD="cadminsecret")
    srv = subprocess.Popen([binp, "server", os.path.join(root, pattern), "--address",
                            f"127.0.0.1:{PORT}", "--quiet"], env=env,
                           stderr=open(os.path.join(root, "log"), "w"))
    try:
        for _ in range(100):
            try:
                client().list_buckets()
                break
            except Exception:
                time.sleep(0.1)
        print(binp, pattern, f"delete share {dshare}", run(secs, dshare))
    finally:
        srv.kill()
        srv.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

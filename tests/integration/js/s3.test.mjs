// cairn driven by @aws-sdk/client-s3 v3 with its DEFAULT settings (flexible checksums: CRC32
// computed and sent, in aws-chunked bodies with trailers for streams) except forcePathStyle.
// Starts its own server (server.mjs: CAIRN_BIN, default build/cairn, on 127.0.0.1 with a
// random port and a fresh folder) and stops it at the end. Run: node --test (from this folder).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { writeFileSync, createReadStream } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import {
  S3Client, CreateBucketCommand, HeadBucketCommand, ListBucketsCommand, DeleteBucketCommand,
  PutObjectCommand, GetObjectCommand, HeadObjectCommand, DeleteObjectCommand, DeleteObjectsCommand,
  CopyObjectCommand, ListObjectsV2Command, ListObjectsCommand, GetBucketLocationCommand,
} from "@aws-sdk/client-s3";
import { startCairn, withLogTail, ACCESS, SECRET } from "./server.mjs";

const MiB = 1024 * 1024;

let srv, s3;
const B = "js-bucket";

const md5 = (buf) => createHash("md5").update(buf).digest("hex");

before(async () => {
  srv = await startCairn();
  s3 = new S3Client({
    endpoint: `http://127.0.0.1:${srv.port}`,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS, secretAccessKey: SECRET },
    maxAttempts: 1,
  });
  await s3.send(new CreateBucketCommand({ Bucket: B }));
});

after(async () => {
  if (s3) s3.destroy();
  if (srv) await srv.stop();
});

const dumpLogOnFailure = (fn) => withLogTail(() => srv, fn);

async function body(resp) {
  return Buffer.from(await resp.Body.transformToByteArray());
}

test("buckets: head, list, location, errors", dumpLogOnFailure(async () => {
  await s3.send(new HeadBucketCommand({ Bucket: B }));
  const l = await s3.send(new ListBucketsCommand({}));
  assert.ok(l.Buckets.some((b) => b.Name === B));
  await s3.send(new GetBucketLocationCommand({ Bucket: B }));
  // us-east-1: creating a bucket one already owns succeeds (AWS's legacy answer there).
  await s3.send(new CreateBucketCommand({ Bucket: B }));
  await assert.rejects(s3.send(new HeadBucketCommand({ Bucket: "js-no-such-bucket" })), (e) => e.$metadata.httpStatusCode === 404);
}));

test("put string, get, head with metadata", dumpLogOnFailure(async () => {
  const text = "hello from the AWS SDK for JavaScript v3 — ünïcödé";
  const r = await s3.send(new PutObjectCommand({
    Bucket: B, Key: "str.txt", Body: text, ContentType: "text/plain; charset=utf-8", Metadata: { who: "js" },
  }));
  assert.equal(r.ETag, `"${md5(Buffer.from(text))}"`);
  const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "str.txt" }));
  assert.equal(await g.Body.transformToString(), text);
  assert.equal(g.ContentType, "text/plain; charset=utf-8");
  assert.deepEqual(g.Metadata, { who: "js" });
  const h = await s3.send(new HeadObjectCommand({ Bucket: B, Key: "str.txt" }));
  assert.equal(h.ContentLength, Buffer.byteLength(text));
}));

test("put Buffer (sizes around internal limits)", dumpLogOnFailure(async () => {
  for (const size of [0, 1, 128 * 1024 + 1, MiB + 1, 5 * MiB]) {
    const buf = randomBytes(size);
    const key = `buf-${size}`;
    const r = await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: buf }));
    assert.equal(r.ETag, `"${md5(buf)}"`, key);
    const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: key }));
    assert.equal(md5(await body(g)), md5(buf), key);
  }
}));

test("put a 10 MiB file stream (default checksum, aws-chunked)", dumpLogOnFailure(async () => {
  const buf = randomBytes(10 * MiB);
  const file = join(srv.root, "ten.bin");
  writeFileSync(file, buf);
  const r = await s3.send(new PutObjectCommand({ Bucket: B, Key: "stream/file-10m", Body: createReadStream(file) }));
  assert.equal(r.ETag, `"${md5(buf)}"`);
  const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "stream/file-10m", ChecksumMode: "ENABLED" }));
  assert.equal(md5(await body(g)), md5(buf));
  assert.equal(g.ContentLength, 10 * MiB);
}));

test("put a 10 MiB generic Readable with ContentLength", dumpLogOnFailure(async () => {
  const chunks = Array.from({ length: 10 }, () => randomBytes(MiB));
  const whole = Buffer.concat(chunks);
  const stream = Readable.from(chunks);
  const r = await s3.send(new PutObjectCommand({ Bucket: B, Key: "stream/readable-10m", Body: stream, ContentLength: whole.length }));
  assert.equal(r.ETag, `"${md5(whole)}"`);
  const h = await s3.send(new HeadObjectCommand({ Bucket: B, Key: "stream/readable-10m" }));
  assert.equal(h.ContentLength, whole.length);
}));

test("checksums: CRC32 (default), CRC32C, SHA1, SHA256 stored and validated on GET", dumpLogOnFailure(async () => {
  const buf = randomBytes(300 * 1024);
  for (const algo of [undefined, "CRC32", "CRC32C", "SHA1", "SHA256"]) {
    const key = `ck-${algo || "default"}`;
    const p = await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: buf, ChecksumAlgorithm: algo }));
    const field = `Checksum${algo || "CRC32"}`;
    assert.ok(p[field], `${key}: PutObject response lacks ${field}`);
    const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: key, ChecksumMode: "ENABLED" }));
    assert.equal(g[field], p[field], `${key}: stored checksum`);
    assert.equal(md5(await body(g)), md5(buf)); // the SDK validates the checksum while reading
    const h = await s3.send(new HeadObjectCommand({ Bucket: B, Key: key, ChecksumMode: "ENABLED" }));
    assert.equal(h[field], p[field]);
  }
}));

test("range GET", dumpLogOnFailure(async () => {
  const buf = randomBytes(100000);
  await s3.send(new PutObjectCommand({ Bucket: B, Key: "range", Body: buf }));
  const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "range", Range: "bytes=1000-1999" }));
  assert.equal(g.ContentRange, "bytes 1000-1999/100000");
  assert.deepEqual(await body(g), buf.subarray(1000, 2000));
  await assert.rejects(s3.send(new GetObjectCommand({ Bucket: B, Key: "range", Range: "bytes=100000-" })),
    (e) => e.name === "InvalidRange" && e.$metadata.httpStatusCode === 416);
}));

test("list v2 and v1 with prefix, delimiter, pagination", dumpLogOnFailure(async () => {
  const keys = ["l/a", "l/b/1", "l/b/2", "l/c d", "l/é", "l/z"];
  for (const k of keys) await s3.send(new PutObjectCommand({ Bucket: B, Key: k, Body: k }));
  const r = await s3.send(new ListObjectsV2Command({ Bucket: B, Prefix: "l/", Delimiter: "/" }));
  assert.deepEqual(r.Contents.map((o) => o.Key), ["l/a", "l/c d", "l/z", "l/é"]);
  assert.deepEqual(r.CommonPrefixes.map((p) => p.Prefix), ["l/b/"]);
  const seen = [];
  let token;
  for (let i = 0; i < 20; i++) {
    const p = await s3.send(new ListObjectsV2Command({ Bucket: B, Prefix: "l/", MaxKeys: 2, ContinuationToken: token }));
    seen.push(...(p.Contents || []).map((o) => o.Key));
    if (!p.IsTruncated) break;
    token = p.NextContinuationToken;
  }
  assert.deepEqual(seen, [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  const v1 = await s3.send(new ListObjectsCommand({ Bucket: B, Prefix: "l/b/" }));
  assert.deepEqual(v1.Contents.map((o) => o.Key), ["l/b/1", "l/b/2"]);
}));

test("copy with url-encoded source and REPLACE metadata", dumpLogOnFailure(async () => {
  const key = "copy src/ü+ä %.bin";
  const buf = randomBytes(70000);
  await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: buf, Metadata: { a: "1" } }));
  const c = await s3.send(new CopyObjectCommand({
    Bucket: B, Key: "copy-dst", CopySource: encodeURIComponent(`${B}/${key}`).replace(/%2F/g, "/"),
    MetadataDirective: "REPLACE", Metadata: { b: "2" },
  }));
  assert.equal(c.CopyObjectResult.ETag, `"${md5(buf)}"`);
  const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "copy-dst" }));
  assert.deepEqual(g.Metadata, { b: "2" });
  assert.equal(md5(await body(g)), md5(buf));
}));

test("delete, deleteObjects, errors, bucket removal", dumpLogOnFailure(async () => {
  await s3.send(new DeleteObjectCommand({ Bucket: B, Key: "str.txt" }));
  await s3.send(new DeleteObjectCommand({ Bucket: B, Key: "str.txt" })); // idempotent
  await assert.rejects(s3.send(new GetObjectCommand({ Bucket: B, Key: "str.txt" })), (e) => e.name === "NoSuchKey");
  await assert.rejects(s3.send(new DeleteBucketCommand({ Bucket: B })), (e) => e.name === "BucketNotEmpty");
  for (let i = 0; i < 20; i++) {
    const l = await s3.send(new ListObjectsV2Command({ Bucket: B }));
    if (!l.Contents || l.Contents.length === 0) break;
    const d = await s3.send(new DeleteObjectsCommand({
      Bucket: B, Delete: { Objects: l.Contents.map((o) => ({ Key: o.Key })) },
    }));
    assert.equal((d.Errors || []).length, 0);
    assert.equal(d.Deleted.length, l.Contents.length);
  }
  await s3.send(new DeleteBucketCommand({ Bucket: B }));
  const l = await s3.send(new ListBucketsCommand({}));
  assert.ok(!(l.Buckets || []).some((b) => b.Name === B));
}));

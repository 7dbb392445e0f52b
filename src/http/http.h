/* http: HTTP/1.1 for the server — a strict, zero-copy request-head parser over the caller's
 * buffer, incremental body decoders (chunked, and aws-chunked with its per-chunk signatures
 * and trailers), and the exchange: one request/response on a connection, as the s3 layer sees
 * it (read the body as a stream, send a response head and body).
 *
 * Sits above net (which owns sockets and the event loop) and below s3. Everything here that
 * parses untrusted bytes is fuzzed (fuzz/http_parse.c, fuzz/aws_chunked.c).
 *
 * Limits (every input-driven size is bounded): request head <= CN_HTTP_MAX_HEAD bytes,
 * <= CN_HTTP_MAX_HEADERS header fields, chunk-size lines <= 4 KiB incl. extensions. */
#ifndef CN_HTTP_H
#define CN_HTTP_H

#include "util/util.h"

#define CN_HTTP_MAX_HEAD (32 * 1024)
#define CN_HTTP_MAX_HEADERS 128

typedef struct cn_http_header {
	cn_str name;  /* as sent (case preserved); compare case-insensitively */
	cn_str value; /* leading/trailing spaces and tabs trimmed */
} cn_http_header;

/* A parsed request head. Every cn_str points into the buffer given to the parser and is
 * valid while that buffer is. */
typedef struct cn_http_req {
	cn_str method;      /* e.g. "GET"; token characters only */
	cn_str target;      /* raw request-target, e.g. "/bucket/key?uploads" */
	cn_str path;        /* target up to '?', still percent-encoded */
	cn_str query;       /* after '?', raw; empty when none */
	int minor_version;  /* 0 or 1 (HTTP/1.0 or HTTP/1.1) */
	cn_http_header headers[CN_HTTP_MAX_HEADERS];
	size_t nheaders;
	/* Derived from the headers by the parser: */
	int64_t content_length; /* -1 when absent */
	bool chunked;           /* Transfer-Encoding: chunked */
	bool keep_alive;        /* per version + Connection header */
	bool expect_continue;   /* Expect: 100-continue */
	cn_str host;            /* Host header value (empty if none) */
} cn_http_req;

/* Parses the request head at buf[0..len).
 * Returns the head length (> 0, including the final CRLFCRLF) when complete; 0 when more
 * bytes are needed; or a negative HTTP status for a request that must be refused:
 *   -400 malformed (bad request line, bad header syntax, bare LF/CR where not allowed,
 *        both Content-Length and Transfer-Encoding, duplicate/invalid Content-Length,
 *        missing Host on HTTP/1.1 is NOT an error here — s3 decides),
 *   -431 more than CN_HTTP_MAX_HEADERS fields, or len >= CN_HTTP_MAX_HEAD with no end,
 *   -501 a Transfer-Encoding other than "chunked",
 *   -505 a version other than HTTP/1.0 / HTTP/1.1.
 * Pure function: no allocation, no global state. */
int cn_http_parse_request(const char *buf, size_t len, cn_http_req *req);

/* First header with this name (case-insensitive), or NULL. */
const cn_str *cn_http_req_header(const cn_http_req *req, const char *name);

/* Reason phrase for a status ("OK", "Not Found", ...); "Unknown" when not known. */
const char *cn_http_reason(int status);

/* --- chunked body decoding (RFC 9112 §7.1), incremental and resumable -------------------
 * Feed any split of the encoded stream; the decoder copies payload bytes to out.
 * cn_http_chunked_decode consumes from in and produces into out, stopping when either is
 * exhausted or the body ends. Returns CN_OK (call again with more input / more room),
 * or CN_ERR_INVALID on a syntax error, CN_ERR_TOO_LARGE on an over-long size line.
 * st->done becomes true after the last chunk and trailer section (trailers are skipped). */
typedef struct cn_http_chunked {
	int state;
	uint64_t remaining;  /* payload bytes left in the current chunk */
	size_t line_len;     /* bytes of the current size/trailer line seen */
	unsigned ntrailers;  /* trailer lines skipped (at most 64) */
	cn_err err;          /* sticky: once set, every later call returns it */
	bool done;
} cn_http_chunked;
void cn_http_chunked_init(cn_http_chunked *st);
cn_err cn_http_chunked_decode(cn_http_chunked *st, const char *in, size_t inlen, size_t *consumed,
                              char *out, size_t outcap, size_t *produced);

/* --- aws-chunked (SigV4 streaming) body decoding --------------------------------------
 * Wire format (after any HTTP-level chunked decoding):
 *   signed:    hex-size ";chunk-signature=" 64hex CRLF data CRLF ... "0;chunk-signature=" sig CRLF
 *              [trailer lines CRLF ... "x-amz-trailer-signature:" sig CRLF] CRLF
 *   unsigned:  hex-size CRLF data CRLF ... "0" CRLF [trailer lines CRLF] CRLF
 * The decoder does not know keys: it reports every chunk and trailer to a verifier that the
 * s3 layer supplies (SigV4 chunk signatures, trailing checksums). A verifier callback that
 * returns non-OK stops decoding with that error. The verifier may be NULL (no checks).
 * Limits: chunk size <= 64 MiB, at most 16 trailer lines of <= 4 KiB each. */
typedef struct cn_chunk_verifier {
	/* chunk_data is called with the payload bytes of the current chunk as they pass. */
	void (*chunk_data)(void *ctx, const void *p, size_t len);
	/* chunk_end at the end of each chunk, including the final 0-size chunk, with the
	 * chunk-signature value (empty for unsigned streams). */
	cn_err (*chunk_end)(void *ctx, cn_str signature);
	/* One trailer header (name lowercased by the caller? no: as sent), excluding
	 * x-amz-trailer-signature which is given to trailers_end. */
	cn_err (*trailer)(void *ctx, cn_str name, cn_str value);
	/* After the trailer section; signature empty when none was sent. */
	cn_err (*trailers_end)(void *ctx, cn_str trailer_signature);
	void *ctx;
} cn_chunk_verifier;

typedef struct cn_http_awschunked {
	int state;
	uint64_t remaining;
	size_t line_len;
	char line[4096 + 8]; /* current size/trailer line, kept until CRLF */
	unsigned ntrailers;
	size_t sig_len;          /* current chunk-signature, kept at line[0..sig_len) */
	char trailer_sig[128];   /* x-amz-trailer-signature value */
	size_t trailer_sig_len;
	bool has_trailer_sig;
	bool last_chunk;         /* the 0-size chunk was read and accepted by chunk_end; a
	                          * body that ends here without the final CRLF may be accepted
	                          * by the caller (MinIO does) */
	cn_err err;              /* sticky: once set, every later call returns it */
	bool done;
	const cn_chunk_verifier *v;
} cn_http_awschunked;
void cn_http_awschunked_init(cn_http_awschunked *st, const cn_chunk_verifier *v);
/* Same contract as cn_http_chunked_decode; errors: CN_ERR_INVALID (syntax), CN_ERR_TOO_LARGE,
 * or whatever a verifier callback returned. */
cn_err cn_http_awschunked_decode(cn_http_awschunked *st, const char *in, size_t inlen,
                                 size_t *consumed, char *out, size_t outcap, size_t *produced);

/* --- the exchange: one request and its response on a connection -----------------------
 * Created by the server glue (src/http/exchange.c) for each request head; handed to the s3
 * layer. Runs on one worker thread; calls may block (bounded by the connection timeouts).
 * Response protocol: cn_http_resp_start, any cn_http_resp_header calls, then either
 * cn_http_resp_send_head(x, length) followed by exactly `length` body bytes via
 * cn_http_resp_body / the writer, or cn_http_resp_send(x, body, len) for a complete small
 * response. A response to HEAD sends no body bytes (writes are swallowed). */
typedef struct cn_http_exchange cn_http_exchange;

const cn_http_req *cn_http_request(cn_http_exchange *x);
/* The request body as a stream, decoded from Content-Length or chunked framing (not
 * aws-chunked: the s3 layer layers that on top with cn_http_awschunked). Sends
 * "100 Continue" on the first read when the client asked for it. 0 = end of body;
 * -CN_ERR_CLOSED when the peer closed early; -CN_ERR_TIMEOUT; -CN_ERR_INVALID for bad
 * chunked framing. */
cn_reader *cn_http_body(cn_http_exchange *x);
/* While on, a body read that would have to wait for the client answers -CN_ERR_BUSY
 * instead (it returns what is buffered first): for a handler that reads what an
 * unauthenticated client sent before it knows who the client is (net.h CN_CONN_MORE: the
 * loop gathered those bytes). */
void cn_http_body_nowait(cn_http_exchange *x, bool on);
/* Remote address as text ("127.0.0.1:5555"). */
const char *cn_http_peer(cn_http_exchange *x);
/* The request id (16 hex chars + NUL), also sent as x-amz-request-id. */
const char *cn_http_request_id(cn_http_exchange *x);

void cn_http_resp_start(cn_http_exchange *x, int status);
/* True when p[0..len) may be a field value: no control character but HTAB (RFC 9110 §5.5),
 * so nothing in it can end a header line or reach a client raw. */
bool cn_http_field_value_ok(const char *p, size_t len);
/* Adds a header; name and value are copied. A control character other than HTAB in either
 * is refused (CN_ERR_INVALID): the header is not sent. */
cn_err cn_http_resp_header(cn_http_exchange *x, const char *name, const char *value);
cn_err cn_http_resp_headerf(cn_http_exchange *x, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Sends status line + headers + Content-Length: length (length < 0: no Content-Length and
 * the connection closes after the body). */
cn_err cn_http_resp_send_head(cn_http_exchange *x, int64_t length);
cn_err cn_http_resp_body(cn_http_exchange *x, const void *p, size_t len);
/* The same for n pieces in order (1..CN_WRITEV_MAX), sent as one write: the shards of a
 * small object leave in one sendmsg without being gathered by a copy. */
cn_err cn_http_resp_bodyv(cn_http_exchange *x, const struct iovec *iov, int n);
/* A writer over the response body (supports send_fd -> sendfile). */
cn_writer *cn_http_resp_writer(cn_http_exchange *x);
/* Head + body in one call. */
cn_err cn_http_resp_send(cn_http_exchange *x, const void *body, size_t len);
/* Asks that the connection close after this response. */
void cn_http_resp_close(cn_http_exchange *x);
bool cn_http_resp_started(cn_http_exchange *x); /* head already sent */
/* The response status (0 before the handler chose one). */
int cn_http_resp_status(cn_http_exchange *x);
/* Body bytes so far: read from the request (decoded), and sent in the response. */
void cn_http_traffic(cn_http_exchange *x, int64_t *in, int64_t *out);
/* Time to first byte: ns from the request's head complete in the server's buffer (waits
 * for a worker included) to its response head handed to the socket (or to now when the
 * head is built and goes out when the handler returns); -1 while no head was built (or
 * the run was deferred). */
int64_t cn_http_ttfb_ns(cn_http_exchange *x);
/* Inline (loop thread): asks for the request to be run again on a worker, where it may
 * block (the handler must return at once, having sent nothing and changed nothing); returns
 * true. On a worker: returns false and the handler goes on. */
bool cn_http_defer(cn_http_exchange *x);
/* True when the handler runs on the loop thread (cn_http_serve_inline): it must not block. */
bool cn_http_inline(cn_http_exchange *x);
/* True when this run of the handler was deferred (its output discarded; it runs again). */
bool cn_http_deferred(cn_http_exchange *x);

/* Serving a connection (worker thread): parses each buffered request head, runs h on an
 * exchange for it, finishes the body/response bookkeeping (drain or close), and repeats
 * while complete pipelined heads are buffered. Bad heads get 400/431/501/505 and close.
 * A request whose body pre (below; NULL: none) wants gathered and that is not buffered
 * yet (a request the worker read itself: pipelined, or while it lingered) is not served:
 * CN_CONN_MORE, the head left unconsumed, and the loop gathers it (net.h NET-8). */
struct cn_conn;
typedef void (*cn_http_handler)(void *ctx, cn_http_exchange *x);
typedef size_t (*cn_http_preread_fn)(void *ctx, const struct cn_http_req *req);
int cn_http_serve(struct cn_conn *c, cn_http_handler h, cn_http_preread_fn pre,
                  void *ctx); /* cn_conn_verdict */
/* How many bytes of a request's body the loop gathers before a worker takes the request
 * (at most CN_HTTP_PREREAD_MAX; 0: none): the handler's say on which clients a worker
 * must never wait for (net.h CN_CONN_MORE). Called on the loop thread with the parsed
 * head of a request that has a Content-Length body. */
#define CN_HTTP_PREREAD_MAX (64 * 1024)
/* Loop thread: serves one bodiless GET/HEAD without blocking — its response (at most
 * ~160 KiB) goes to the socket as far as the socket takes it at once, the rest is left in
 * c->out for the loop to send. Returns CN_CONN_DEFER, with nothing consumed or sent, for
 * any other request or when the response turns out large, or file-backed before any of
 * it was sent (the handler's output is then discarded and a worker runs it again: handlers
 * of GET/HEAD must have no side effects before they respond); a file-backed rest after
 * bytes were sent is read into memory instead. */
int cn_http_serve_inline(struct cn_conn *c, cn_http_handler h, cn_http_preread_fn pre, void *ctx);
/* h NULL: nothing is served on the loop; the pre-read below still happens.
 * For a request with a Content-Length body and pre(ctx, req) = n > 0, the inline server
 * answers CN_CONN_MORE (c->preread = head + min(n, Content-Length)) until that much is
 * buffered, sending "100 Continue" first when the client waits for it; then DEFER. */

#endif

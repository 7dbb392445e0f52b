/* util: the small shared vocabulary of every cairn module — the internal error enum,
 * borrowed string views, the byte-stream reader/writer interfaces that carry object data
 * between layers, a growable byte buffer, logging and time helpers.
 *
 * Conventions (STYLE.md): fallible functions return cn_err (CN_OK == 0) and give results
 * through out-parameters; bugs are asserts (CN_ASSERT aborts with file:line, always on).
 * Nothing here allocates behind the caller's back except cn_buf, which owns its bytes. */
#ifndef CN_UTIL_H
#define CN_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Internal errors, shared by every layer. The s3 layer maps them to S3 error codes once,
 * at the edge (src/s3/errors.def); lower layers never know about S3 codes. */
typedef enum cn_err {
	CN_OK = 0,
	CN_ERR_NOMEM,          /* allocation failed */
	CN_ERR_INVALID,        /* malformed input or argument */
	CN_ERR_NOT_FOUND,      /* generic: no such thing */
	CN_ERR_EXISTS,         /* generic: already exists */
	CN_ERR_IO,             /* an I/O error (errno logged where it happened) */
	CN_ERR_NOSPACE,        /* drive full */
	CN_ERR_CORRUPT,        /* checksum/format mismatch on stored data */
	CN_ERR_OFFLINE,        /* drive unreachable */
	CN_ERR_TIMEOUT,        /* peer or drive too slow */
	CN_ERR_TOO_LARGE,      /* input over a limit */
	CN_ERR_CLOSED,         /* peer closed the connection / body ended early */
	CN_ERR_BUSY,           /* overloaded, try later (-> 503 SlowDown) */
	CN_ERR_QUORUM,         /* not enough drives agree */
	CN_ERR_NO_BUCKET,      /* bucket does not exist */
	CN_ERR_NO_KEY,         /* object does not exist */
	CN_ERR_BUCKET_EXISTS,  /* bucket already exists */
	CN_ERR_BUCKET_NOT_EMPTY,
	CN_ERR_BAD_KEY,        /* object key cannot be stored (invalid UTF-8, NUL, bad component) */
	CN_ERR_KEY_TOO_LONG,   /* object key over 1024 bytes */
	CN_ERR_BAD_BUCKET_NAME,
	CN_ERR_DIGEST,         /* body did not match a digest the client sent */
	CN_ERR_ABORTED,        /* the body reader reported a protocol/auth error; the caller
	                          that owns the reader knows the precise cause */
	CN_ERR_UNSUPPORTED,
	CN_ERR_NO_UPLOAD,      /* multipart upload id unknown (or finished) */
	CN_ERR_BAD_PART,       /* completion names a part that is missing or has another etag */
	CN_ERR_PART_ORDER,     /* completion's part list not strictly ascending / empty */
	CN_ERR_TOO_SMALL,      /* a non-last part under the minimum part size */
	CN_ERR_NO_VERSION,     /* no such version of the key */
	CN_ERR_DELETE_MARKER,  /* the version asked for is a delete marker */
	CN_ERR__COUNT
} cn_err;

const char *cn_err_str(cn_err e);

#define CN_ASSERT(c) \
	((c) ? (void)0 : cn_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void cn_assert_fail(const char *expr, const char *file, int line);

/* A borrowed view of bytes; never owns, never NUL-terminated unless said. */
typedef struct cn_str {
	const char *p;
	size_t len;
} cn_str;
#define CN_STR(lit) ((cn_str){ (lit), sizeof(lit) - 1 })
static inline cn_str cn_str_c(const char *s);
bool cn_str_eq(cn_str a, cn_str b);
/* Byte-wise order (memcmp's; a prefix first): < 0, 0 or > 0. */
int cn_str_cmp(cn_str a, cn_str b);
bool cn_str_eq_c(cn_str a, const char *c);        /* exact */
bool cn_str_ieq_c(cn_str a, const char *c);       /* ASCII case-insensitive */
bool cn_str_has_prefix(cn_str a, const char *prefix);

/* Copies the C string src into dst[cap] (cap > 0), truncating; dst is always terminated.
 * Returns strlen(src): a result >= cap means the copy was truncated. The hot paths use it
 * in place of snprintf(dst, cap, "%s", src), which runs the whole format engine. */
size_t cn_strlcpy(char *dst, const char *src, size_t cap);
/* Writes v in decimal to out (room for 21 bytes), NUL-terminated; returns the digits. */
size_t cn_fmt_u64(uint64_t v, char *out);
/* The end of the HTTP request head that starts at p, among the n bytes there: one past its
 * first "\r\n\r\n", or one past an earlier LF that no CR precedes (a malformed head, for
 * the parser to refuse at once rather than leave to the header timeout); NULL when neither
 * is there yet. LFs before p + from are not looked at (an earlier call saw them). */
const char *cn_find_head_end(const char *p, size_t n, size_t from);

/* A name/value pair of owned, NUL-terminated strings (metadata headers, query params). */
typedef struct cn_kv {
	char *name;
	char *value;
} cn_kv;

/* Frees n pairs and the array itself (NULL/0 is fine). */
void cn_kvs_free(cn_kv *kv, size_t n);

/* Growable byte buffer; owns its memory. cn_buf_fini frees. Append functions return
 * CN_ERR_NOMEM on allocation failure and leave the buffer as it was. */
typedef struct cn_buf {
	char *p;
	size_t len, cap;
} cn_buf;
void cn_buf_init(cn_buf *b);
void cn_buf_fini(cn_buf *b);
cn_err cn_buf_reserve(cn_buf *b, size_t extra);
/* The same without rounding up: room for exactly `extra` more bytes (and the NUL), for
 * buffers whose final size is known (a file read whole). */
cn_err cn_buf_reserve_exact(cn_buf *b, size_t extra);
cn_err cn_buf_append(cn_buf *b, const void *p, size_t len);
cn_err cn_buf_puts(cn_buf *b, const char *s);
/* Appends v in decimal. */
cn_err cn_buf_put_u64(cn_buf *b, uint64_t v);
cn_err cn_buf_printf(cn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Keeps p NUL-terminated after every append (the NUL is not counted in len). */

/* Byte streams between layers. A reader returns bytes > 0, 0 at end of stream, or a
 * negative cn_err (-CN_ERR_xxx) on failure; after a failure or EOF it is not called again.
 * A writer consumes all len bytes or returns an error. send_fd is optional (NULL when
 * unsupported): it sends len bytes of fd from off without copying through user space.
 * writev is optional (NULL: use write per piece): n (1..CN_WRITEV_MAX) pieces in order,
 * as one write (the pieces are the caller's; the writer has consumed them on return). */
#define CN_WRITEV_MAX 32
typedef struct cn_reader cn_reader;
struct cn_reader {
	ssize_t (*read)(cn_reader *r, void *buf, size_t len);
};
typedef struct cn_writer cn_writer;
struct cn_writer {
	cn_err (*write)(cn_writer *w, const void *buf, size_t len);
	cn_err (*send_fd)(cn_writer *w, int fd, int64_t off, int64_t len);
	cn_err (*writev)(cn_writer *w, const struct iovec *iov, int n);
};
/* Reads until len bytes or EOF; returns bytes read (< len only at EOF) or negative cn_err. */
ssize_t cn_read_full(cn_reader *r, void *buf, size_t len);

/* The value of the environment variable name, or else of alias (CAIRN_x, then the
 * MINIO_x or WARP_x it stands for), whichever is first set and not empty; NULL when
 * neither is. */
const char *cn_env2(const char *name, const char *alias);

/* Logging: one line to stderr, with level and optional request id. Thread-safe. */
typedef enum { CN_LOG_DEBUG, CN_LOG_INFO, CN_LOG_WARN, CN_LOG_ERROR } cn_log_level;
extern cn_log_level cn_log_min;
void cn_log(cn_log_level lvl, const char *reqid, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Time. */
int64_t cn_now_ms(void);          /* wall clock, ms since epoch */
int64_t cn_mono_ms(void);         /* monotonic ms */
int64_t cn_mono_ns(void);         /* monotonic ns */
/* A duration as Go writes them (MinIO's settings and warp's flags): decimal numbers, each
 * with a unit h, m, s, ms, us (or µs), ns ("1h30m", "1.5s", "250ms"), or one plain number
 * of seconds ("90"). No sign; at most a year. *ns set on CN_OK; CN_ERR_INVALID else. */
cn_err cn_parse_duration(const char *s, int64_t *ns);
/* The CLOCK_REALTIME instant ms from now, for pthread_cond_timedwait. */
struct timespec;
void cn_deadline_after_ms(int64_t ms, struct timespec *ts);
/* The same on clock (CLOCK_MONOTONIC: a condition variable set to it). */
void cn_deadline_on(int clock, int64_t ms, struct timespec *ts);

/* pthread_create with every signal blocked in the new thread but those a fault raises
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT: blocked, a fault would kill
 * the process without the sanitizers' report). The new thread inherits the mask the
 * creating thread has during the call; the creator's own mask is restored after. Every
 * thread of the server is made so: SIGTERM and SIGINT reach only the main thread, whose
 * handler (cli/server.c) then never runs on a thread while the main thread frees what it
 * touches. Returns pthread_create's answer (0 or an errno value). */
int cn_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* A background thread that runs fn(arg) every every_ms until stopped (the store's drive
 * monitor and stale-upload janitor). cn_periodic_start: CN_ERR_IO when the thread cannot
 * be made (then nothing runs and stop is a no-op). cn_periodic_stop: wakes the thread and
 * joins it; a run in progress finishes first (fn may poll cn_periodic_stopping to end
 * early); safe on one that never started (zeroed). */
typedef struct cn_periodic {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_bool stop;
	bool started;
	int64_t every_ms;
	void (*fn)(void *arg);
	void *arg;
} cn_periodic;
cn_err cn_periodic_start(cn_periodic *p, int64_t every_ms, void (*fn)(void *arg), void *arg);
void cn_periodic_stop(cn_periodic *p);
bool cn_periodic_stopping(cn_periodic *p);

/* Call right after any ISA-L kernel (erasure code, CRC): its AVX-512 code returns with dirty
 * upper vector state, and the SSE code that runs next (libxxhash's XXH3, ...) then pays the
 * AVX-SSE transition penalty until something clears it (measured here: XXH3 of 5.4 KiB
 * shards at 3.9 GB/s right after a 5.5 KiB crc32_iscsi, 14 GB/s after this). vzeroupper
 * on CPUs with AVX, nothing elsewhere. */
void cn_simd_settle(void);
/* gmtime_r without the C library's time zone machinery (struct tm from <time.h>):
 * year, month, day, hour, minute, second, weekday and day of the year of secs since the
 * epoch (negative: before it), UTC; tm_isdst 0. */
struct tm;
void cn_time_utc(int64_t secs, struct tm *tm);
/* Formats: "Tue, 15 Nov 1994 08:12:31 GMT" (IMF-fixdate, 29 chars + NUL) */
void cn_time_http(int64_t ms, char out[30]);
/* "2006-01-02T15:04:05.000Z" (24 chars + NUL) */
void cn_time_iso8601(int64_t ms, char out[25]);
/* Parses IMF-fixdate, RFC 850 and asctime dates; returns CN_ERR_INVALID otherwise. */
cn_err cn_time_parse_http(cn_str s, int64_t *ms);
/* Parses "20130524T000000Z" (ISO8601 basic, as x-amz-date). */
cn_err cn_time_parse_amz(cn_str s, int64_t *ms);

/* Encoding helpers. Output buffers must hold the documented size. */
void cn_hex_encode(const unsigned char *in, size_t len, char *out /* 2*len+1 */);
/* SHA-256 and HMAC-SHA256 (util/sha256.c): no allocation, thread-safe. */
void cn_sha256(const void *p, size_t len, unsigned char out[32]);
void cn_sha256_hex(const void *p, size_t len, char out[65] /* lowercase hex + NUL */);
void cn_hmac_sha256(const void *key, size_t klen, const void *p, size_t len, unsigned char out[32]);

/* MD5 (util/md5.c), for ETags, with an 8-lane AVX2 engine shared by concurrent callers.
 * cn_md5_update hashes short runs itself (OpenSSL's one-stream code); a run of at least
 * CN_MD5_ENGINE_MIN bytes goes to the engine, which hashes up to 8 callers' runs at once
 * (~4.5x one stream on these machines): flat combining, the caller that finds the engine
 * idle runs it for everyone queued until its own run is done, then hands it to a caller
 * whose run is still being hashed; the others sleep until theirs is. The call is
 * synchronous: p is only read before it returns. No allocation, no failure. One context
 * belongs to one thread at a time; contexts are independent. Without AVX2, or after
 * cn_md5_engine_enable(false) (CAIRN_MD5_ENGINE=off at start), every run is one stream. */
#define CN_MD5_ENGINE_MIN (256u << 10)
typedef struct cn_md5 {
	uint32_t h[4];
	uint64_t len;             /* bytes hashed so far */
	unsigned char tail[64];   /* bytes of an unfinished block */
	unsigned tlen;
} cn_md5;
void cn_md5_init(cn_md5 *c);
void cn_md5_update(cn_md5 *c, const void *p, size_t n);
void cn_md5_final(cn_md5 *c, unsigned char out[16]);
/* Whether runs go to the engine (true by default where the CPU has AVX2); false when the
 * CPU lacks it whatever is asked. Returns the state now in force. */
bool cn_md5_engine_enable(bool on);
/* 64-byte blocks hashed so far by the engine's lanes and one stream at a time. */
void cn_md5_stats(uint64_t *lane_blocks, uint64_t *stream_blocks);
cn_err cn_hex_decode(cn_str in, unsigned char *out, size_t outlen /* must be in.len/2 */);
/* Base64 (standard alphabet, padded). decode returns CN_ERR_INVALID on bad input. */
size_t cn_base64_encode(const unsigned char *in, size_t len, char *out /* 4*((len+2)/3)+1 */);
cn_err cn_base64_decode(cn_str in, unsigned char *out, size_t cap, size_t *outlen);
/* Percent-decoding into out (cap >= in.len + 1, NUL-terminated); plus_is_space for
 * application/x-www-form-urlencoded query strings. CN_ERR_INVALID on a bad escape. */
cn_err cn_url_decode(cn_str in, bool plus_is_space, char *out, size_t cap, size_t *outlen);
/* Percent-encoding per RFC 3986 unreserved set (A-Z a-z 0-9 - _ . ~), keeping '/' when
 * keep_slash. Appends to b. This is the AWS SigV4 URI encoding. */
cn_err cn_url_encode(cn_buf *b, cn_str in, bool keep_slash);
/* One parameter of a query string, decoded (an absent value is ""). */
typedef struct cn_query_param {
	cn_str name, value;
} cn_query_param;
/* Appends the AWS SigV4 canonical query string of params[n] (sigv4.c) to b: each name and
 * value URI-encoded (cn_url_encode, '/' encoded too), the pairs sorted by encoded name, then
 * encoded value, joined as name=value&... CN_ERR_TOO_LARGE when the encoded names and
 * values pass max_len bytes; CN_ERR_NOMEM. Used by the server's verifier and the client's
 * signer alike, so that both sign the same bytes. */
cn_err cn_sigv4_canonical_query(const cn_query_param *params, size_t n, size_t max_len,
                                cn_buf *b);
/* True when s is valid UTF-8 (no overlongs, no surrogates). */
bool cn_utf8_valid(const char *s, size_t len);

static inline cn_str cn_str_c(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return (cn_str){ s, n };
}

#endif

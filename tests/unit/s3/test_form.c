/* test_form: the streaming multipart/form-data parser of POST object uploads (src/s3/form.c).
 * Every body is handed to the parser by a test reader in pieces of 1, 7, 4096 bytes and
 * whole (so delimiters and header blank lines split across reads are covered), and the file
 * is read back in chunks of several sizes. Covered: cn_form_boundary (quoting, parameters,
 * case, missing/empty/too long, other types); fields with CR, LF, "--", NULs and partial
 * delimiters in their values; a file part of 0, 1 and > 200 KiB bytes (the 64 KiB buffer
 * wraps) holding "\r\n--" + boundary prefixes; what follows the file part is never needed;
 * preamble, transport padding, case-insensitive lookup and "File", filename absent; every
 * error code of the contract (no delimiter, no file, bad parts, headers without their blank
 * line, max_pre, the 8 KiB header limit, truncation in a field or in the file, reader
 * errors, too many fields), the same verdict for every piece size, and the body reader
 * never called again after it returned 0 or an error. cn_form_fini runs after every open. */
#include "s3/form.h"
#include "test.h"

#include <stdint.h>

#define B "----WebKitFormBoundary7MA4YWxkTrZu0gW"
#define DELIM "\r\n--" B

static const size_t pieces[] = { 1, 7, 4096, 0 }; /* 0: whole */
#define NPIECES (sizeof pieces / sizeof pieces[0])

/* ---- the test reader ---- */

typedef struct treader {
	cn_reader r;
	const char *p;
	size_t len, off, piece;
	size_t fail_at; /* SIZE_MAX: never; else -CN_ERR_IO once off reaches it */
	bool ended;     /* returned 0 or an error */
	int after_end;  /* calls after that: the reader contract forbids them */
	int zero_len;   /* calls asking for 0 bytes */
} treader;

static ssize_t tread(cn_reader *r, void *buf, size_t len)
{
	treader *t = (treader *)r;
	if (t->ended) {
		t->after_end++;
		return 0;
	}
	if (len == 0)
		t->zero_len++;
	if (t->off >= t->fail_at) {
		t->ended = true;
		return -(ssize_t)CN_ERR_IO;
	}
	size_t n = t->len - t->off;
	if (n == 0) {
		t->ended = true;
		return 0;
	}
	if (t->piece && n > t->piece)
		n = t->piece;
	if (n > len)
		n = len;
	if (t->fail_at != SIZE_MAX && n > t->fail_at - t->off)
		n = t->fail_at - t->off;
	memcpy(buf, t->p + t->off, n);
	t->off += n;
	return (ssize_t)n;
}

static void tinit(treader *t, const void *body, size_t len, size_t piece)
{
	memset(t, 0, sizeof *t);
	t->r.read = tread;
	t->p = body;
	t->len = len;
	t->piece = piece;
	t->fail_at = SIZE_MAX;
}

static cn_err open_body(cn_form *f, treader *t, const cn_buf *body, size_t piece,
                        size_t max_pre)
{
	tinit(t, body->p, body->len, piece);
	return cn_form_open(f, &t->r, B, max_pre);
}

/* Reads the file to its end in chunks of `chunk` into out; returns the byte count or the
 * negative error. Checks every read's bounds and that the end is sticky. */
static ssize_t read_file(cn_form *f, cn_buf *out, size_t chunk)
{
	char *tmp = malloc(chunk);
	ssize_t total = 0;
	for (;;) {
		ssize_t n = f->file.read(&f->file, tmp, chunk);
		if (n < 0) {
			total = n;
			break;
		}
		CHECK((size_t)n <= chunk);
		if (n == 0) {
			CHECK_EQ_INT(f->file.read(&f->file, tmp, chunk), 0);
			break;
		}
		CHECK_EQ_INT(cn_buf_append(out, tmp, (size_t)n), CN_OK);
		total += n;
	}
	free(tmp);
	return total;
}

/* ---- body building ---- */

static void app(cn_buf *b, const char *s)
{
	CHECK_EQ_INT(cn_buf_append(b, s, strlen(s)), CN_OK);
}

static void appn(cn_buf *b, const void *p, size_t n)
{
	CHECK_EQ_INT(cn_buf_append(b, p, n), CN_OK);
}

/* delimiter + CRLF + a Content-Disposition for a field, blank line, value (no CRLF after:
 * the next delimiter carries it) */
static void field(cn_buf *b, bool first, const char *name, const void *v, size_t vl)
{
	app(b, first ? "--" B "\r\n" : DELIM "\r\n");
	app(b, "Content-Disposition: form-data; name=\"");
	app(b, name);
	app(b, "\"\r\n\r\n");
	appn(b, v, vl);
}

/* Pseudo-random content of n bytes with traps: "\r\n--" + every prefix of the boundary
 * (never the whole), "--" + the boundary without CRLF, lone CR/LF, and at the very end the
 * longest prefix, so the real delimiter follows a near miss. */
static char *content(size_t n, uint32_t seed)
{
	char *p = malloc(n ? n : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (char)(x >> 16);
	}
	static const char bd[] = B;
	size_t k = 0;
	for (size_t at = 97; n > 200 && at + 4 + sizeof bd < n - 100; at += 977 + (at % 61)) {
		size_t plen = k++ % (sizeof bd - 1); /* 0 .. len-1: never the full boundary */
		memcpy(p + at, "\r\n--", 4);
		memcpy(p + at + 4, bd, plen);
		if (k % 7 == 0) {
			p[at - 1] = '.';
			memcpy(p + at, "--" B, sizeof bd + 1); /* no CRLF: not a delimiter */
		}
	}
	/* straddle the parser's 64 KiB buffer edges with near misses */
	for (size_t edge = 65536; n > 200 && edge + 64 < n; edge += 65536) {
		size_t at = edge - 20;
		memcpy(p + at, "\r\n--", 4);
		memcpy(p + at + 4, bd, sizeof bd - 2);
	}
	if (n >= 4 + sizeof bd - 2) {
		memcpy(p + n - (4 + sizeof bd - 2), "\r\n--", 4);
		memcpy(p + n - (sizeof bd - 2), bd, sizeof bd - 2);
	}
	return p;
}

/* ---- cn_form_boundary ---- */

static bool bnd(const char *ct, char out[CN_FORM_MAX_BOUNDARY + 1])
{
	memset(out, 'Z', CN_FORM_MAX_BOUNDARY + 1);
	return cn_form_boundary((cn_str){ ct, strlen(ct) }, out);
}

TEST(boundary_extraction)
{
	char out[CN_FORM_MAX_BOUNDARY + 1];
	CHECK(bnd("multipart/form-data; boundary=abc", out));
	CHECK_EQ_STR(out, "abc");
	CHECK(bnd("multipart/form-data;boundary=abc", out));
	CHECK_EQ_STR(out, "abc");
	CHECK(bnd("multipart/form-data; boundary=\"a b:c\"", out));
	CHECK_EQ_STR(out, "a b:c");
	CHECK(bnd("multipart/form-data; boundary=\"q\\\"x\"", out));
	CHECK_EQ_STR(out, "q\"x");
	CHECK(bnd("Multipart/Form-Data; BOUNDARY=" B, out));
	CHECK_EQ_STR(out, B);
	CHECK(bnd("MULTIPART/FORM-DATA; charset=utf-8; boundary=xyz", out));
	CHECK_EQ_STR(out, "xyz");
	CHECK(bnd("multipart/form-data; charset=\"x; boundary=no\"; boundary=yes", out));
	CHECK_EQ_STR(out, "yes");
	CHECK(bnd("multipart/form-data; boundary=abc; charset=utf-8", out));
	CHECK_EQ_STR(out, "abc");
	CHECK(bnd("multipart/form-data; boundary=\"abc\" ; charset=utf-8", out));
	CHECK_EQ_STR(out, "abc");
	CHECK(bnd("multipart/form-data ;\tboundary=abc  ", out));
	CHECK_EQ_STR(out, "abc");
	CHECK(bnd("multipart/form-data; flag; boundary=abc", out));
	CHECK_EQ_STR(out, "abc");
	/* exactly 70 characters: accepted; 71: refused (quoted or not) */
	char ct[256], b70[80];
	memset(b70, 'b', 70);
	b70[70] = 0;
	snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b70);
	CHECK(bnd(ct, out));
	CHECK_EQ_STR(out, b70);
	snprintf(ct, sizeof ct, "multipart/form-data; boundary=\"%s\"", b70);
	CHECK(bnd(ct, out));
	CHECK_EQ_STR(out, b70);
	snprintf(ct, sizeof ct, "multipart/form-data; boundary=%sb", b70);
	CHECK(!bnd(ct, out));
	snprintf(ct, sizeof ct, "multipart/form-data; boundary=\"%sb\"", b70);
	CHECK(!bnd(ct, out));
	/* missing, empty, not multipart/form-data, malformed */
	CHECK(!bnd("multipart/form-data", out));
	CHECK(!bnd("multipart/form-data;", out));
	CHECK(!bnd("multipart/form-data; charset=utf-8", out));
	CHECK(!bnd("multipart/form-data; boundary=", out));
	CHECK(!bnd("multipart/form-data; boundary=\"\"", out));
	CHECK(!bnd("multipart/form-data; boundary=;", out));
	CHECK(!bnd("multipart/form-data; boundary=\"abc", out));
	CHECK(!bnd("multipart/mixed; boundary=abc", out));
	CHECK(!bnd("multipart/form-datax; boundary=abc", out));
	CHECK(!bnd("text/plain; boundary=abc", out));
	CHECK(!bnd("application/x-www-form-urlencoded", out));
	CHECK(!bnd("", out));
	CHECK(!bnd("multipart/form", out));
	CHECK(!bnd("multipart/form-data boundary=abc", out));
	/* control characters (a NUL above all: out is a C string) are no boundary characters */
	CHECK(!cn_form_boundary((cn_str){ "multipart/form-data; boundary=\0abc", 34 }, out));
	CHECK(!cn_form_boundary((cn_str){ "multipart/form-data; boundary=ab\0c", 34 }, out));
	CHECK(!cn_form_boundary((cn_str){ "multipart/form-data; boundary=\"ab\0c\"", 36 }, out));
	CHECK(!bnd("multipart/form-data; boundary=\"a\r\nb\"", out));
	CHECK(!bnd("multipart/form-data; boundary=\"a\tb\"", out));
	CHECK(!bnd("multipart/form-data; boundary=a\x7f", out));
	/* not NUL-terminated: only len bytes are looked at */
	CHECK(cn_form_boundary((cn_str){ "multipart/form-data; boundary=abcdef", 33 }, out));
	CHECK_EQ_STR(out, "abc");
}

/* ---- well-formed forms ---- */

static const char v_note[] = "line1\r\nline2\nline3\r";
static const char v_dash[] = "--a--\r\n--\r\n-";
static const char v_nul[] = "a\0b\0";
/* near misses: "\r\n--" + a boundary prefix then another byte, the boundary after a lone
 * LF or CR, and at the end "\r\n--" + the boundary less its last byte, right before the
 * real delimiter */
static const char v_near[] = "x\r\n--" "----WebKitFormBoundary7MA4YWxkTrZu0" "Y\n--" B "\r--" B
                             "\r\n--" "----WebKitFormBoundary7MA4YWxkTrZu0g";

/* The S3 form of every test: fields, then the file part, then a field after it. */
static void build_form(cn_buf *b, const char *preamble, const void *file, size_t flen,
                       const char *file_part_headers)
{
	cn_buf_init(b);
	if (preamble) {
		app(b, preamble);
		app(b, "\r\n");
	}
	field(b, true, "key", "uploads/${filename}", 19);
	field(b, false, "X-Amz-Meta-Note", v_note, sizeof v_note - 1);
	field(b, false, "dashes", v_dash, sizeof v_dash - 1);
	field(b, false, "nul", v_nul, sizeof v_nul - 1);
	field(b, false, "empty", "", 0);
	field(b, false, "near", v_near, sizeof v_near - 1);
	/* other forms of the Content-Disposition: token name, escaped quote, other params */
	app(b, DELIM "\r\ncontent-disposition: form-data; name=token\r\n\r\nT");
	app(b, DELIM "\r\nContent-Disposition:form-data;name=\"we\\\"ird\"\r\nX-Other: 1\r\n\r\nW");
	app(b, DELIM "\r\nContent-Type: text/plain\r\nContent-Disposition: form-data; "
	             "filename=\"f;name=x\"; name=\"acl\"\r\n\r\nprivate");
	app(b, DELIM "\r\n");
	app(b, file_part_headers);
	app(b, "\r\n\r\n");
	appn(b, file, flen);
	app(b, DELIM "\r\nContent-Disposition: form-data; name=\"submit\"\r\n\r\nUpload" DELIM
	             "--\r\nepilogue");
}

static const char file_hdr[] = "Content-Disposition: form-data; name=\"file\"; "
                               "filename=\"photo; 1.jpg\"\r\nContent-Type: image/jpeg";

static void check_fields(const cn_form *f)
{
	CHECK_EQ_INT(f->nfields, 9);
	if (f->nfields != 9)
		return;
	CHECK_EQ_STR(f->fields[0].name, "key");
	CHECK_EQ_STR(f->fields[0].value, "uploads/${filename}");
	CHECK_EQ_INT(f->fields[0].len, 19);
	CHECK_EQ_STR(f->fields[1].name, "X-Amz-Meta-Note");
	CHECK_EQ_INT(f->fields[1].len, sizeof v_note - 1);
	CHECK_MEM(f->fields[1].value, v_note, sizeof v_note); /* with its NUL */
	CHECK_EQ_INT(f->fields[2].len, sizeof v_dash - 1);
	CHECK_MEM(f->fields[2].value, v_dash, sizeof v_dash);
	CHECK_EQ_INT(f->fields[3].len, 4);
	CHECK_MEM(f->fields[3].value, v_nul, 5);
	CHECK_EQ_STR(f->fields[4].name, "empty");
	CHECK_EQ_INT(f->fields[4].len, 0);
	CHECK_EQ_STR(f->fields[4].value, "");
	CHECK_EQ_INT(f->fields[5].len, sizeof v_near - 1);
	CHECK_MEM(f->fields[5].value, v_near, sizeof v_near);
	CHECK_EQ_STR(f->fields[6].name, "token");
	CHECK_EQ_STR(f->fields[6].value, "T");
	CHECK_EQ_STR(f->fields[7].name, "we\"ird");
	CHECK_EQ_STR(f->fields[7].value, "W");
	CHECK_EQ_STR(f->fields[8].name, "acl");
	CHECK_EQ_STR(f->fields[8].value, "private");
	/* lookup ignores ASCII case; the field after the file part is not there */
	const cn_form_field *fl = cn_form_get(f, "KEY");
	CHECK(fl == &f->fields[0]);
	CHECK(cn_form_get(f, "x-amz-meta-note") == &f->fields[1]);
	CHECK(cn_form_get(f, "ACL") == &f->fields[8]);
	CHECK(cn_form_get(f, "submit") == NULL);
	CHECK(cn_form_get(f, "ke") == NULL);
	CHECK(cn_form_get(f, "keys") == NULL);
	CHECK(cn_form_get(f, "") == NULL);
	CHECK(cn_form_get(f, "file") == NULL);
}

/* Opens the form with every piece size, reads the file with each chunk size and compares. */
static void roundtrip(const char *preamble, size_t flen, uint32_t seed)
{
	char *file = content(flen, seed);
	CHECK(!flen || !memmem(file, flen, DELIM, sizeof DELIM - 1)); /* the test's own traps */
	cn_buf body;
	build_form(&body, preamble, file, flen, file_hdr);
	static const size_t chunks[] = { 1, 13, 4096, 1 << 20 };
	for (size_t pi = 0; pi < NPIECES; pi++)
		for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
			int before = t_failed_checks;
			cn_form f;
			treader t;
			cn_err e = open_body(&f, &t, &body, pieces[pi], 1 << 20);
			CHECK_EQ_INT(e, CN_OK);
			if (e == CN_OK) {
				check_fields(&f);
				CHECK_EQ_STR(f.filename, "photo; 1.jpg");
				CHECK_EQ_STR(f.file_type, "image/jpeg");
				cn_buf got;
				cn_buf_init(&got);
				ssize_t n = read_file(&f, &got, chunks[ci]);
				CHECK_EQ_INT(n, (ssize_t)flen);
				if (n == (ssize_t)flen && flen)
					CHECK_MEM(got.p, file, flen);
				cn_buf_fini(&got);
				/* the field after the file part and the epilogue were never read */
				if (pieces[pi] && pieces[pi] <= 7)
					CHECK(t.off < body.len);
			}
			CHECK_EQ_INT(t.after_end, 0);
			CHECK_EQ_INT(t.zero_len, 0);
			cn_form_fini(&f);
			if (t_failed_checks != before)
				fprintf(stderr, "  (file of %zu bytes, pieces %zu, chunks %zu)\n", flen,
				        pieces[pi], chunks[ci]);
		}
	cn_buf_fini(&body);
	free(file);
}

TEST(file_of_0_1_and_small_sizes)
{
	roundtrip(NULL, 0, 1);
	roundtrip(NULL, 1, 2);
	roundtrip(NULL, 2, 3);
	roundtrip(NULL, sizeof DELIM - 2, 4); /* as long as the delimiter less one */
	roundtrip(NULL, 5000, 5);
}

TEST(file_over_200k_wraps_the_buffer)
{
	roundtrip(NULL, 200 * 1024 + 12345, 6);
	roundtrip(NULL, 3 * 65536, 7); /* a multiple of the buffer */
}

TEST(preamble)
{
	roundtrip("This is the preamble. --" B " and \r\n--" "----WebKitFormBo -- ignored", 100, 8);
	roundtrip("", 10, 9); /* empty preamble: the body starts with CRLF */
}

/* ---- helpers for single bodies ---- */

static const char *ctx; /* printed with a failure */

/* cn_form_open of body with every piece size gives want; fini after each. */
static void expect_open(const cn_buf *body, size_t max_pre, cn_err want)
{
	for (size_t pi = 0; pi < NPIECES; pi++) {
		cn_form f;
		treader t;
		cn_err e = open_body(&f, &t, body, pieces[pi], max_pre);
		if (e != want)
			fprintf(stderr, "  %s, pieces %zu: got %d, want %d\n", ctx, pieces[pi], (int)e,
			        (int)want);
		CHECK_EQ_INT(e, want);
		CHECK_EQ_INT(t.after_end, 0);
		cn_form_fini(&f);
	}
}

static void expect_open_s(const char *body, size_t max_pre, cn_err want)
{
	cn_buf b;
	cn_buf_init(&b);
	app(&b, body);
	ctx = body;
	expect_open(&b, max_pre, want);
	cn_buf_fini(&b);
}

/* Opens fine with every piece size; reading the file gives want (bytes, or -error), and the
 * content is `content` when want >= 0. */
static void expect_file(const char *body, ssize_t want, const char *content_want)
{
	cn_buf b;
	cn_buf_init(&b);
	app(&b, body);
	for (size_t pi = 0; pi < NPIECES; pi++) {
		cn_form f;
		treader t;
		cn_err e = open_body(&f, &t, &b, pieces[pi], 20480);
		CHECK_EQ_INT(e, CN_OK);
		if (e == CN_OK) {
			cn_buf got;
			cn_buf_init(&got);
			ssize_t n = read_file(&f, &got, 5);
			if (n != want)
				fprintf(stderr, "  %s, pieces %zu: read %zd, want %zd\n", body, pieces[pi],
				        n, want);
			CHECK_EQ_INT(n, want);
			if (n >= 0 && n == want)
				CHECK_MEM(got.p, content_want, (size_t)n);
			cn_buf_fini(&got);
		}
		CHECK_EQ_INT(t.after_end, 0);
		cn_form_fini(&f);
	}
	cn_buf_fini(&b);
}

#define FILEHDR "Content-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"

TEST(transport_padding)
{
	expect_file("--" B "  \t \r\nContent-Disposition: form-data; name=a\r\n\r\nv" DELIM
	            " \r\n" FILEHDR "data" DELIM "\t\r\n",
	            4, "data");
	/* padding before the closing "--" is not a closing delimiter */
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=a\r\n\r\nv" DELIM " --\r\n",
	              20480, CN_ERR_INVALID);
}

TEST(file_name_case_filename_and_type)
{
	static const char *names[] = { "File", "FILE", "fILe" };
	for (size_t i = 0; i < 3; i++) {
		cn_buf b;
		cn_buf_init(&b);
		app(&b, "--" B "\r\nContent-Disposition: form-data; name=\"Key\"\r\n\r\nk" DELIM
		        "\r\nContent-Disposition: form-data; name=\"");
		app(&b, names[i]);
		app(&b, "\"\r\n\r\nxyz" DELIM "--");
		for (size_t pi = 0; pi < NPIECES; pi++) {
			cn_form f;
			treader t;
			CHECK_EQ_INT(open_body(&f, &t, &b, pieces[pi], 20480), CN_OK);
			CHECK_EQ_INT(f.nfields, 1);
			CHECK(cn_form_get(&f, "key") && !strcmp(cn_form_get(&f, "key")->value, "k"));
			CHECK_EQ_STR(f.filename, ""); /* no filename parameter */
			CHECK(f.file_type == NULL);   /* no Content-Type */
			cn_buf got;
			cn_buf_init(&got);
			CHECK_EQ_INT(read_file(&f, &got, 100), 3);
			CHECK_MEM(got.p, "xyz", 3);
			cn_buf_fini(&got);
			cn_form_fini(&f);
		}
		cn_buf_fini(&b);
	}
	/* only the file part, filename first, unquoted name, type with spaces around */
	cn_buf b;
	cn_buf_init(&b);
	app(&b, "--" B "\r\ncOnTeNt-TyPe:  text/plain; charset=utf-8 \r\nContent-Disposition: "
	        "form-data; filename=\"a \\\"q\\\".txt\"; name=file\r\n\r\n" DELIM "--\r\n");
	for (size_t pi = 0; pi < NPIECES; pi++) {
		cn_form f;
		treader t;
		CHECK_EQ_INT(open_body(&f, &t, &b, pieces[pi], 20480), CN_OK);
		CHECK_EQ_INT(f.nfields, 0);
		CHECK_EQ_STR(f.filename, "a \"q\".txt");
		CHECK_EQ_STR(f.file_type, "text/plain; charset=utf-8");
		cn_buf got;
		cn_buf_init(&got);
		CHECK_EQ_INT(read_file(&f, &got, 100), 0); /* an empty file */
		cn_buf_fini(&got);
		cn_form_fini(&f);
	}
	cn_buf_fini(&b);
	/* a field named like the file but longer is a field */
	expect_file("--" B "\r\nContent-Disposition: form-data; name=files\r\n\r\nv" DELIM
	            "\r\nContent-Disposition: form-data; name=file\r\n\r\nF" DELIM "--",
	            1, "F");
}

TEST(what_follows_the_file_is_not_needed)
{
	/* the body ends right after the file's closing delimiter: by EOF, or by a reader
	 * error at the next read */
	expect_file("--" B "\r\n" FILEHDR "data" DELIM, 4, "data");
	cn_buf b;
	cn_buf_init(&b);
	app(&b, "--" B "\r\n" FILEHDR "data" DELIM "\r\nContent-Disposition: form-data; "
	        "name=x\r\n\r\nafter" DELIM "--");
	size_t cut = strlen("--" B "\r\n" FILEHDR "data" DELIM);
	for (size_t pi = 0; pi < NPIECES; pi++) {
		cn_form f;
		treader t;
		tinit(&t, b.p, b.len, pieces[pi]);
		t.fail_at = cut;
		CHECK_EQ_INT(cn_form_open(&f, &t.r, B, 20480), CN_OK);
		cn_buf got;
		cn_buf_init(&got);
		CHECK_EQ_INT(read_file(&f, &got, 3), 4);
		CHECK_MEM(got.p, "data", 4);
		CHECK(!t.ended); /* the failing read was never made */
		cn_buf_fini(&got);
		cn_form_fini(&f);
	}
	cn_buf_fini(&b);
	/* garbage after the closing delimiter is not looked at either */
	expect_file("--" B "\r\n" FILEHDR "data" DELIM "garbage", 4, "data");
}

TEST(errors_no_delimiter)
{
	expect_open_s("", 20480, CN_ERR_INVALID);
	expect_open_s("hello world", 20480, CN_ERR_INVALID);
	expect_open_s("--" B, 20480, CN_ERR_INVALID);
	expect_open_s("--" B "-", 20480, CN_ERR_INVALID);
	/* the boundary less a byte at the start is preamble: the real delimiter comes later
	 * and it closes the form */
	expect_open_s("--" "----WebKitFormBoundary7MA4YWxkTrZu0g\r\n" FILEHDR "x" DELIM "--",
	              20480, CN_ERR_NOT_FOUND);
	expect_open_s("--other\r\n" FILEHDR "x\r\n--other--", 20480, CN_ERR_INVALID);
	/* the boundary without its CRLF in a preamble is no delimiter */
	expect_open_s("xx--" B "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	/* neither "--" nor CRLF after the delimiter */
	expect_open_s("--" B "X\r\n" FILEHDR "x" DELIM "--", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\n" FILEHDR "x" DELIM "--", 20480, CN_ERR_INVALID);
	expect_open_s("--" B " -\r\n" FILEHDR "x" DELIM "--", 20480, CN_ERR_INVALID);
}

TEST(errors_no_file_part)
{
	expect_open_s("--" B "--", 20480, CN_ERR_NOT_FOUND);
	expect_open_s("--" B "--\r\n", 20480, CN_ERR_NOT_FOUND);
	expect_open_s("preamble\r\n--" B "--\r\n", 20480, CN_ERR_NOT_FOUND);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=key\r\n\r\nk" DELIM
	              "\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x\"\r\n\r\n"
	              "content" DELIM "--\r\n",
	              20480, CN_ERR_NOT_FOUND);
	/* the fields end, then EOF without a closing delimiter: not well-formed */
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=key\r\n\r\nk" DELIM,
	              20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=key\r\n\r\nk" DELIM "-",
	              20480, CN_ERR_INVALID);
}

TEST(errors_bad_parts)
{
	/* no Content-Disposition, no name, empty name, another disposition, bad syntax */
	expect_open_s("--" B "\r\nContent-Type: text/plain\r\n\r\nv" DELIM "\r\n" FILEHDR "x",
	              20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\nv" DELIM
	              "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data\r\n\r\nv" DELIM "\r\n" FILEHDR "x",
	              20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nv" DELIM
	              "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\r\n\r\nv" DELIM
	              "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv" DELIM
	              "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-datax; name=\"a\"\r\n\r\nv" DELIM
	              "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv" DELIM
	              "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID); /* unterminated quote */
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\nno colon\r\n\r\nv"
	              DELIM "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\n\r\nno headers" DELIM "\r\n" FILEHDR "x", 20480, CN_ERR_INVALID);
	/* the file part itself without a name is not the file */
	expect_open_s("--" B "\r\nContent-Disposition: form-data; filename=\"file\"\r\n\r\nx" DELIM
	              "--", 20480, CN_ERR_INVALID);
	/* a NUL inside a name or filename ("file\0x" must not read as "file") */
	static const char nul_name[] = "--" B "\r\nContent-Disposition: form-data; name=\"file\0x\"; "
	                               "filename=\"f\"\r\n\r\nx" DELIM "--";
	static const char nul_file[] = "--" B "\r\nContent-Disposition: form-data; name=\"file\"; "
	                               "filename=\"f\0g\"\r\n\r\nx" DELIM "--";
	cn_buf nb;
	cn_buf_init(&nb);
	appn(&nb, nul_name, sizeof nul_name - 1);
	ctx = "NUL in name";
	expect_open(&nb, 20480, CN_ERR_INVALID);
	nb.len = 0;
	appn(&nb, nul_file, sizeof nul_file - 1);
	ctx = "NUL in filename";
	expect_open(&nb, 20480, CN_ERR_INVALID);
	cn_buf_fini(&nb);
}

TEST(errors_headers_without_blank_line)
{
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n", 20480,
	              CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"a\"", 20480,
	              CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"file\"\r\n\r", 20480,
	              CN_ERR_INVALID);
	expect_open_s("--" B "\r\n", 20480, CN_ERR_INVALID);
	expect_open_s("--" B "\r\n\r", 20480, CN_ERR_INVALID);
	expect_open_s("--" B " ", 20480, CN_ERR_INVALID);
}

TEST(errors_body_ends_inside_a_field)
{
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n", 20480,
	              CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nabc", 20480,
	              CN_ERR_INVALID);
	expect_open_s("--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nabc\r\n--"
	              "----WebKitFormBoundary7MA4YWxkTrZu0g", 20480, CN_ERR_INVALID);
	/* a long value: the parser has handed most of it to the field before EOF */
	cn_buf b;
	cn_buf_init(&b);
	app(&b, "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n");
	for (int i = 0; i < 1000; i++)
		app(&b, "0123456789\r\n--");
	ctx = "long value then EOF";
	expect_open(&b, 1 << 20, CN_ERR_INVALID);
	cn_buf_fini(&b);
}

TEST(errors_body_ends_inside_the_file)
{
	expect_file("--" B "\r\n" FILEHDR, -(ssize_t)CN_ERR_INVALID, NULL);
	expect_file("--" B "\r\n" FILEHDR "content", -(ssize_t)CN_ERR_INVALID, NULL);
	expect_file("--" B "\r\n" FILEHDR "content\r\n--" "----WebKitFormBoundary7MA4YWxkTrZu0g",
	            -(ssize_t)CN_ERR_INVALID, NULL);
	expect_file("--" B "\r\n" FILEHDR "content\r", -(ssize_t)CN_ERR_INVALID, NULL);
	/* a long file without its delimiter */
	char *file = content(150000, 11);
	cn_buf b;
	cn_buf_init(&b);
	app(&b, "--" B "\r\n" FILEHDR);
	appn(&b, file, 150000);
	for (size_t pi = 0; pi < NPIECES; pi++) {
		cn_form f;
		treader t;
		CHECK_EQ_INT(open_body(&f, &t, &b, pieces[pi], 20480), CN_OK);
		cn_buf got;
		cn_buf_init(&got);
		CHECK_EQ_INT(read_file(&f, &got, 65536), -(ssize_t)CN_ERR_INVALID);
		/* what was handed out before the error is the file's beginning */
		CHECK(got.len <= 150000);
		if (got.len <= 150000)
			CHECK_MEM(got.p, file, got.len);
		CHECK_EQ_INT(t.after_end, 0);
		cn_buf_fini(&got);
		cn_form_fini(&f);
	}
	cn_buf_fini(&b);
	free(file);
}

/* max_pre: refused when the fields are over it; the smallest max_pre that opens a form is
 * the same for every piece size, lies between the names+values and the bytes before the
 * file, and one less is refused with CN_ERR_TOO_LARGE for every piece size. */
TEST(errors_max_pre)
{
	cn_buf b;
	char big[3000];
	memset(big, 'v', sizeof big);
	cn_buf_init(&b);
	field(&b, true, "a", big, 1000);
	field(&b, false, "b", big, 1000);
	field(&b, false, "c", big, 1000);
	app(&b, DELIM "\r\n" FILEHDR "x" DELIM "--");
	ctx = "3 x 1000 bytes, max_pre 2000";
	expect_open(&b, 2000, CN_ERR_TOO_LARGE);
	ctx = "3 x 1000 bytes, max_pre 0";
	expect_open(&b, 0, CN_ERR_TOO_LARGE);
	ctx = "3 x 1000 bytes, max_pre 20480";
	expect_open(&b, 20480, CN_OK);

	/* the exact limit */
	size_t lo = 0, hi = b.len; /* hi opens */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		cn_form f;
		treader t;
		cn_err e = open_body(&f, &t, &b, 0, mid);
		cn_form_fini(&f);
		if (e == CN_OK)
			hi = mid;
		else
			lo = mid + 1;
	}
	size_t pre = strstr(b.p, "name=\"file\"") - b.p; /* bytes before the file part */
	CHECK(lo >= 3 * 1001);
	CHECK(lo <= pre + strlen(FILEHDR));
	ctx = "exact max_pre";
	expect_open(&b, lo, CN_OK);
	ctx = "exact max_pre - 1";
	expect_open(&b, lo - 1, CN_ERR_TOO_LARGE);
	cn_buf_fini(&b);

	/* S3's 20 KiB: one 25 KiB field is refused, a long preamble too */
	cn_buf_init(&b);
	char *v = malloc(25 * 1024);
	memset(v, 'p', 25 * 1024);
	field(&b, true, "policy", v, 25 * 1024);
	app(&b, DELIM "\r\n" FILEHDR "x" DELIM "--");
	ctx = "25 KiB field";
	expect_open(&b, 20480, CN_ERR_TOO_LARGE);
	cn_buf_fini(&b);
	cn_buf_init(&b);
	appn(&b, v, 25 * 1024);
	app(&b, DELIM "\r\n" FILEHDR "x" DELIM "--");
	ctx = "25 KiB preamble";
	expect_open(&b, 20480, CN_ERR_TOO_LARGE);
	/* the same preamble, 100 KiB of it, with room: skipped across buffer refills */
	cn_buf_fini(&b);
	cn_buf_init(&b);
	for (int i = 0; i < 4; i++)
		appn(&b, v, 25 * 1024);
	app(&b, "\r\n--" "----WebKitFormBoundary7MA4YWxkTrZu0g" DELIM "\r\n" FILEHDR "x" DELIM "--");
	ctx = "100 KiB preamble, max_pre 1 MiB";
	expect_open(&b, 1 << 20, CN_OK);
	cn_buf_fini(&b);
	free(v);
}

/* A part's headers over 8 KiB are refused; at the limit the verdict does not depend on how
 * the body was split into reads. */
TEST(errors_part_headers_over_8k)
{
	cn_buf b;
	char pad[10000];
	memset(pad, 'h', sizeof pad);
	cn_buf_init(&b);
	app(&b, "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: ");
	appn(&b, pad, 9000);
	app(&b, "\r\n\r\nv" DELIM "\r\n" FILEHDR "x" DELIM "--");
	ctx = "9 KiB header";
	expect_open(&b, 1 << 20, CN_ERR_TOO_LARGE);
	cn_buf_fini(&b);
	/* the same without the blank line, then EOF: too large, not invalid (8 KiB were seen) */
	cn_buf_init(&b);
	app(&b, "--" B "\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: ");
	appn(&b, pad, 9000);
	ctx = "9 KiB header, then EOF";
	expect_open(&b, 1 << 20, CN_ERR_TOO_LARGE);
	cn_buf_fini(&b);

	/* header blocks (the headers with their CRLFs, without the blank line) around 8192 */
	static const char cd[] = "Content-Disposition: form-data; name=\"file\"\r\nX-Pad: ";
	for (size_t hl = 8185; hl <= 8198; hl++) {
		cn_buf_init(&b);
		app(&b, "--" B "\r\n" );
		app(&b, cd);
		appn(&b, pad, hl - (sizeof cd - 1) - 2);
		app(&b, "\r\n\r\nfile content" DELIM "--");
		cn_form f;
		treader t;
		cn_err whole = open_body(&f, &t, &b, 0, 1 << 20);
		cn_form_fini(&f);
		CHECK(whole == CN_OK || whole == CN_ERR_TOO_LARGE);
		CHECK_EQ_INT(whole, hl <= 8192 ? CN_OK : CN_ERR_TOO_LARGE);
		char what[64];
		snprintf(what, sizeof what, "header block of %zu bytes", hl);
		ctx = what;
		expect_open(&b, 1 << 20, whole);
		cn_buf_fini(&b);
	}
}

TEST(errors_reader_error_propagates)
{
	cn_buf b;
	cn_buf_init(&b);
	app(&b, "pre\r\n--" B " \r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n-"
	        DELIM "\r\n" FILEHDR "file data");
	size_t file_start = b.len - 9;
	app(&b, DELIM);
	size_t file_end = b.len;
	app(&b, "--\r\n");
	for (size_t pi = 0; pi < NPIECES; pi++)
		for (size_t at = 0; at <= b.len; at++) {
			int before = t_failed_checks;
			cn_form f;
			treader t;
			tinit(&t, b.p, b.len, pieces[pi]);
			t.fail_at = at;
			cn_err e = cn_form_open(&f, &t.r, B, 20480);
			if (at < file_start) {
				CHECK_EQ_INT(e, CN_ERR_IO);
			} else {
				CHECK_EQ_INT(e, CN_OK);
				if (e == CN_OK) {
					cn_buf got;
					cn_buf_init(&got);
					ssize_t n = read_file(&f, &got, 4);
					CHECK_EQ_INT(n, at < file_end ? -(ssize_t)CN_ERR_IO : 9);
					cn_buf_fini(&got);
				}
			}
			CHECK_EQ_INT(t.after_end, 0);
			cn_form_fini(&f);
			if (t_failed_checks != before)
				fprintf(stderr, "  reader fails at %zu, pieces %zu\n", at, pieces[pi]);
		}
	cn_buf_fini(&b);
}

static void many_fields(cn_buf *b, int n)
{
	cn_buf_init(b);
	for (int i = 0; i < n; i++) {
		char name[16], v[16];
		snprintf(name, sizeof name, "f%d", i);
		snprintf(v, sizeof v, "v%d", i);
		field(b, i == 0, name, v, strlen(v));
	}
	app(b, n ? DELIM "\r\n" : "--" B "\r\n");
	app(b, FILEHDR "x" DELIM "--");
}

TEST(errors_too_many_fields)
{
	cn_buf b;
	many_fields(&b, CN_FORM_MAX_FIELDS);
	for (size_t pi = 0; pi < NPIECES; pi++) {
		cn_form f;
		treader t;
		CHECK_EQ_INT(open_body(&f, &t, &b, pieces[pi], 20480), CN_OK);
		CHECK_EQ_INT(f.nfields, CN_FORM_MAX_FIELDS);
		CHECK_EQ_STR(f.fields[CN_FORM_MAX_FIELDS - 1].name, "f63");
		CHECK(cn_form_get(&f, "F63") && !strcmp(cn_form_get(&f, "F63")->value, "v63"));
		cn_form_fini(&f);
	}
	cn_buf_fini(&b);
	many_fields(&b, CN_FORM_MAX_FIELDS + 1);
	ctx = "65 fields";
	expect_open(&b, 20480, CN_ERR_INVALID);
	cn_buf_fini(&b);
	many_fields(&b, 200);
	ctx = "200 fields";
	expect_open(&b, 1 << 20, CN_ERR_INVALID);
	cn_buf_fini(&b);
}

TEST(bad_boundary_argument)
{
	cn_buf b;
	cn_buf_init(&b);
	app(&b, "----\r\n" FILEHDR "x\r\n------");
	cn_form f;
	treader t;
	tinit(&t, b.p, b.len, 0);
	CHECK_EQ_INT(cn_form_open(&f, &t.r, "", 20480), CN_ERR_INVALID);
	cn_form_fini(&f);
	char b71[72], b70[71];
	memset(b71, 'q', 71);
	b71[71] = 0;
	memcpy(b70, b71, 70);
	b70[70] = 0;
	tinit(&t, b.p, b.len, 0);
	CHECK_EQ_INT(cn_form_open(&f, &t.r, b71, 20480), CN_ERR_INVALID);
	cn_form_fini(&f);
	cn_buf_fini(&b);
	/* a 70-character boundary works */
	cn_buf_init(&b);
	app(&b, "--");
	app(&b, b70);
	app(&b, "\r\n" FILEHDR "abc\r\n--");
	app(&b, b70);
	app(&b, "--");
	for (size_t pi = 0; pi < NPIECES; pi++) {
		tinit(&t, b.p, b.len, pieces[pi]);
		CHECK_EQ_INT(cn_form_open(&f, &t.r, b70, 20480), CN_OK);
		cn_buf got;
		cn_buf_init(&got);
		CHECK_EQ_INT(read_file(&f, &got, 2), 3);
		CHECK_MEM(got.p, "abc", 3);
		cn_buf_fini(&got);
		cn_form_fini(&f);
	}
	cn_buf_fini(&b);
}

int main(void)
{
	RUN(boundary_extraction);
	RUN(file_of_0_1_and_small_sizes);
	RUN(file_over_200k_wraps_the_buffer);
	RUN(preamble);
	RUN(transport_padding);
	RUN(file_name_case_filename_and_type);
	RUN(what_follows_the_file_is_not_needed);
	RUN(errors_no_delimiter);
	RUN(errors_no_file_part);
	RUN(errors_bad_parts);
	RUN(errors_headers_without_blank_line);
	RUN(errors_body_ends_inside_a_field);
	RUN(errors_body_ends_inside_the_file);
	RUN(errors_max_pre);
	RUN(errors_part_headers_over_8k);
	RUN(errors_reader_error_propagates);
	RUN(errors_too_many_fields);
	RUN(bad_boundary_argument);
	TEST_END();
}

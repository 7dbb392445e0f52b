/* form: libFuzzer driver for the streaming multipart/form-data parser (src/s3/form.c). The
 * first input byte picks the read sizes, the file's read chunk and max_pre; the rest is the
 * body, with the fixed boundary "Bd". The body is parsed twice: handed out whole, and in
 * pieces of pseudo-random sizes (1 to 249 bytes, from the first byte); both must agree on
 * the result, the fields, filename, Content-Type and the file's content and end. Each run
 * checks the contract: only its error codes, fields within bounds and NUL-terminated, no
 * delimiter inside a value or the file, names and values within max_pre, file reads within
 * their length and a sticky end, the body reader never called after its end or for 0
 * bytes. The body's first line (up to CR/LF) is also given to cn_form_boundary as a
 * Content-Type; when it names a boundary, the body is parsed with that one too. A third
 * run fails the body reader at an offset from the first byte: its error must come back. */
#include "s3/form.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FNV0 1469598103934665603ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

typedef struct freader {
	cn_reader r;
	const char *p;
	size_t len, off;
	size_t maxp;     /* 0: whole */
	uint32_t x;      /* piece size state */
	size_t fail_at;  /* SIZE_MAX: never */
	bool ended;
} freader;

static ssize_t fread_(cn_reader *r, void *buf, size_t len)
{
	freader *t = (freader *)r;
	if (t->ended || len == 0)
		abort(); /* called after its end, or for nothing */
	if (t->off >= t->fail_at) {
		t->ended = true;
		return -(ssize_t)CN_ERR_IO;
	}
	size_t n = t->len - t->off;
	if (n == 0) {
		t->ended = true;
		return 0;
	}
	if (t->maxp) {
		t->x = t->x * 1103515245u + 12345u;
		size_t piece = 1 + (t->x >> 16) % t->maxp;
		if (n > piece)
			n = piece;
	}
	if (n > len)
		n = len;
	if (t->fail_at != SIZE_MAX && n > t->fail_at - t->off)
		n = t->fail_at - t->off;
	memcpy(buf, t->p + t->off, n);
	t->off += n;
	return (ssize_t)n;
}

typedef struct outcome {
	cn_err err;
	size_t nfields;
	uint64_t fields_hash, file_hash;
	ssize_t file; /* bytes, or the negative error */
} outcome;

static void parse(const char *in, size_t n, const char *boundary, size_t maxp, uint32_t seed,
                  size_t fail_at, size_t chunk, size_t max_pre, outcome *o)
{
	freader t = { .r.read = fread_, .p = in, .len = n, .maxp = maxp, .x = seed,
	              .fail_at = fail_at };
	size_t bl = strlen(boundary);
	char delim[CN_FORM_MAX_BOUNDARY + 5];
	memcpy(delim, "\r\n--", 4);
	memcpy(delim + 4, boundary, bl);
	size_t dlen = bl + 4;
	cn_form f;

	memset(o, 0, sizeof *o);
	o->fields_hash = o->file_hash = FNV0;
	o->err = cn_form_open(&f, &t.r, boundary, max_pre);
	switch (o->err) {
	case CN_OK:
	case CN_ERR_INVALID:
	case CN_ERR_TOO_LARGE:
	case CN_ERR_NOT_FOUND:
		break;
	case CN_ERR_IO:
		if (fail_at == SIZE_MAX)
			abort();
		break;
	default:
		abort();
	}
	if (o->err != CN_OK) {
		cn_form_fini(&f);
		return;
	}
	if (f.nfields > CN_FORM_MAX_FIELDS || !f.filename)
		abort();
	size_t pre = 0;
	o->nfields = f.nfields;
	for (size_t i = 0; i < f.nfields; i++) {
		const cn_form_field *fl = &f.fields[i];
		size_t nl = strlen(fl->name);
		if (!nl || fl->value[fl->len] != 0 || !strcasecmp(fl->name, "file"))
			abort();
		if (memmem(fl->value, fl->len, delim, dlen))
			abort();
		const cn_form_field *g = cn_form_get(&f, fl->name);
		if (!g || g > fl)
			abort(); /* the first of that name */
		pre += nl + fl->len;
		o->fields_hash = fnv(o->fields_hash, fl->name, nl + 1);
		o->fields_hash = fnv(o->fields_hash, fl->value, fl->len + 1);
	}
	if (pre > max_pre || pre > n)
		abort();
	o->fields_hash = fnv(o->fields_hash, f.filename, strlen(f.filename) + 1);
	if (f.file_type)
		o->fields_hash = fnv(o->fields_hash, f.file_type, strlen(f.file_type) + 1);

	char *content = malloc(n + 1), *tmp = malloc(chunk);
	size_t got = 0;
	for (;;) {
		ssize_t r = f.file.read(&f.file, tmp, chunk);
		if (r < 0) {
			if (r != -(ssize_t)CN_ERR_INVALID &&
			    !(r == -(ssize_t)CN_ERR_IO && fail_at != SIZE_MAX))
				abort();
			o->file = r;
			break;
		}
		if ((size_t)r > chunk || got + (size_t)r > n)
			abort();
		if (r == 0) {
			if (f.file.read(&f.file, tmp, chunk) != 0)
				abort(); /* the end is sticky */
			o->file = (ssize_t)got;
			break;
		}
		memcpy(content + got, tmp, (size_t)r);
		got += (size_t)r;
	}
	if (memmem(content, got, delim, dlen))
		abort();
	o->file_hash = fnv(o->file_hash, content, got);
	free(content);
	free(tmp);
	cn_form_fini(&f);
}

static bool differ(const outcome *x, const outcome *y)
{
	return x->err != y->err || x->nfields != y->nfields || x->fields_hash != y->fields_hash ||
	       x->file != y->file || x->file_hash != y->file_hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned ctl = data[0];
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	size_t maxp = 1 + (ctl & 31) * 8;
	size_t chunk = (ctl >> 5) == 0 ? 1 : (size_t)(ctl >> 5) * 37;
	size_t max_pre = (ctl & 0x10) ? 200 : 20480;
	outcome a, b, c;

	parse(in, n, "Bd", 0, 0, SIZE_MAX, 65536, max_pre, &a);
	parse(in, n, "Bd", maxp, ctl, SIZE_MAX, chunk, max_pre, &b);
	if (differ(&a, &b))
		abort();

	/* the reader fails somewhere: its error comes back, or the verdict came before it */
	size_t fail_at = n ? (ctl * 7919u) % (n + 1) : 0;
	parse(in, n, "Bd", maxp, ctl, fail_at, chunk, max_pre, &c);
	if (c.err != CN_ERR_IO && c.err != a.err)
		abort();
	if (c.err == CN_OK && c.file != -(ssize_t)CN_ERR_IO && (c.file != a.file ||
	                                                         c.file_hash != a.file_hash))
		abort();

	/* the first line as a Content-Type */
	size_t ll = 0;
	while (ll < n && ll < 512 && in[ll] != '\r' && in[ll] != '\n')
		ll++;
	char bd[CN_FORM_MAX_BOUNDARY + 1];
	if (cn_form_boundary((cn_str){ in, ll }, bd)) {
		size_t bl = strlen(bd);
		if (bl == 0 || bl > CN_FORM_MAX_BOUNDARY)
			abort();
		for (size_t i = 0; i < bl; i++)
			if ((unsigned char)bd[i] < 0x20 || bd[i] == 0x7f)
				abort();
		parse(in, n, bd, 0, 0, SIZE_MAX, 65536, max_pre, &a);
		parse(in, n, bd, maxp, ctl, SIZE_MAX, chunk, max_pre, &b);
		if (differ(&a, &b))
			abort();
	}
	return 0;
}

/* s3/form.c: multipart/form-data for POST object uploads, streamed (contract in form.h).
 *
 * One buffer of FORM_BUF bytes holds what was read and not yet consumed (buf[beg, end)).
 * The fields are small and copied out; the file part's content is handed to the caller
 * in place, keeping back the last dlen - 1 bytes until more arrive, so a delimiter split
 * across two reads is still found. */
#include "s3/form.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FORM_BUF (64 * 1024)
#define MAX_PART_HEADERS 8192

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

bool cn_form_boundary(cn_str ct, char out[CN_FORM_MAX_BOUNDARY + 1])
{
	static const char type[] = "multipart/form-data";
	size_t i = 0, tl = sizeof(type) - 1;

	if (ct.len < tl || strncasecmp(ct.p, type, tl) != 0)
		return false;
	i = tl;
	while (i < ct.len) {
		/* ; name=value, OWS around */
		while (i < ct.len && (ct.p[i] == ' ' || ct.p[i] == '\t'))
			i++;
		if (i >= ct.len)
			break;
		if (ct.p[i] != ';')
			return false;
		i++;
		while (i < ct.len && (ct.p[i] == ' ' || ct.p[i] == '\t'))
			i++;
		size_t ns = i;
		while (i < ct.len && ct.p[i] != '=' && ct.p[i] != ';')
			i++;
		size_t nl = i - ns;
		if (i >= ct.len || ct.p[i] != '=')
			continue; /* a parameter without a value: ignored */
		i++;
		size_t n = 0;
		bool quoted = i < ct.len && ct.p[i] == '"';
		char val[CN_FORM_MAX_BOUNDARY + 1];
		bool too_long = false;
		if (quoted) {
			i++;
			while (i < ct.len && ct.p[i] != '"') {
				char c = ct.p[i];
				if (c == '\\' && i + 1 < ct.len)
					c = ct.p[++i];
				if (n < CN_FORM_MAX_BOUNDARY)
					val[n++] = c;
				else
					too_long = true;
				i++;
			}
			if (i >= ct.len)
				return false; /* unterminated quote */
			i++;
		} else {
			while (i < ct.len && ct.p[i] != ';' && ct.p[i] != ' ' && ct.p[i] != '\t') {
				if (n < CN_FORM_MAX_BOUNDARY)
					val[n++] = ct.p[i];
				else
					too_long = true;
				i++;
			}
		}
		if (nl == 8 && strncasecmp(ct.p + ns, "boundary", 8) == 0) {
			if (too_long || n == 0)
				return false;
			/* out is a C string: a NUL would cut the boundary short (to "" even); no
			 * control character is a boundary character (RFC 2046 bchars) */
			for (size_t k = 0; k < n; k++)
				if ((unsigned char)val[k] < 0x20 || val[k] == 0x7f)
					return false;
			memcpy(out, val, n);
			out[n] = 0;
			return true;
		}
	}
	return false;
}

/* Reads more of the body after moving the unread bytes to the front. Returns the number
 * of new bytes (0 at EOF, with f->eof set) or a negative error. */
static ssize_t fill(cn_form *f)
{
	if (f->eof)
		return 0;
	if (f->beg > 0) {
		memmove(f->buf, f->buf + f->beg, f->end - f->beg);
		f->end -= f->beg;
		f->beg = 0;
	}
	if (f->end == f->cap)
		return -CN_ERR_TOO_LARGE; /* callers never ask with a full buffer */
	ssize_t n = f->body->read(f->body, f->buf + f->end, f->cap - f->end);
	if (n < 0)
		return n;
	if (n == 0)
		f->eof = true;
	f->end += (size_t)n;
	return n;
}

/* Makes at least `want` unread bytes available; false when the body ends first (*err 0)
 * or fails (*err set). */
static bool need(cn_form *f, size_t want, cn_err *err)
{
	*err = CN_OK;
	while (f->end - f->beg < want) {
		ssize_t n = fill(f);
		if (n < 0) {
			*err = (cn_err)-n;
			return false;
		}
		if (n == 0)
			return false;
	}
	return true;
}

/* Position of pat in the unread bytes, or -1. */
static ssize_t find(const cn_form *f, const char *pat, size_t plen)
{
	const char *p = memmem(f->buf + f->beg, f->end - f->beg, pat, plen);
	return p ? p - (f->buf + f->beg) : -1;
}

/* Reads bytes up to the next delimiter into a new malloc'd string (NUL-terminated),
 * consuming the delimiter; *budget counts the bytes against max_pre. */
static cn_err read_value(cn_form *f, char **out, size_t *outlen, size_t *budget)
{
	size_t cap = 256, n = 0;
	char *v = malloc(cap);
	if (!v)
		return CN_ERR_NOMEM;
	for (;;) {
		ssize_t at = find(f, f->delim, f->dlen);
		size_t avail = f->end - f->beg;
		size_t take = at >= 0 ? (size_t)at : (avail >= f->dlen ? avail - (f->dlen - 1) : 0);
		if (take > *budget) {
			free(v);
			return CN_ERR_TOO_LARGE;
		}
		if (n + take + 1 > cap) {
			while (n + take + 1 > cap)
				cap *= 2;
			char *nv = realloc(v, cap);
			if (!nv) {
				free(v);
				return CN_ERR_NOMEM;
			}
			v = nv;
		}
		memcpy(v + n, f->buf + f->beg, take);
		n += take;
		f->beg += take;
		*budget -= take;
		if (at >= 0) {
			f->beg += f->dlen;
			v[n] = 0;
			*out = v;
			*outlen = n;
			return CN_OK;
		}
		ssize_t r = fill(f);
		if (r < 0) {
			free(v);
			return (cn_err)-r;
		}
		if (r == 0) {
			free(v);
			return CN_ERR_INVALID; /* the body ended inside a field */
		}
	}
}

/* One parameter of a Content-Disposition value (name="..." or name=token) as a malloc'd
 * string; NULL when absent (*err CN_OK) or on error. */
static char *disp_param(const char *p, size_t len, const char *name, cn_err *err)
{
	size_t nl = strlen(name), i = 0;
	*err = CN_OK;
	while (i < len) {
		while (i < len && p[i] != ';')
			i++;
		if (i >= len)
			break;
		i++;
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		size_t ns = i;
		while (i < len && p[i] != '=' && p[i] != ';')
			i++;
		size_t e = i;
		while (e > ns && (p[e - 1] == ' ' || p[e - 1] == '\t'))
			e--;
		if (i >= len || p[i] != '=')
			continue;
		i++;
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		bool match = e - ns == nl && strncasecmp(p + ns, name, nl) == 0;
		char *v = match ? malloc(len - i + 1) : NULL;
		if (match && !v) {
			*err = CN_ERR_NOMEM;
			return NULL;
		}
		size_t n = 0;
		if (i < len && p[i] == '"') {
			i++;
			while (i < len && p[i] != '"') {
				char c = p[i];
				if (c == '\\' && i + 1 < len)
					c = p[++i];
				if (v)
					v[n++] = c;
				i++;
			}
			if (i >= len) {
				free(v);
				*err = CN_ERR_INVALID;
				return NULL;
			}
			i++;
		} else {
			while (i < len && p[i] != ';' && p[i] != ' ' && p[i] != '\t') {
				if (v)
					v[n++] = p[i];
				i++;
			}
		}
		if (v) {
			v[n] = 0;
			if (strlen(v) != n) { /* a NUL inside: "file\0x" would read as "file" */
				free(v);
				*err = CN_ERR_INVALID;
				return NULL;
			}
			return v;
		}
	}
	return NULL;
}

/* Parses one part's header block buf[beg, beg + len) (without its blank line). */
static cn_err part_headers(cn_form *f, size_t len, char **name, char **filename, char **type)
{
	const char *p = f->buf + f->beg, *end = p + len;
	cn_err e = CN_OK;
	bool disp = false;

	*name = *filename = *type = NULL;
	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		if (!eol)
			eol = end;
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon)
			return CN_ERR_INVALID;
		size_t nl = (size_t)(colon - p);
		const char *v = colon + 1;
		while (v < eol && (*v == ' ' || *v == '\t'))
			v++;
		size_t vl = (size_t)(eol - v);
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			vl--;
		if (nl == 19 && strncasecmp(p, "content-disposition", 19) == 0 && !disp) {
			disp = true;
			if (vl < 9 || strncasecmp(v, "form-data", 9) != 0 ||
			    (vl > 9 && v[9] != ';' && v[9] != ' ' && v[9] != '\t'))
				return CN_ERR_INVALID;
			*name = disp_param(v, vl, "name", &e);
			if (e != CN_OK)
				return e;
			*filename = disp_param(v, vl, "filename", &e);
			if (e != CN_OK)
				return e;
		} else if (nl == 12 && strncasecmp(p, "content-type", 12) == 0 && !*type) {
			*type = malloc(vl + 1);
			if (!*type)
				return CN_ERR_NOMEM;
			memcpy(*type, v, vl);
			(*type)[vl] = 0;
		}
		p = eol + 2;
	}
	if (!*name || !**name)
		return CN_ERR_INVALID;
	return CN_OK;
}

static ssize_t file_read(cn_reader *rd, void *out, size_t len)
{
	cn_form *f = (cn_form *)rd;
	cn_err e;

	for (;;) {
		if (f->done || len == 0)
			return 0;
		ssize_t at = find(f, f->delim, f->dlen);
		size_t avail = f->end - f->beg;
		size_t safe = at >= 0 ? (size_t)at : (avail >= f->dlen ? avail - (f->dlen - 1) : 0);
		if (at == 0) {
			f->done = true;
			return 0;
		}
		if (safe > 0) {
			size_t n = safe < len ? safe : len;
			memcpy(out, f->buf + f->beg, n);
			f->beg += n;
			return (ssize_t)n;
		}
		if (!need(f, avail + 1, &e))
			return e != CN_OK ? -(ssize_t)e : -(ssize_t)CN_ERR_INVALID; /* ended in the file */
	}
}

cn_err cn_form_open(cn_form *f, cn_reader *body, const char *boundary, size_t max_pre)
{
	size_t bl = strlen(boundary), budget = max_pre;
	cn_err e;

	memset(f, 0, sizeof *f);
	f->file.read = file_read;
	f->body = body;
	if (bl == 0 || bl > CN_FORM_MAX_BOUNDARY)
		return CN_ERR_INVALID;
	memcpy(f->delim, "\r\n--", 4);
	memcpy(f->delim + 4, boundary, bl);
	f->dlen = bl + 4;
	f->cap = FORM_BUF;
	f->buf = malloc(f->cap);
	if (!f->buf)
		return CN_ERR_NOMEM;

	/* The first delimiter: "--boundary" at the very start, or after a preamble line. */
	if (!need(f, f->dlen - 2, &e))
		return e != CN_OK ? e : CN_ERR_INVALID;
	if (memcmp(f->buf, f->delim + 2, f->dlen - 2) == 0) {
		f->beg = f->dlen - 2;
	} else {
		for (;;) {
			ssize_t at = find(f, f->delim, f->dlen);
			if (at >= 0) {
				if ((size_t)at > budget)
					return CN_ERR_TOO_LARGE;
				budget -= (size_t)at;
				f->beg += (size_t)at + f->dlen;
				break;
			}
			size_t skip = f->end - f->beg >= f->dlen ? f->end - f->beg - (f->dlen - 1) : 0;
			if (skip > budget)
				return CN_ERR_TOO_LARGE;
			budget -= skip;
			f->beg += skip;
			ssize_t r = fill(f);
			if (r < 0)
				return (cn_err)-r;
			if (r == 0)
				return CN_ERR_INVALID;
		}
	}

	for (;;) {
		/* After a delimiter: "--" closes, else optional padding then CRLF. */
		if (!need(f, 2, &e))
			return e != CN_OK ? e : CN_ERR_INVALID;
		if (f->buf[f->beg] == '-' && f->buf[f->beg + 1] == '-')
			return CN_ERR_NOT_FOUND;
		for (;;) {
			if (!need(f, 1, &e))
				return e != CN_OK ? e : CN_ERR_INVALID;
			char c = f->buf[f->beg];
			if (c != ' ' && c != '\t')
				break;
			if (budget == 0)
				return CN_ERR_TOO_LARGE;
			budget--;
			f->beg++;
		}
		if (!need(f, 2, &e))
			return e != CN_OK ? e : CN_ERR_INVALID;
		if (f->buf[f->beg] != '\r' || f->buf[f->beg + 1] != '\n')
			return CN_ERR_INVALID;
		f->beg += 2;

		/* The part's headers, up to the blank line. A part with no headers at all starts
		 * with that blank line's CRLF directly. */
		ssize_t hend;
		for (;;) {
			if (!need(f, 2, &e))
				return e != CN_OK ? e : CN_ERR_INVALID;
			if (f->buf[f->beg] == '\r' && f->buf[f->beg + 1] == '\n') {
				hend = 0;
				break;
			}
			hend = find(f, "\r\n\r\n", 4);
			if (hend >= 0) {
				hend += 2; /* keep the last header's CRLF out, skip the blank line below */
				break;
			}
			/* no blank line in n unread bytes: it starts at n - 3 or later, so the block
			 * (hend) is at least n - 1 bytes; over the limit only when n > MAX + 1 (a
			 * smaller n would refuse a block of exactly MAX depending on the reads) */
			if (f->end - f->beg > MAX_PART_HEADERS + 1)
				return CN_ERR_TOO_LARGE;
			ssize_t r = fill(f);
			if (r < 0)
				return (cn_err)-r;
			if (r == 0)
				return CN_ERR_INVALID;
		}
		if ((size_t)hend > MAX_PART_HEADERS)
			return CN_ERR_TOO_LARGE;
		if ((size_t)hend + 2 > budget)
			return CN_ERR_TOO_LARGE;
		budget -= (size_t)hend + 2;
		char *name, *filename, *type;
		e = part_headers(f, hend > 0 ? (size_t)hend - 2 : 0, &name, &filename, &type);
		if (e != CN_OK) {
			free(name);
			free(filename);
			free(type);
			return e;
		}
		f->beg += (size_t)hend + 2;
		if (strcasecmp(name, "file") == 0) {
			free(name);
			f->filename = filename ? filename : strdup("");
			f->file_type = type;
			return f->filename ? CN_OK : CN_ERR_NOMEM;
		}
		free(filename);
		free(type);
		if (f->nfields == CN_FORM_MAX_FIELDS) {
			free(name);
			return CN_ERR_INVALID;
		}
		size_t nl = strlen(name);
		if (nl > budget) {
			free(name);
			return CN_ERR_TOO_LARGE;
		}
		budget -= nl;
		cn_form_field *fl = &f->fields[f->nfields];
		fl->name = name;
		e = read_value(f, &fl->value, &fl->len, &budget);
		if (e != CN_OK) {
			free(name);
			fl->name = NULL;
			return e;
		}
		f->nfields++;
	}
}

const cn_form_field *cn_form_get(const cn_form *f, const char *name)
{
	for (size_t i = 0; i < f->nfields; i++) {
		const char *a = f->fields[i].name, *b = name;
		while (*a && lower((unsigned char)*a) == lower((unsigned char)*b))
			a++, b++;
		if (!*a && !*b)
			return &f->fields[i];
	}
	return NULL;
}

void cn_form_fini(cn_form *f)
{
	for (size_t i = 0; i < f->nfields; i++) {
		free(f->fields[i].name);
		free(f->fields[i].value);
	}
	f->nfields = 0;
	free(f->filename);
	free(f->file_type);
	free(f->buf);
	f->filename = f->file_type = f->buf = NULL;
}

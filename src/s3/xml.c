/* xml.c: the s3 layer's XML (src/s3/xml.h) — an escaping writer that appends S3 response
 * bodies to a cn_buf, and a bounded DOM parser over expat for request bodies. The writer
 * always produces well-formed XML 1.0 from any bytes: & < > " ' become entity references,
 * TAB/LF/CR numeric references, and characters XML 1.0 cannot carry at all (other C0
 * controls, U+FFFE/U+FFFF, invalid UTF-8) become U+FFFD, as Go's encoding/xml does for
 * MinIO. The parser refuses any DOCTYPE (so no entity can ever be declared: no billion
 * laughs, no external entities) and enforces the limits of xml.h — depth, node count, and
 * total bytes of names plus text — so memory stays bounded whatever the input. */
#include "s3/xml.h"

#include <expat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XML_MAX_DEPTH 32
#define XML_MAX_NODES 20000
#define XML_MAX_TEXT (1024 * 1024) /* cn_xml_parse's default */

/* --- writer ----------------------------------------------------------------------------- */

/* Length of a valid UTF-8 sequence at p (XML Char only), or 0 when invalid. */
static size_t utf8_xml_char(const unsigned char *p, size_t len)
{
	unsigned char c = p[0];
	uint32_t cp;
	size_t n;
	if (c < 0xC2)
		return 0;
	if (c < 0xE0) {
		n = 2;
		cp = c & 0x1F;
	} else if (c < 0xF0) {
		n = 3;
		cp = c & 0x0F;
	} else if (c < 0xF5) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
		return 0;
	if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
		return 0;
	return n;
}

cn_err cn_xml_escape(cn_buf *b, const char *text, size_t len)
{
	size_t start = b->len;
	const unsigned char *p = (const unsigned char *)text;
	size_t i = 0;
	cn_err e = CN_OK;
	while (i < len && !e) {
		size_t run = i;
		while (run < len && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '&' &&
		       p[run] != '<' && p[run] != '>' && p[run] != '"' && p[run] != '\'')
			run++;
		if (run > i) {
			e = cn_buf_append(b, p + i, run - i);
			i = run;
			continue;
		}
		unsigned char c = p[i];
		const char *rep = NULL;
		size_t n = 1;
		switch (c) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&apos;"; break;
		case '\t': rep = "&#9;"; break;
		case '\n': rep = "&#10;"; break;
		case '\r': rep = "&#13;"; break;
		default:
			if (c >= 0x80 && (n = utf8_xml_char(p + i, len - i)) > 0) {
				e = cn_buf_append(b, p + i, n);
				i += n;
				continue;
			}
			n = 1;
			rep = "\xEF\xBF\xBD"; /* U+FFFD */
			break;
		}
		e = cn_buf_puts(b, rep);
		i += n;
	}
	if (e) {
		b->len = start;
		if (b->p)
			b->p[start] = 0;
	}
	return e;
}

cn_err cn_xml_decl(cn_buf *b)
{
	return cn_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
}

cn_err cn_xml_open(cn_buf *b, const char *tag, const char *xmlns)
{
	if (xmlns)
		return cn_buf_printf(b, "<%s xmlns=\"%s\">", tag, xmlns);
	return cn_buf_printf(b, "<%s>", tag);
}

cn_err cn_xml_close(cn_buf *b, const char *tag)
{
	return cn_buf_printf(b, "</%s>", tag);
}

cn_err cn_xml_elem_n(cn_buf *b, const char *tag, const char *text, size_t len)
{
	size_t start = b->len;
	cn_err e = cn_xml_open(b, tag, NULL);
	if (!e)
		e = cn_xml_escape(b, text, len);
	if (!e)
		e = cn_xml_close(b, tag);
	if (e && b->p) {
		b->len = start;
		b->p[start] = 0;
	}
	return e;
}

cn_err cn_xml_elem(cn_buf *b, const char *tag, const char *text)
{
	return cn_xml_elem_n(b, tag, text ? text : "", text ? strlen(text) : 0);
}

cn_err cn_xml_elemf(cn_buf *b, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return CN_ERR_NOMEM;
	cn_err e = cn_xml_elem_n(b, tag, s, (size_t)n);
	free(s);
	return e;
}

/* --- parser ----------------------------------------------------------------------------- */

typedef struct xml_ctx {
	XML_Parser p;
	cn_xml_node *root;
	cn_xml_node *stack[XML_MAX_DEPTH];
	cn_xml_node *last_child[XML_MAX_DEPTH]; /* tail of each open element's child list */
	size_t text_cap[XML_MAX_DEPTH];         /* capacity of each open element's text */
	int depth;
	size_t nodes;
	size_t bytes; /* names + text, all nodes */
	size_t max_bytes;
	cn_err err;
} xml_ctx;

static void xml_fail(xml_ctx *c, cn_err e)
{
	if (!c->err)
		c->err = e;
	XML_StopParser(c->p, XML_FALSE);
}

static const char *local_name(const char *name)
{
	const char *colon = strrchr(name, ':');
	return colon ? colon + 1 : name;
}

/* expat checked that the qualified name is an XML Name; after stripping the prefix, the
 * local part must still start like one (not empty, not '-', '.', a digit, U+00B7,
 * U+0300-U+036F, U+203F-U+2040), or the writer could not reproduce it. */
static bool local_name_ok(const char *ln)
{
	const unsigned char *u = (const unsigned char *)ln;
	if (!u[0] || u[0] == '-' || u[0] == '.' || (u[0] >= '0' && u[0] <= '9'))
		return false;
	if (u[0] == 0xC2 && u[1] == 0xB7)
		return false;
	if ((u[0] == 0xCC && u[1] >= 0x80) || (u[0] == 0xCD && u[1] <= 0xAF))
		return false;
	if (u[0] == 0xE2 && ((u[1] == 0x80 && u[2] == 0xBF) || (u[1] == 0x81 && u[2] == 0x80)))
		return false;
	return true;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
	xml_ctx *c = ud;
	if (c->err)
		return;
	if (c->depth >= XML_MAX_DEPTH || c->nodes >= XML_MAX_NODES) {
		xml_fail(c, CN_ERR_TOO_LARGE);
		return;
	}
	const char *ln = local_name(name);
	if (!local_name_ok(ln)) {
		xml_fail(c, CN_ERR_INVALID);
		return;
	}
	size_t nlen = strlen(ln);
	if (nlen > c->max_bytes - c->bytes) {
		xml_fail(c, CN_ERR_TOO_LARGE);
		return;
	}
	cn_xml_node *n = calloc(1, sizeof *n + nlen + 1);
	char *text = malloc(1);
	if (!n || !text) {
		free(n);
		free(text);
		xml_fail(c, CN_ERR_NOMEM);
		return;
	}
	n->name = (char *)(n + 1);
	memcpy(n->name, ln, nlen + 1);
	text[0] = 0;
	n->text = text;
	c->nodes++;
	c->bytes += nlen;
	if (c->depth == 0) {
		/* expat rejects a second root element itself; keep the first. */
		c->root = n;
	} else {
		int d = c->depth - 1;
		if (c->last_child[d])
			c->last_child[d]->next = n;
		else
			c->stack[d]->child = n;
		c->last_child[d] = n;
	}
	c->stack[c->depth] = n;
	c->last_child[c->depth] = NULL;
	c->text_cap[c->depth] = 1;
	c->depth++;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	xml_ctx *c = ud;
	if (c->err)
		return;
	CN_ASSERT(c->depth > 0);
	c->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	xml_ctx *c = ud;
	if (c->err || c->depth == 0 || len <= 0)
		return;
	size_t add = (size_t)len;
	if (add > c->max_bytes - c->bytes) {
		xml_fail(c, CN_ERR_TOO_LARGE);
		return;
	}
	int d = c->depth - 1;
	cn_xml_node *n = c->stack[d];
	size_t need = n->text_len + add + 1;
	if (need > c->text_cap[d]) {
		size_t cap = c->text_cap[d] * 2;
		if (cap < need)
			cap = need;
		char *t = realloc(n->text, cap);
		if (!t) {
			xml_fail(c, CN_ERR_NOMEM);
			return;
		}
		n->text = t;
		c->text_cap[d] = cap;
	}
	memcpy(n->text + n->text_len, s, add);
	n->text_len += add;
	n->text[n->text_len] = 0;
	c->bytes += add;
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
	xml_fail(ud, CN_ERR_INVALID);
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param,
                              const XML_Char *value, int value_len, const XML_Char *base,
                              const XML_Char *sysid, const XML_Char *pubid,
                              const XML_Char *notation)
{
	xml_fail(ud, CN_ERR_INVALID);
}

void cn_xml_free(cn_xml_node *root)
{
	/* Iterative over siblings, recursive over children (depth <= XML_MAX_DEPTH). */
	while (root) {
		cn_xml_node *next = root->next;
		cn_xml_free(root->child);
		free(root->text);
		free(root);
		root = next;
	}
}

cn_err cn_xml_parse(const char *p, size_t len, cn_xml_node **root)
{
	return cn_xml_parse_max(p, len, XML_MAX_TEXT, root);
}

cn_err cn_xml_parse_max(const char *p, size_t len, size_t max_bytes, cn_xml_node **root)
{
	*root = NULL;
	xml_ctx c;
	memset(&c, 0, sizeof c);
	c.max_bytes = max_bytes;
	/* S3 request bodies are UTF-8. Forcing it (a declared encoding is then ignored; bytes
	 * that are not UTF-8 fail) matches MinIO, whose Go decoder refuses other charsets, and
	 * keeps names consistent: expat's Latin-1 table admits name characters (U+00B5) that
	 * its UTF-8 table does not, so a re-serialised Latin-1 document could fail to parse. */
	c.p = XML_ParserCreate("UTF-8");
	if (!c.p)
		return CN_ERR_NOMEM;
	XML_SetUserData(c.p, &c);
	XML_SetElementHandler(c.p, on_start, on_end);
	XML_SetCharacterDataHandler(c.p, on_text);
	XML_SetStartDoctypeDeclHandler(c.p, on_doctype);
	XML_SetEntityDeclHandler(c.p, on_entity);
	XML_SetParamEntityParsing(c.p, XML_PARAM_ENTITY_PARSING_NEVER);

	/* XML_Parse takes an int length: feed large inputs in pieces. */
	const size_t piece = 1 << 20;
	size_t off = 0;
	do {
		size_t n = len - off < piece ? len - off : piece;
		int final = off + n == len;
		if (XML_Parse(c.p, p + off, (int)n, final) != XML_STATUS_OK) {
			if (!c.err)
				c.err = XML_GetErrorCode(c.p) == XML_ERROR_NO_MEMORY ? CN_ERR_NOMEM
				                                                    : CN_ERR_INVALID;
			break;
		}
		off += n;
	} while (off < len);
	if (!c.err && (!c.root || c.depth != 0))
		c.err = CN_ERR_INVALID;
	XML_ParserFree(c.p);
	if (c.err) {
		cn_xml_free(c.root);
		return c.err;
	}
	*root = c.root;
	return CN_OK;
}

const cn_xml_node *cn_xml_child(const cn_xml_node *n, const char *name)
{
	if (!n)
		return NULL;
	for (const cn_xml_node *ch = n->child; ch; ch = ch->next)
		if (!strcmp(ch->name, name))
			return ch;
	return NULL;
}

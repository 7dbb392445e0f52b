/* s3/xml: XML for S3 bodies — an escaping writer that appends to a cn_buf, and a small
 * bounded DOM built with expat for the request bodies S3 accepts (Delete, Tagging,
 * CompleteMultipartUpload, VersioningConfiguration, ...). Untrusted input: fuzzed
 * (fuzz/xml.c). Limits: depth 32, 20,000 nodes, 1 MiB of text in all (or the caller's
 * limit); DOCTYPE/entities refused (no billion laughs, no external entities). */
#ifndef CN_S3_XML_H
#define CN_S3_XML_H

#include "util/util.h"

#define CN_S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* Writer. All return CN_ERR_NOMEM on allocation failure. Text is escaped (& < > " ' and
 * control characters as numeric references where XML 1.0 allows them). */
cn_err cn_xml_decl(cn_buf *b);  /* <?xml version="1.0" encoding="UTF-8"?> */
/* Opens <tag> or, with xmlns, <tag xmlns="...">. */
cn_err cn_xml_open(cn_buf *b, const char *tag, const char *xmlns);
cn_err cn_xml_close(cn_buf *b, const char *tag);
cn_err cn_xml_elem(cn_buf *b, const char *tag, const char *text);
cn_err cn_xml_elem_n(cn_buf *b, const char *tag, const char *text, size_t len);
cn_err cn_xml_elemf(cn_buf *b, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
cn_err cn_xml_escape(cn_buf *b, const char *text, size_t len);

/* Parser: a DOM of elements. Text is the concatenated character data directly inside the
 * element (not trimmed). Attributes and namespaces prefixes are ignored (names are local
 * names: "Delete" whether or not xmlns is given). */
typedef struct cn_xml_node {
	char *name;
	char *text;  /* never NULL ("" when none) */
	size_t text_len;
	struct cn_xml_node *child, *next; /* first child, next sibling */
} cn_xml_node;
/* CN_ERR_INVALID for malformed XML, CN_ERR_TOO_LARGE over a limit. *root owned by caller. */
cn_err cn_xml_parse(const char *p, size_t len, cn_xml_node **root);
/* cn_xml_parse with max_bytes of names plus text in place of 1 MiB, for a document whose
 * API allows more (names and text never exceed the input's length). */
cn_err cn_xml_parse_max(const char *p, size_t len, size_t max_bytes, cn_xml_node **root);
void cn_xml_free(cn_xml_node *root);
/* First child element with that name, or NULL. */
const cn_xml_node *cn_xml_child(const cn_xml_node *n, const char *name);

#endif

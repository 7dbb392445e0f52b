/* s3/form.h: the body of S3's POST object upload (a browser form, multipart/form-data per
 * RFC 7578), read as a stream. cn_form_open reads the parts before the one named "file"
 * and keeps them as fields; the file part's content is then read through `file`, a
 * cn_reader that ends (returns 0) at the part's closing delimiter. What follows the file
 * part (fields S3 ignores, the epilogue) is left unread.
 *
 * Ownership: a cn_form owns its buffer and its copies of names and values (malloc'd; names
 * and values are NUL-terminated, values may also hold NULs: use len); cn_form_fini frees
 * them, also after a failed open. The body reader is borrowed and must outlive the form.
 *
 * Errors (returned by cn_form_open, or negated from file.read):
 *   CN_ERR_INVALID    not well-formed: no opening delimiter, a part without a
 *                     Content-Disposition "form-data" with a name, headers without their
 *                     blank line, more than CN_FORM_MAX_FIELDS fields, the body ending
 *                     inside a part
 *   CN_ERR_TOO_LARGE  the bytes before the file part (preamble, headers, names, values)
 *                     exceed max_pre bytes (S3: 20 KiB), or one part's headers 8 KiB
 *   CN_ERR_NOT_FOUND  the closing delimiter came and no part was named "file"
 *   CN_ERR_NOMEM
 *   otherwise         the body reader's own error. */
#ifndef CN_S3_FORM_H
#define CN_S3_FORM_H

#include "util/util.h"

#define CN_FORM_MAX_FIELDS 64
#define CN_FORM_MAX_BOUNDARY 70 /* RFC 2046 */

typedef struct cn_form_field {
	char *name;   /* as sent (compare case-insensitively) */
	char *value;
	size_t len;   /* of value */
} cn_form_field;

typedef struct cn_form {
	cn_reader file;             /* first: the file part's content */
	cn_form_field fields[CN_FORM_MAX_FIELDS];
	size_t nfields;
	char *filename;             /* the file part's filename parameter ("" when none) */
	char *file_type;            /* the file part's Content-Type, or NULL */
	/* private */
	cn_reader *body;
	char *buf;
	size_t cap, beg, end;       /* unread bytes: buf[beg, end) */
	bool eof, done;
	char delim[CN_FORM_MAX_BOUNDARY + 5]; /* "\r\n--" boundary */
	size_t dlen;
} cn_form;

/* The boundary parameter of a Content-Type "multipart/form-data; boundary=..." (quoted or
 * not) into out (NUL-terminated). False when the type is not multipart/form-data or the
 * boundary is missing, empty or longer than CN_FORM_MAX_BOUNDARY. */
bool cn_form_boundary(cn_str content_type, char out[CN_FORM_MAX_BOUNDARY + 1]);

/* Reads up to the file part (see above). On CN_OK, f->file reads its content. */
cn_err cn_form_open(cn_form *f, cn_reader *body, const char *boundary, size_t max_pre);

/* The first field of that name (ASCII case-insensitive), or NULL. */
const cn_form_field *cn_form_get(const cn_form *f, const char *name);

void cn_form_fini(cn_form *f);

#endif

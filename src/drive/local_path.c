/* drive/local_path: where the local drive keeps things (docs/FORMAT.md §3). A key is
 * "vol/<component>/..." with each component escaped when it is "", ".", ".." or starts
 * with '%' (put_component, undone by cn_local__decode_component in local_int.h); its
 * current record sits beside its folder as "%m.<leaf>", or inside it as "%meta" for a
 * leaf longer than FLAT_MAX; a write's tmp files are spread over TMP_SHARDS folders by
 * the hash of its tmp id. Paths stay below PATH_CAP so that every call, relative to the
 * root fd, works whatever the drive's own path. Also the random ids of tmp files. */
#include "drive/local_int.h"

#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

void cn_drive_random_id(char out[33])
{
	unsigned char r[16];
	size_t got = 0;
	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);
		if (n > 0)
			got += (size_t)n;
		else
			CN_ASSERT(errno == EINTR);
	}
	cn_hex_encode(r, sizeof r, out);
}

/* Appends the on-disk name of one key component (FORMAT.md §3). */
static cn_err put_component(cn_buf *b, const char *c, size_t len)
{
	bool esc = len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.') ||
	           c[0] == '%';
	if (len + (esc ? 2 : 0) > 255)
		return CN_ERR_BAD_KEY;
	if (esc && cn_buf_append(b, "%=", 2))
		return CN_ERR_NOMEM;
	return cn_buf_append(b, c, len);
}

/* "vol/<escaped components of key>" into b (reset first). */
cn_err cn_local__key_path(cn_buf *b, const char *vol, const char *key)
{
	b->len = 0;
	if (!cn_local__vol_ok(vol))
		return CN_ERR_NO_BUCKET;
	size_t klen = strlen(key);
	if (klen == 0 || klen > 1024)
		return CN_ERR_BAD_KEY;
	cn_err e = cn_buf_puts(b, vol);
	const char *p = key, *end = key + klen;
	while (!e) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t n = slash ? (size_t)(slash - p) : (size_t)(end - p);
		e = cn_buf_append(b, "/", 1);
		if (!e)
			e = put_component(b, p, n);
		if (!slash)
			break;
		p = slash + 1;
	}
	if (!e && b->len + 64 >= PATH_CAP)
		e = CN_ERR_BAD_KEY;
	return e;
}

/* The path of key's current record (FORMAT.md §3) into b (reset first): the file
 * "<parent folder>/%m.<leaf>" beside the key's folder, so an object without data folders
 * or versions (every small object) has no folder of its own; a leaf longer than FLAT_MAX
 * bytes keeps its record inside its folder ("<key folder>/%meta"). *dir_len: the length
 * of the folder part of b (the vol for a key without '/'). */
cn_err cn_local__rec_path(cn_buf *b, const char *vol, const char *key, size_t *dir_len)
{
	cn_err e = cn_local__key_path(b, vol, key);
	if (e)
		return e;
	const char *leaf = strrchr(key, '/');
	leaf = leaf ? leaf + 1 : key;
	size_t ll = strlen(leaf);
	if (ll > FLAT_MAX) {
		*dir_len = b->len;
		return cn_buf_puts(b, "/" REC_NAME);
	}
	/* the last component's on-disk name holds no '/' */
	b->len = (size_t)(strrchr(b->p, '/') - b->p);
	*dir_len = b->len;
	e = cn_buf_append(b, "/" FLAT_PREFIX, 1 + strlen(FLAT_PREFIX));
	if (!e)
		e = cn_buf_append(b, leaf, ll);
	return e;
}

/* TMP_DIR "/<2 hex digits: hash of the id>/" tmp_id rest, built by hand: snprintf costs
 * ~1,300 instructions a call, and this runs once per drive per PUT (callgrind). */
void cn_local__tmp_path(char *out, size_t cap, const char *tmp_id, const char *rest)
{
	static const char hex[] = "0123456789abcdef";
	unsigned h = 0;
	size_t il = 0, rl = strlen(rest), dl = sizeof TMP_DIR - 1;
	for (const char *p = tmp_id; *p; p++, il++)
		h = h * 31 + (unsigned char)*p;
	h %= TMP_SHARDS;
	CN_ASSERT(dl + 4 + il + rl < cap); /* ids are bounded by CN_DRIVE_ID_MAX */
	memcpy(out, TMP_DIR, dl);
	out[dl] = '/';
	out[dl + 1] = hex[(h >> 4) & 15];
	out[dl + 2] = hex[h & 15];
	out[dl + 3] = '/';
	memcpy(out + dl + 4, tmp_id, il);
	memcpy(out + dl + 4 + il, rest, rl + 1);
}

/* erasure/multipart: multipart uploads on a set: the upload's records (written with write
 * quorum, read with quorum, listed across drives: versions.c EC-8), and the completion that
 * links the uploaded parts into one object's data folder and commits it (write.c). A part
 * itself is a writer taken into the upload (cn_ec_upload_take, write.c). */
#include "erasure/codec.h"
#include "erasure/erasure.h"
#include "erasure/erasure_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cn_err cn_ec_upload_put_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             bool create, cn_ec_meta *m)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	if (!cn_ec__quorum_up(s, write_quorum(s)))
		return CN_ERR_QUORUM; /* EC-12 */
	cn_buf rec;
	cn_buf_init(&rec);
	for (size_t i = 0; i < s->n; i++) {
		if (!D(s, i)) {
			errs[i] = CN_ERR_OFFLINE;
			continue;
		}
		rec.len = 0;
		cn_ec__fill_erasure(s, m, i);
		errs[i] = cn_ec_meta_encode(m, &rec);
		if (!errs[i])
			errs[i] = D(s, i)->ops->upload_write(D(s, i), vol, upload_id, name, create, rec.p, rec.len);
	}
	cn_buf_fini(&rec);
	return cn_ec__reduce_quorum(errs, s->n, write_quorum(s));
}

cn_err cn_ec_upload_get_meta(cn_ec_set *s, const char *vol, const char *upload_id, const char *name,
                             cn_ec_meta *m)
{
	return cn_ec__read_rec(s, REC_UPLOAD, vol, upload_id, name, false, m);
}

cn_err cn_ec_upload_list(cn_ec_set *s, const char *vol, const char *upload_id, char ***names,
                         size_t *n)
{
	return cn_ec__union_names(s, true, false, vol, upload_id, names, n); /* EC-8 */
}

cn_err cn_ec_upload_commit(cn_ec_set *s, const char *vol, const char *upload_id,
                           const char *const *srcs, size_t n, const char *key, cn_ec_meta *m)
{
	if (n == 0 || n != m->nparts)
		return CN_ERR_INVALID;
	char tmp_id[33], id[33], name[32];
	cn_drive_random_id(tmp_id);
	cn_drive_random_id(id);
	snprintf(m->data_id, sizeof m->data_id, "%%d.%s", id);
	m->has_inline = false;
	cn_err errs[CN_EC_MAX_DRIVES] = { CN_OK };
	bool ok[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++) {
		errs[i] = D(s, i) ? CN_OK : CN_ERR_OFFLINE;
		for (size_t p = 0; p < n && !errs[i]; p++) {
			snprintf(name, sizeof name, "part.%zu", p + 1);
			errs[i] = D(s, i)->ops->upload_link(D(s, i), vol, upload_id, srcs[p], tmp_id, m->data_id,
			                                    name);
		}
		ok[i] = errs[i] == CN_OK;
	}
	/* the parts were written for this key with the storage class of the upload */
	unsigned mm = coded(s) ? parity_for(s, m->storage_class) : 0, k = (unsigned)s->n - mm;
	uint8_t dist[CN_EC_MAX_DRIVES];
	if (coded(s))
		cn_codec_dist(vol, key, strlen(key), (unsigned)s->n, dist);
	cn_err e = cn_ec__reduce_quorum(errs, s->n, (size_t)k + (k == mm));
	if (!e)
		e = cn_ec__commit(s, tmp_id, m->data_id, vol, key, m, k, mm, coded(s) ? dist : NULL, ok, NULL);
	if (e)
		for (size_t i = 0; i < s->n; i++)
			if (D(s, i))
				D(s, i)->ops->abort_tmp(D(s, i), tmp_id);
	return e;
}

cn_err cn_ec_upload_remove(cn_ec_set *s, const char *vol, const char *upload_id)
{
	cn_err errs[CN_EC_MAX_DRIVES];
	for (size_t i = 0; i < s->n; i++)
		errs[i] = D(s, i) ? D(s, i)->ops->upload_remove(D(s, i), vol, upload_id) : CN_ERR_OFFLINE;
	return cn_ec__reduce_quorum(errs, s->n, s->n / 2 + 1);
}

/* erasure/codec.h: the erasure codec — Reed-Solomon K data + M parity shards over ISA-L,
 * the per-shard-block bitrot hash (XXH3-128) and the per-object shard rotation. Pure
 * computation on caller buffers: no I/O, no drives, no locks on the hot path.
 *
 * Ownership: a cn_codec is created once per (K, M) by cn_codec_new and freed by
 * cn_codec_free after every user is done; between the two it is immutable except for an
 * internal lock-free cache of decode tables, so any number of threads may encode, verify
 * and reconstruct with one codec at once. Shard buffers always belong to the caller; the
 * codec never allocates per block (a reconstruct may allocate once per new erasure
 * pattern, at most CN_CODEC_CACHE_SLOTS times in a codec's life; when that fails or the
 * cache is full it computes the tables on the stack instead).
 *
 * Errors: CN_ERR_INVALID for bad arguments (K, M out of range, lengths over the limit),
 * CN_ERR_NOMEM from cn_codec_new, CN_ERR_QUORUM when fewer than K shards survive, and
 * CN_ERR_CORRUPT from hash verification. Nothing here asserts on input data.
 *
 * On-disk contract: the parity bytes depend on the coding matrix (ISA-L's
 * gf_gen_cauchy1_matrix: identity on top, Cauchy rows below, so every K rows are
 * invertible), the hash is XXH3-128 in canonical (big-endian) byte order, and the rotation
 * is MinIO's hashOrder. Changing any of them is a format change (docs/FORMAT.md). */
#ifndef CN_ERASURE_CODEC_H
#define CN_ERASURE_CODEC_H

#include "util/util.h"

#define CN_CODEC_MAX_SHARDS 16        /* K + M; MinIO's largest erasure set */
#define CN_CODEC_HASH_LEN 16          /* XXH3-128, canonical bytes */
#define CN_CODEC_MAX_SHARD_LEN (1u << 30) /* one shard block; ISA-L takes an int length */
#define CN_CODEC_CACHE_SLOTS 64       /* decode-table cache entries per codec */

typedef struct cn_codec cn_codec;

/* Creates the codec for k data and m parity shards: 1 <= k, 0 <= m, k + m <=
 * CN_CODEC_MAX_SHARDS (K=1, M=0 is a plain copy). */
cn_err cn_codec_new(unsigned k, unsigned m, cn_codec **out);
void cn_codec_free(cn_codec *c);
unsigned cn_codec_k(const cn_codec *c);
unsigned cn_codec_m(const cn_codec *c);

/* Bytes of each shard for a block of block_len bytes: ceil(block_len / K) (MinIO's
 * ceilFrac). The last data shard is zero-padded to this length. */
size_t cn_codec_shard_len(const cn_codec *c, size_t block_len);
/* Bytes of one drive's shard file for an object (or part) of total bytes cut into blocks
 * of block_size: full blocks give shard_len(block_size) each, the tail ceil(tail / K)
 * (MinIO's ShardFileSize); 0 for 0. Hashes are not counted. */
int64_t cn_codec_shard_file_size(const cn_codec *c, size_t block_size, int64_t total);

/* Encodes one block: copies data[0..len) into shards[0..K) (zero-padding the tail to
 * shard_len(len)) and computes the M parity shards into shards[K..K+M). Every shards[i]
 * must hold shard_len(len) bytes and none may overlap data. hashes, when not NULL,
 * receives the hash of every shard (hashes[i] for shards[i]). len 0 writes nothing. */
cn_err cn_codec_encode(const cn_codec *c, const void *data, size_t len,
                       unsigned char *const *shards, unsigned char (*hashes)[CN_CODEC_HASH_LEN]);
/* Computes only the parity shards from data shards the caller already filled (each
 * shard_len bytes, padded): for zero-copy writers that read the body straight into the
 * data shards. hashes as in cn_codec_encode (all K+M are hashed). */
cn_err cn_codec_encode_parity(const cn_codec *c, size_t shard_len, unsigned char *const *shards,
                              unsigned char (*hashes)[CN_CODEC_HASH_LEN]);

/* Rebuilds shards: present[i] says shards[i] holds good bytes (shard_len of them). For
 * every i with !present[i] and (want == NULL || want[i]), shards[i] (a caller buffer of
 * shard_len bytes) receives the rebuilt shard; other absent shards may be NULL and are
 * left alone. Uses the first K present shards, data shards first. CN_ERR_QUORUM when
 * fewer than K are present (nothing written). */
cn_err cn_codec_reconstruct(const cn_codec *c, size_t shard_len, unsigned char *const *shards,
                            const bool *present, const bool *want);

/* Copies the block's len bytes back out of the K data shards (each shard_len(len)). */
void cn_codec_join(const cn_codec *c, unsigned char *const *shards, size_t len, void *out);

/* Bitrot: the hash of one shard block, and its check. */
void cn_codec_hash(const void *p, size_t len, unsigned char out[CN_CODEC_HASH_LEN]);
/* CN_OK when p[0..len) hashes to want, else CN_ERR_CORRUPT. */
cn_err cn_codec_hash_check(const void *p, size_t len, const unsigned char want[CN_CODEC_HASH_LEN]);
/* Checks every shard with present[i] against hashes[i]; a shard that fails has present[i]
 * cleared. Returns the number of shards that failed (the caller then reconstructs). */
unsigned cn_codec_verify(const cn_codec *c, size_t shard_len, unsigned char *const *shards,
                         bool *present, const unsigned char (*hashes)[CN_CODEC_HASH_LEN]);

/* The shard rotation of an object (MinIO's hashOrder over "bucket/key"): dist[d] is the
 * 0-based shard index that drive slot d of the set holds (MinIO stores it 1-based).
 * start = crc32(bucket "/" key) mod n (CRC-32/IEEE, as Go's crc32.ChecksumIEEE), then
 * dist[d] = (start + d + 1) mod n. A permutation of 0..n-1 for 1 <= n <= 255; the key is
 * hashed as bytes, without any path cleaning. bucket may be NULL (then only key). */
void cn_codec_dist(const char *bucket, const char *key, size_t key_len, unsigned n, uint8_t *dist);
/* The raw CRC-32/IEEE used above (exposed for tests and for the set hash's callers). */
uint32_t cn_codec_crc32(uint32_t crc, const void *p, size_t len);

#endif

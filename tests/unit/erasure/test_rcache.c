/* Unit tests for the record cache (src/erasure/rcache.c, rules R1-R2 in erasure_int.h). */
#include "erasure/erasure_int.h"
#include "test.h"

TEST(hit_after_put_and_miss_after_invalidate)
{
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(1 << 20, 1024, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	CHECK(!cn_rcache_get(c, 0, "bkt", "a/b", &b, &gen));
	cn_rcache_put(c, 0, "bkt", "a/b", "REC1", 4, gen);
	CHECK(cn_rcache_get(c, 0, "bkt", "a/b", &b, &gen));
	CHECK(b.len == 4 && memcmp(b.p, "REC1", 4) == 0);
	/* same key bytes split differently between vol and key are different ids */
	CHECK(!cn_rcache_get(c, 0, "bkta", "/b", &b, &gen));
	cn_rcache_invalidate(c, 1, "bkt", "a/b");
	CHECK(!cn_rcache_get(c, 0, "bkt", "a/b", &b, &gen));
	cn_buf_fini(&b);
	cn_rcache_free(c);
}

TEST(stale_reader_cannot_insert)
{
	/* R2: a reader that took the generation before a writer's invalidation must not
	 * insert the (old) record it read. */
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(1 << 20, 1024, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	CHECK(!cn_rcache_get(c, 0, "v", "k", &b, &gen));  /* reader: miss, takes gen */
	cn_rcache_invalidate(c, 1, "v", "k");              /* writer commits */
	cn_rcache_put(c, 0, "v", "k", "OLD", 3, gen);      /* reader inserts what it read */
	uint64_t g2;
	CHECK(!cn_rcache_get(c, 0, "v", "k", &b, &g2));    /* not inserted */
	cn_rcache_put(c, 0, "v", "k", "NEW", 3, g2);
	CHECK(cn_rcache_get(c, 0, "v", "k", &b, &g2) && memcmp(b.p, "NEW", 3) == 0);
	cn_buf_fini(&b);
	cn_rcache_free(c);
}

TEST(limits_and_clear)
{
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(4096, 1000, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	char big[2000] = { 0 };
	CHECK(!cn_rcache_get(c, 0, "v", "big", &b, &gen));
	cn_rcache_put(c, 0, "v", "big", big, sizeof big, gen); /* over max_record */
	CHECK(!cn_rcache_get(c, 0, "v", "big", &b, &gen));
	int stored = 0;
	for (int i = 0; i < 20; i++) {
		char key[16];
		snprintf(key, sizeof key, "k%d", i);
		cn_rcache_get(c, 0, "v", key, &b, &gen);
		cn_rcache_put(c, 0, "v", key, big, 900, gen);
	}
	for (int i = 0; i < 20; i++) {
		char key[16];
		snprintf(key, sizeof key, "k%d", i);
		stored += cn_rcache_get(c, 0, "v", key, &b, &gen);
	}
	uint64_t hits, misses;
	size_t bytes;
	cn_rcache_stats(c, &hits, &misses, &bytes);
	CHECK(stored >= 1 && stored <= 4);   /* budget 4096: at most 4 records of ~900 */
	CHECK(bytes <= 4096);
	cn_rcache_clear(c);
	cn_rcache_stats(c, &hits, &misses, &bytes);
	CHECK_EQ_INT(bytes, 0);
	CHECK(!cn_rcache_get(c, 0, "v", "k0", &b, &gen));
	cn_buf_fini(&b);
	cn_rcache_free(c);
	/* budget 0: disabled, every call is harmless */
	CHECK_EQ_INT(cn_rcache_new(0, 1000, &c), CN_OK);
	CHECK(c == NULL);
	CHECK(!cn_rcache_get(c, 0, "v", "k", &b, &gen));
	cn_rcache_put(c, 0, "v", "k", "x", 1, gen);
	cn_rcache_invalidate(c, 1, "v", "k");
}

TEST(drive_slots_are_separate_entries)
{
	/* an erasure set caches each drive slot's own record of a key */
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(1 << 20, 1024, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	char rec[8];
	for (unsigned d = 0; d < 16; d++) {
		CHECK(!cn_rcache_get(c, d, "v", "k", &b, &gen));
		snprintf(rec, sizeof rec, "R%u", d);
		cn_rcache_put(c, d, "v", "k", rec, strlen(rec), gen);
	}
	for (unsigned d = 0; d < 16; d++) {
		snprintf(rec, sizeof rec, "R%u", d);
		CHECK(cn_rcache_get(c, d, "v", "k", &b, &gen));
		CHECK(b.len == strlen(rec) && memcmp(b.p, rec, b.len) == 0);
	}
	CHECK(!cn_rcache_get(c, 16, "v", "k", &b, &gen));
	/* invalidating slots 0..7 leaves 8..15 */
	cn_rcache_invalidate(c, 8, "v", "k");
	for (unsigned d = 0; d < 16; d++)
		CHECK(cn_rcache_get(c, d, "v", "k", &b, &gen) == (d >= 8));
	cn_rcache_invalidate(c, 16, "v", "k");
	for (unsigned d = 0; d < 16; d++)
		CHECK(!cn_rcache_get(c, d, "v", "k", &b, &gen));
	cn_buf_fini(&b);
	cn_rcache_free(c);
}

TEST(working_set_of_an_erasure_set_stays_cached)
{
	/* 300 objects x 12 data drives' records: with 4-way buckets all but a handful stay
	 * (direct-mapped, ~1 in 5 collided and most GETs missed one of their 12 records) */
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(64 << 20, 1024, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	char key[32];
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 300; i++)
			for (unsigned d = 0; d < 12; d++) {
				snprintf(key, sizeof key, "obj/%d", i);
				if (!cn_rcache_get(c, d, "bkt", key, &b, &gen))
					cn_rcache_put(c, d, "bkt", key, "R", 1, gen);
			}
	int hits = 0;
	for (int i = 0; i < 300; i++)
		for (unsigned d = 0; d < 12; d++) {
			snprintf(key, sizeof key, "obj/%d", i);
			hits += cn_rcache_get(c, d, "bkt", key, &b, &gen);
		}
	CHECK(hits >= 3600 - 8);
	cn_buf_fini(&b);
	cn_rcache_free(c);
}

TEST(adopt_takes_the_buffer_only_when_it_caches_it)
{
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(4096, 1000, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	CHECK(!cn_rcache_get(c, 0, "v", "k", &b, &gen));
	char *rec = strdup("RECORD");
	CHECK(cn_rcache_adopt(c, 0, "v", "k", rec, 6, gen)); /* the cache owns rec now */
	CHECK(cn_rcache_get(c, 0, "v", "k", &b, &gen) && b.len == 6 && memcmp(b.p, "RECORD", 6) == 0);
	/* refused: over max_record, or R2 (an invalidation since the miss); the caller keeps
	 * its buffer (ASan reports a leak or double free otherwise) */
	char *big = calloc(1, 1001);
	CHECK(!cn_rcache_get(c, 0, "v", "big", &b, &gen));
	CHECK(!cn_rcache_adopt(c, 0, "v", "big", big, 1001, gen));
	free(big);
	CHECK(!cn_rcache_get(c, 0, "v", "x", &b, &gen));
	cn_rcache_invalidate(c, 1, "v", "x");
	char *stale = strdup("OLD");
	CHECK(!cn_rcache_adopt(c, 0, "v", "x", stale, 3, gen));
	free(stale);
	/* full: 4 records of 900 bytes fill the 4096-byte budget, later ones are refused
	 * (unless they replace one of their bucket) and stay the caller's */
	int taken = 0;
	for (int i = 0; i < 12; i++) {
		char key[16];
		snprintf(key, sizeof key, "f%d", i);
		cn_rcache_get(c, 0, "v", key, &b, &gen);
		char *r = calloc(1, 900);
		if (cn_rcache_adopt(c, 0, "v", key, r, 900, gen))
			taken++;
		else
			free(r);
	}
	size_t bytes;
	uint64_t hits, misses;
	cn_rcache_stats(c, &hits, &misses, &bytes);
	CHECK(taken >= 3 && taken < 12);
	CHECK(bytes <= 4096);
	cn_buf_fini(&b);
	cn_rcache_free(c); /* frees the adopted buffers */
}

int main(void)
{
	RUN(working_set_of_an_erasure_set_stays_cached);
	RUN(drive_slots_are_separate_entries);
	RUN(hit_after_put_and_miss_after_invalidate);
	RUN(stale_reader_cannot_insert);
	RUN(limits_and_clear);
	RUN(adopt_takes_the_buffer_only_when_it_caches_it);
	TEST_END();
}

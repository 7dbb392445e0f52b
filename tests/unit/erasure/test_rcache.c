/* Unit tests for the record cache (src/erasure/rcache.c, RCACHE-1, RCACHE-2 in erasure_int.h). */
#include "erasure/erasure_int.h"
#include "test.h"

#include <pthread.h>

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
	/* RCACHE-2: a reader that took the generation before a writer's invalidation must not
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

TEST(buckets_grow_with_the_budget)
{
	/* 2,000 objects x 12 data drives' records of ~5 KiB (64 KiB objects on 16 drives): 24,000
	 * entries, 120 MB, inside a 384 MiB budget (1/64 of these machines' RAM). With a fixed
	 * 8,192 4-way buckets over a third of the lookups missed; sized by the budget, all hit. */
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new((size_t)384 << 20, 8192, &c), CN_OK);
	static char rec[5400];
	memset(rec, 'r', sizeof rec);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	char key[32];
	for (int i = 0; i < 2000; i++)
		for (unsigned d = 0; d < 12; d++) {
			snprintf(key, sizeof key, "p/%010d", i);
			if (!cn_rcache_get(c, d, "bucket", key, &b, &gen))
				cn_rcache_put(c, d, "bucket", key, rec, sizeof rec, gen);
		}
	int hits = 0;
	for (int i = 0; i < 2000; i++)
		for (unsigned d = 0; d < 12; d++) {
			snprintf(key, sizeof key, "p/%010d", i);
			hits += cn_rcache_get(c, d, "bucket", key, &b, &gen);
		}
	CHECK(hits >= 24000 - 24);
	uint64_t h, m;
	size_t bytes;
	cn_rcache_stats(c, &h, &m, &bytes);
	CHECK(bytes >= 24000 * sizeof rec && bytes <= ((size_t)384 << 20));
	/* RCACHE-2 across a clear: a reader that missed before it must not insert after it */
	CHECK(!cn_rcache_get(c, 0, "bucket", "other", &b, &gen));
	cn_rcache_clear(c);
	cn_rcache_put(c, 0, "bucket", "other", "OLD", 3, gen);
	CHECK(!cn_rcache_get(c, 0, "bucket", "other", &b, &gen));
	cn_rcache_put(c, 0, "bucket", "other", "NEW", 3, gen);
	CHECK(cn_rcache_get(c, 0, "bucket", "other", &b, &gen) && b.len == 3 && !memcmp(b.p, "NEW", 3));
	cn_rcache_clear(c);
	cn_rcache_stats(c, &h, &m, &bytes);
	CHECK(bytes == 0 && !cn_rcache_get(c, 0, "bucket", "p/0000000000", &b, &gen));
	cn_buf_fini(&b);
	cn_rcache_free(c);
}

/* Holds a reference to a visited entry (what cn_ec__read_one's decode does through the meta). */
static void take_ref(cn_ec_rec *rec, void *arg)
{
	*(cn_ec_rec **)arg = cn_ec_rec_ref(rec);
}

TEST(insert_shares_the_record_and_readers_outlive_eviction)
{
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(4096, 1000, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	CHECK(!cn_rcache_get(c, 0, "v", "k", &b, &gen));
	cn_ec_rec *rec = cn_ec_rec_wrap(strdup("RECORD"), 6);
	CHECK(rec != NULL);
	CHECK(cn_rcache_insert(c, 0, "v", "k", rec, gen)); /* the cache takes its own reference */
	cn_ec_rec_unref(rec);                               /* the reader's: the cache's remains */
	CHECK(cn_rcache_get(c, 0, "v", "k", &b, &gen) && b.len == 6 && memcmp(b.p, "RECORD", 6) == 0);
	/* a reader holding the entry keeps its bytes through invalidation and eviction (ASan:
	 * a use after free otherwise); the last unref frees them (ASan: a leak otherwise) */
	cn_ec_rec *held = NULL;
	CHECK(cn_rcache_visit(c, 0, "v", "k", take_ref, &held, &gen));
	CHECK(held != NULL);
	cn_rcache_invalidate(c, 1, "v", "k");
	CHECK(!cn_rcache_get(c, 0, "v", "k", &b, &gen));
	size_t len = 0;
	const unsigned char *p = held ? cn_ec_rec_bytes(held, &len) : NULL;
	CHECK(p && len == 6 && memcmp(p, "RECORD", 6) == 0);
	cn_ec_rec_unref(held);
	/* refused: over max_record, or RCACHE-2 (an invalidation since the miss); the caller's
	 * reference is untouched either way */
	cn_ec_rec *big = cn_ec_rec_wrap(calloc(1, 1001), 1001);
	CHECK(!cn_rcache_get(c, 0, "v", "big", &b, &gen));
	CHECK(!cn_rcache_insert(c, 0, "v", "big", big, gen));
	cn_ec_rec_unref(big);
	CHECK(!cn_rcache_get(c, 0, "v", "x", &b, &gen));
	cn_rcache_invalidate(c, 1, "v", "x");
	cn_ec_rec *stale = cn_ec_rec_wrap(strdup("OLD"), 3);
	CHECK(!cn_rcache_insert(c, 0, "v", "x", stale, gen));
	cn_ec_rec_unref(stale);
	/* full: 4 records of 900 bytes fill the 4096-byte budget; later ones still get in,
	 * the clock hand making room, and the budget holds */
	cn_rcache_clear(c);
	int taken = 0;
	for (int i = 0; i < 12; i++) {
		char key[16];
		snprintf(key, sizeof key, "f%d", i);
		cn_rcache_get(c, 0, "v", key, &b, &gen);
		cn_ec_rec *r = cn_ec_rec_wrap(calloc(1, 900), 900);
		if (cn_rcache_insert(c, 0, "v", key, r, gen))
			taken++;
		cn_ec_rec_unref(r);
	}
	size_t bytes;
	uint64_t hits, misses;
	cn_rcache_stats(c, &hits, &misses, &bytes);
	CHECK_EQ_INT(taken, 12);
	CHECK(bytes <= 4096 && bytes >= 3 * 900);
	CHECK(cn_rcache_get(c, 0, "v", "f11", &b, &gen)); /* the newest is in */
	cn_buf_fini(&b);
	cn_rcache_free(c); /* drops the cache's references: the records are freed */
}

/* Every cached entry was hit since the hand last passed: the first turn of the clock
 * only clears their second chances, and the insert still finds a victim on the second
 * (with one turn at most, it was refused). */
TEST(full_cache_of_hit_entries_still_admits)
{
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(2048, 1000, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	const char *keys[] = { "x", "y", "z" };
	for (int i = 0; i < 3; i++) {
		if (i == 2) { /* x and y are both hit again before z comes */
			CHECK(cn_rcache_get(c, 0, "v", "x", &b, &gen));
			CHECK(cn_rcache_get(c, 0, "v", "y", &b, &gen));
		}
		CHECK(!cn_rcache_get(c, 0, "v", keys[i], &b, &gen));
		cn_ec_rec *r = cn_ec_rec_wrap(calloc(1, 900), 900);
		CHECK(cn_rcache_insert(c, 0, "v", keys[i], r, gen));
		cn_ec_rec_unref(r);
	}
	CHECK(cn_rcache_get(c, 0, "v", "z", &b, &gen));
	size_t bytes;
	uint64_t hits, misses;
	cn_rcache_stats(c, &hits, &misses, &bytes);
	CHECK(bytes <= 2048);
	cn_buf_fini(&b);
	cn_rcache_free(c);
}

/* When the budget is spent, entries hit since the clock hand last passed are spared: a
 * new record displaces one nobody read again, and the hot ones stay. */
TEST(full_cache_evicts_entries_not_hit_again)
{
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(4096, 1000, &c), CN_OK);
	cn_buf b;
	cn_buf_init(&b);
	uint64_t gen;
	char key[16];
	for (int i = 0; i < 4; i++) { /* a0..a3 fill the budget (4 x ~903 bytes) */
		snprintf(key, sizeof key, "a%d", i);
		CHECK(!cn_rcache_get(c, 0, "v", key, &b, &gen));
		cn_ec_rec *r = cn_ec_rec_wrap(calloc(1, 900), 900);
		CHECK(cn_rcache_insert(c, 0, "v", key, r, gen));
		cn_ec_rec_unref(r);
	}
	for (int round = 0; round < 3; round++) {
		/* a0 and a1 are read again before each new record comes in */
		CHECK(cn_rcache_get(c, 0, "v", "a0", &b, &gen));
		CHECK(cn_rcache_get(c, 0, "v", "a1", &b, &gen));
		snprintf(key, sizeof key, "b%d", round);
		CHECK(!cn_rcache_get(c, 0, "v", key, &b, &gen));
		cn_ec_rec *r = cn_ec_rec_wrap(calloc(1, 900), 900);
		CHECK(cn_rcache_insert(c, 0, "v", key, r, gen));
		cn_ec_rec_unref(r);
		CHECK(cn_rcache_get(c, 0, "v", key, &b, &gen));
	}
	CHECK(cn_rcache_get(c, 0, "v", "a0", &b, &gen));
	CHECK(cn_rcache_get(c, 0, "v", "a1", &b, &gen));
	CHECK(!cn_rcache_get(c, 0, "v", "a2", &b, &gen)); /* never read again: displaced */
	CHECK(!cn_rcache_get(c, 0, "v", "a3", &b, &gen));
	uint64_t hits, misses;
	size_t bytes;
	cn_rcache_stats(c, &hits, &misses, &bytes);
	CHECK(bytes <= 4096);
	cn_buf_fini(&b);
	cn_rcache_free(c);
}

/* Threads reading, inserting and invalidating 300 keys over a cache that holds ~25 of
 * their records, so the clock evicts all the time: every hit returns the bytes its key's
 * record holds (each key's record derives from its name), and the budget holds but for
 * the inserts racing in other stripes. Under ASan (CI) a record freed while read shows. */
typedef struct churn_arg {
	cn_rcache *c;
	unsigned seed;
	int bad;
} churn_arg;

static size_t churn_rec(unsigned k, char *out)
{
	size_t len = 200 + (size_t)k * 3; /* 200 .. 1097 bytes */
	for (size_t i = 0; i < len; i++)
		out[i] = (char)(k * 31 + i);
	return len;
}

static void *churn(void *p)
{
	churn_arg *a = p;
	cn_buf b;
	cn_buf_init(&b);
	char rec[1200], key[16];
	for (int i = 0; i < 10000; i++) {
		a->seed = a->seed * 1103515245u + 12345u;
		unsigned k = (a->seed >> 8) % 300, op = (a->seed >> 20) % 16;
		snprintf(key, sizeof key, "k%u", k);
		size_t len = churn_rec(k, rec);
		uint64_t gen;
		if (op == 0) {
			cn_rcache_invalidate(a->c, 1, "v", key);
		} else if (cn_rcache_get(a->c, 0, "v", key, &b, &gen)) {
			if (b.len != len || memcmp(b.p, rec, len) != 0)
				a->bad++;
		} else {
			cn_rcache_put(a->c, 0, "v", key, rec, len, gen);
		}
	}
	cn_buf_fini(&b);
	return NULL;
}

TEST(concurrent_churn_keeps_records_intact)
{
	cn_rcache *c;
	CHECK_EQ_INT(cn_rcache_new(16384, 1200, &c), CN_OK);
	pthread_t t[4];
	churn_arg a[4];
	for (int i = 0; i < 4; i++) {
		a[i] = (churn_arg){ c, 7u + (unsigned)i * 101u, 0 };
		CHECK_EQ_INT(pthread_create(&t[i], NULL, churn, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	uint64_t hits, misses;
	size_t bytes;
	cn_rcache_stats(c, &hits, &misses, &bytes);
	for (int i = 0; i < 4; i++)
		CHECK_EQ_INT(a[i].bad, 0);
	CHECK(hits > 1000 && misses > 1000); /* the cache served, and turned over */
	CHECK(bytes <= 16384 + 3 * (1200 + 16));
	cn_rcache_free(c);
}

/* A meta decoded from a shared record points into it: no copy of the inline stream, one
 * reference more, released by cn_ec_meta_fini / cn_ec_meta_drop_inline. */
TEST(meta_decoded_from_a_shared_record_references_it)
{
	cn_ec_meta m;
	cn_ec_meta_init(&m);
	m.size = 5;
	m.mtime_ms = 1;
	m.k = 1;
	m.block_size = 1 << 20;
	m.ndist = 1;
	m.has_inline = true;
	m.inline_data = (unsigned char *)"hello";
	m.inline_len = 5;
	cn_buf enc;
	cn_buf_init(&enc);
	CHECK_EQ_INT(cn_ec_meta_encode(&m, &enc), CN_OK);
	cn_ec_rec *rec = cn_ec_rec_wrap(enc.p, enc.len);
	CHECK(rec != NULL);
	size_t len;
	const unsigned char *bytes = cn_ec_rec_bytes(rec, &len);
	cn_ec_meta a, b;
	CHECK_EQ_INT(cn_ec_meta_decode_rec(rec, false, false, &a), CN_OK);
	CHECK_EQ_INT(cn_ec_meta_decode_rec(rec, false, true, &b), CN_OK);
	CHECK(a.inline_rec == rec && b.inline_rec == rec);
	CHECK(a.inline_data >= bytes && a.inline_data + 5 <= bytes + len); /* in the record */
	CHECK(a.inline_len == 5 && memcmp(a.inline_data, "hello", 5) == 0);
	cn_ec_rec_unref(rec); /* the metas keep the bytes alive */
	CHECK(memcmp(b.inline_data, "hello", 5) == 0);
	cn_ec_meta_drop_inline(&a);
	CHECK(a.inline_data == NULL && a.inline_rec == NULL && a.has_inline && a.inline_len == 5);
	cn_ec_meta_fini(&a);
	cn_ec_meta_fini(&b); /* the last reference: freed (ASan: a leak otherwise) */
	/* a corrupt shared record: an error, and no reference left behind */
	unsigned char bad[64] = "CNMR";
	cn_ec_rec *br = cn_ec_rec_wrap(memcpy(malloc(sizeof bad), bad, sizeof bad), sizeof bad);
	CHECK_EQ_INT(cn_ec_meta_decode_rec(br, false, false, &a), CN_ERR_CORRUPT);
	CHECK(a.inline_rec == NULL);
	cn_ec_rec_unref(br);
}

/* A shared record remembers which inline blocks matched their hash (0..63), nothing else. */
TEST(record_remembers_checked_blocks)
{
	cn_ec_rec *rec = cn_ec_rec_wrap(strdup("RECORD"), 6);
	CHECK(rec != NULL);
	for (size_t b = 0; b < 70; b++)
		CHECK(!cn_ec_rec_block_checked(rec, b));
	cn_ec_rec_mark_checked(rec, 0);
	cn_ec_rec_mark_checked(rec, 1);
	cn_ec_rec_mark_checked(rec, 63);
	cn_ec_rec_mark_checked(rec, 64); /* beyond what is remembered: checked every time */
	CHECK(cn_ec_rec_block_checked(rec, 0) && cn_ec_rec_block_checked(rec, 1));
	CHECK(cn_ec_rec_block_checked(rec, 63));
	CHECK(!cn_ec_rec_block_checked(rec, 2) && !cn_ec_rec_block_checked(rec, 62));
	CHECK(!cn_ec_rec_block_checked(rec, 64) && !cn_ec_rec_block_checked(rec, 1000));
	cn_ec_rec_unref(rec);
}

int main(void)
{
	RUN(working_set_of_an_erasure_set_stays_cached);
	RUN(buckets_grow_with_the_budget);
	RUN(drive_slots_are_separate_entries);
	RUN(hit_after_put_and_miss_after_invalidate);
	RUN(stale_reader_cannot_insert);
	RUN(limits_and_clear);
	RUN(full_cache_evicts_entries_not_hit_again);
	RUN(full_cache_of_hit_entries_still_admits);
	RUN(concurrent_churn_keeps_records_intact);
	RUN(insert_shares_the_record_and_readers_outlive_eviction);
	RUN(meta_decoded_from_a_shared_record_references_it);
	RUN(record_remembers_checked_blocks);
	TEST_END();
}

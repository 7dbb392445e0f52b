/* Unit tests of src/bench: histogram quantiles on fixed data, the 1 s segment split (first
 * and last 2 dropped, spanning ops attributed by time), mergeability (per-thread merge ==
 * one accumulator), size and duration parsing (KiB vs KB), CSV records and a benchdata file
 * round trip that reproduces the same report byte for byte. */
#include "bench/bench_int.h"
#include "test.h"

#include <math.h>
#include <unistd.h>

#define MS 1000000LL
#define S 1000000000LL

TEST(test_hist_exact_small)
{
	cn_hist h;
	cn_hist_init(&h);
	/* 1..100 µs: below 128 µs every bucket is one µs wide */
	for (int i = 1; i <= 100; i++)
		cn_hist_add(&h, (int64_t)i * 1000);
	CHECK_EQ_INT(h.n, 100);
	CHECK_EQ_INT(h.min, 1000);
	CHECK_EQ_INT(h.max, 100000);
	CHECK_EQ_INT(cn_hist_quantile(&h, 0.5), 50500);  /* rank 50 -> bucket 50 µs, midpoint */
	CHECK_EQ_INT(cn_hist_quantile(&h, 0.9), 90500);
	CHECK_EQ_INT(cn_hist_quantile(&h, 0.99), 99500);
	CHECK_EQ_INT(cn_hist_quantile(&h, 0), 1000);
	CHECK_EQ_INT(cn_hist_quantile(&h, 1), 100000);
	CHECK((int64_t)cn_hist_mean(&h) == 50500);
	/* population stddev of 1..100 µs = 28.866 µs */
	CHECK(cn_hist_stddev(&h) > 28865 && cn_hist_stddev(&h) < 28867);
}

TEST(test_hist_relative_precision)
{
	cn_hist h;
	cn_hist_init(&h);
	/* 10000 values 1 ms .. 10 s, log spaced: every quantile within 1% of the exact one */
	static int64_t v[10000];
	for (int i = 0; i < 10000; i++) {
		v[i] = (int64_t)(1e6 * pow(10, 4.0 * i / 9999));
		cn_hist_add(&h, v[i]);
	}
	const double qs[] = { 0.25, 0.5, 0.9, 0.99, 0.999 };
	for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
		int64_t exact = v[(int)ceil(qs[k] * 10000) - 1];
		double got = (double)cn_hist_quantile(&h, qs[k]);
		CHECK(fabs(got - (double)exact) / (double)exact < 0.01);
	}
	/* bucket boundaries are contiguous */
	for (size_t i = 1; i < CN_HIST_BUCKETS; i++)
		CHECK_EQ_INT(cn_hist_bucket_low(i), cn_hist_bucket_high(i - 1) + 1);
	CHECK_EQ_INT(cn_hist_bucket(cn_hist_bucket_low(500)), 500);
	CHECK_EQ_INT(cn_hist_bucket(cn_hist_bucket_high(500)), 500);
	CHECK_EQ_INT(cn_hist_bucket(-5), 0);
	CHECK_EQ_INT(cn_hist_bucket((int64_t)1 << 40), CN_HIST_BUCKETS - 1);
	/* merge == adding everything to one */
	cn_hist a, b;
	cn_hist_init(&a);
	cn_hist_init(&b);
	for (int i = 0; i < 10000; i++)
		cn_hist_add(i % 3 ? &a : &b, v[i]);
	cn_hist_merge(&a, &b);
	CHECK(!memcmp(&a, &h, sizeof a));
}

static char *hosts1[] = { (char *)"http://h1:9000", (char *)"http://h2:9000" };

TEST(test_segments_split)
{
	cn_bench_acc a;
	CHECK_EQ_INT(cn_bench_acc_init(&a, hosts1, 2, 4), CN_OK);
	/* one op from 0.5 s to 1.5 s of 1000 bytes: half in second 0, half in second 1 */
	cn_bench_rec r = { .start = 500 * MS, .end = 1500 * MS, .ttfb = -1, .bytes = 1000, .host = 0, .op = CN_BOP_PUT };
	CHECK_EQ_INT(cn_bench_acc_add(&a, &r), CN_OK);
	CHECK_EQ_INT(a.op[CN_BOP_PUT].sec[0].bytes, 500);
	CHECK_EQ_INT(a.op[CN_BOP_PUT].sec[1].bytes, 500);
	CHECK_EQ_INT(a.op[CN_BOP_PUT].sec[0].uops, CN_BENCH_UOPS / 2);
	/* uneven split keeps the total exact: 0.9 s .. 2.2 s of 1001 bytes */
	cn_bench_rec r2 = { .start = 900 * MS, .end = 2200 * MS, .ttfb = -1, .bytes = 1001, .host = 1, .op = CN_BOP_PUT };
	CHECK_EQ_INT(cn_bench_acc_add(&a, &r2), CN_OK);
	const cn_bench_opacc *p = &a.op[CN_BOP_PUT];
	CHECK_EQ_INT(p->sec[0].bytes + p->sec[1].bytes + p->sec[2].bytes, 2001);
	CHECK_EQ_INT(p->sec[0].hbytes[1] + p->sec[1].hbytes[1] + p->sec[2].hbytes[1], 1001);
	CHECK_EQ_INT(p->sec[0].hbytes[1], 77);  /* 0.1 s of 1.3 s */
	CHECK_EQ_INT(p->sec[2].hbytes[1], 154); /* 0.2 s of 1.3 s */
	/* latency goes to the second the op started in */
	CHECK(p->sec[0].lat && p->sec[0].lat->n == 2);
	CHECK(!p->sec[1].lat);
	cn_bench_acc_fini(&a);
}

TEST(test_segments_window)
{
	/* 10 s of PUTs: seconds 0-1 and 8-9 run at 10 ops/s, seconds 2-7 at 100 ops/s (1 KiB
	 * each, 1 ms long, inside their second): the window keeps 2..7 only */
	cn_bench_acc a;
	CHECK_EQ_INT(cn_bench_acc_init(&a, hosts1, 2, 8), CN_OK);
	for (int s = 0; s < 10; s++) {
		int n = (s < 2 || s >= 8) ? 10 : 100 + s; /* a different rate per kept second */
		for (int i = 0; i < n; i++) {
			int64_t st = s * S + (int64_t)i * (S / 200);
			cn_bench_rec r = { .start = st, .end = st + MS, .ttfb = -1, .bytes = 1024, .host = (uint32_t)(i & 1),
				           .op = CN_BOP_PUT };
			CHECK_EQ_INT(cn_bench_acc_add(&a, &r), CN_OK);
		}
	}
	/* one error: counted, not in the throughput */
	cn_bench_rec er = { .start = 3 * S, .end = 3 * S + MS, .ttfb = -1, .op = CN_BOP_PUT, .err = cn_bench_intern("PUT: HTTP 503 SlowDown") };
	CHECK_EQ_INT(cn_bench_acc_add(&a, &er), CN_OK);
	cn_bench_summary s;
	CHECK(cn_bench_summarize(&a, CN_BOP_PUT, &s));
	CHECK_EQ_INT(s.nseg, 10);
	CHECK_EQ_INT(s.seg_first, 2);
	CHECK_EQ_INT(s.seg_end, 8);
	/* the last op ends at 9.9 s + 1 ms: 10 segments, the last one partial but dropped */
	CHECK(fabs(s.window_s - 6.0) < 1e-9);
	double ops = 0;
	for (int k = 2; k < 8; k++)
		ops += 100 + k;
	CHECK(fabs(s.obj_s - ops / 6) < 1e-9);
	CHECK(fabs(s.mib_s - ops * 1024 / 1048576.0 / 6) < 1e-9);
	CHECK(fabs(s.seg_fast_obj - 107) < 1e-9);
	CHECK(fabs(s.seg_slow_obj - 102) < 1e-9);
	CHECK(fabs(s.seg_med_obj - 105) < 1e-9); /* sorted 102..107, index 3 */
	CHECK(fabs(s.host_obj[0] + s.host_obj[1] - s.obj_s) < 1e-9);
	CHECK_EQ_INT(s.errors, 1);
	CHECK_EQ_INT(s.nerrs, 1);
	CHECK_EQ_STR(s.errs[0].msg, "PUT: HTTP 503 SlowDown");
	CHECK_EQ_INT(s.lat.n, (uint64_t)ops);
	CHECK_EQ_INT(s.lat.min, MS);
	cn_bench_summary_fini(&s);
	cn_bench_acc_fini(&a);
}

TEST(test_merge_equals_single)
{
	cn_bench_acc one, parts[3], merged;
	CHECK_EQ_INT(cn_bench_acc_init(&one, hosts1, 2, 4), CN_OK);
	CHECK_EQ_INT(cn_bench_acc_init(&merged, hosts1, 2, 4), CN_OK);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(cn_bench_acc_init(&parts[i], hosts1, 2, 4), CN_OK);
	uint64_t x = 12345;
	for (int i = 0; i < 3000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		int64_t st = (int64_t)(x >> 20) % (7 * S), len = (int64_t)(x >> 40) % (900 * MS) + 1000;
		cn_bench_rec r = { .start = st, .end = st + len, .ttfb = len / 3, .bytes = (int64_t)(x % 100000),
			           .host = (uint32_t)(x >> 63), .op = (uint8_t)(i % 2 ? CN_BOP_GET : CN_BOP_PUT) };
		CHECK_EQ_INT(cn_bench_acc_add(&one, &r), CN_OK);
		CHECK_EQ_INT(cn_bench_acc_add(&parts[i % 3], &r), CN_OK);
	}
	for (int i = 2; i >= 0; i--)
		CHECK_EQ_INT(cn_bench_acc_merge(&merged, &parts[i]), CN_OK);
	char *j1 = cn_bench_report_json(&one, NULL), *j2 = cn_bench_report_json(&merged, NULL);
	CHECK(j1 && j2 && !strcmp(j1, j2));
	free(j1);
	free(j2);
	cn_bench_acc_fini(&one);
	cn_bench_acc_fini(&merged);
	for (int i = 0; i < 3; i++)
		cn_bench_acc_fini(&parts[i]);
}

TEST(test_parse_size)
{
	uint64_t v;
	CHECK_EQ_INT(cn_bench_parse_size("4KiB", &v), CN_OK);
	CHECK_EQ_INT(v, 4096);
	CHECK_EQ_INT(cn_bench_parse_size("4KB", &v), CN_OK);
	CHECK_EQ_INT(v, 4000);
	CHECK_EQ_INT(cn_bench_parse_size("4k", &v), CN_OK);
	CHECK_EQ_INT(v, 4096);
	CHECK_EQ_INT(cn_bench_parse_size("10MiB", &v), CN_OK);
	CHECK_EQ_INT(v, 10485760);
	CHECK_EQ_INT(cn_bench_parse_size("10MB", &v), CN_OK);
	CHECK_EQ_INT(v, 10000000);
	CHECK_EQ_INT(cn_bench_parse_size("1GiB", &v), CN_OK);
	CHECK_EQ_INT(v, 1073741824);
	CHECK_EQ_INT(cn_bench_parse_size("1.5GB", &v), CN_OK);
	CHECK_EQ_INT(v, 1500000000);
	CHECK_EQ_INT(cn_bench_parse_size("1.5MiB", &v), CN_OK);
	CHECK_EQ_INT(v, 1572864);
	CHECK_EQ_INT(cn_bench_parse_size("123", &v), CN_OK);
	CHECK_EQ_INT(v, 123);
	CHECK_EQ_INT(cn_bench_parse_size("-1KiB", &v), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_bench_parse_size("KiB", &v), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_bench_parse_size("4XB", &v), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_bench_parse_size("", &v), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_bench_parse_size("5TiB", &v), CN_ERR_INVALID);
}

TEST(test_flags)
{
	cn_bench_cfg c;
	cn_bench_cfg_defaults(&c);
	char err[200];
	char *argv[] = { (char *)"--obj.size", (char *)"4KiB", (char *)"--concurrent=32", (char *)"--verify",
		         (char *)"--duration", (char *)"1m", (char *)"--lookup", (char *)"dns", (char *)"--noclear=false" };
	CHECK_EQ_INT(cn_bench_parse_flags(9, argv, &c, err, sizeof err), 0);
	CHECK_EQ_INT(c.obj_size, 4096);
	CHECK_EQ_INT(c.concurrent, 32);
	CHECK(c.verify && c.vhost && !c.noclear);
	CHECK_EQ_INT(c.duration_ns, 60 * S);
	char *bad1[] = { (char *)"--obj.size", (char *)"lots" };
	CHECK_EQ_INT(cn_bench_parse_flags(2, bad1, &c, err, sizeof err), 2);
	CHECK(strstr(err, "--obj.size") != NULL);
	char *bad2[] = { (char *)"--nope", (char *)"1" };
	CHECK_EQ_INT(cn_bench_parse_flags(2, bad2, &c, err, sizeof err), 2);
	char *bad3[] = { (char *)"--concurrent" };
	CHECK_EQ_INT(cn_bench_parse_flags(1, bad3, &c, err, sizeof err), 2);
	char *bad4[] = { (char *)"--concurrent", (char *)"0" };
	CHECK_EQ_INT(cn_bench_parse_flags(2, bad4, &c, err, sizeof err), 2);
	CHECK_EQ_INT(cn_bench_parse_mode("mixed"), CN_BENCH_MIXED);
	CHECK_EQ_INT(cn_bench_parse_mode("nope"), -1);
}

TEST(test_csv_and_file)
{
	cn_buf b;
	cn_buf_init(&b);
	cn_bench_rec r = { .start = 5, .end = 99, .ttfb = -1, .bytes = 0, .op = CN_BOP_GET,
		           .err = cn_bench_intern("GET: weird, \"quoted\" error") };
	CHECK_EQ_INT(cn_bench_rec_csv(&b, &r, "http://h1:9000"), CN_OK);
	CHECK_EQ_STR(b.p, "GET,http://h1:9000,5,99,-1,0,\"GET: weird, \"\"quoted\"\" error\"");
	cn_bench_rec back;
	const char *host;
	CHECK_EQ_INT(cn_bench_rec_parse(b.p, &back, &host), CN_OK);
	CHECK_EQ_STR(host, "http://h1:9000");
	CHECK(back.err == r.err);
	CHECK_EQ_INT(back.end, 99);
	char bad[] = "GET,h,9,5,-1,0,";
	CHECK_EQ_INT(cn_bench_rec_parse(bad, &back, &host), CN_ERR_INVALID); /* ends before it starts */
	char bad2[] = "NOPE,h,1,5,-1,0,";
	CHECK_EQ_INT(cn_bench_rec_parse(bad2, &back, &host), CN_ERR_INVALID);
	char bad3[] = "GET,h,1,5";
	CHECK_EQ_INT(cn_bench_rec_parse(bad3, &back, &host), CN_ERR_INVALID);
	cn_buf_fini(&b);

	/* a file reproduces the report */
	cn_bench_acc a;
	CHECK_EQ_INT(cn_bench_acc_init(&a, hosts1, 2, 3), CN_OK);
	cn_bench_rec recs[500];
	for (int i = 0; i < 500; i++) {
		recs[i] = (cn_bench_rec){ .start = i * 13 * MS, .end = i * 13 * MS + (i % 17 + 1) * MS, .ttfb = (i % 5) * MS,
			                  .bytes = 4096, .host = (uint32_t)(i % 2), .op = CN_BOP_GET,
			                  .err = i % 100 == 7 ? cn_bench_intern("GET: HTTP 404 NoSuchKey") : NULL };
		CHECK_EQ_INT(cn_bench_acc_add(&a, &recs[i]), CN_OK);
	}
	char path[] = "/tmp/cn-bench-unit-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	cn_bench_meta m = { .concurrency = 3, .hosts = hosts1, .nhosts = 2, .start_unix_ns = 1 };
	snprintf(m.mode, sizeof m.mode, "get");
	CHECK_EQ_INT(cn_bench_data_write(path, &m, recs, 500), CN_OK);
	cn_bench_acc a2;
	cn_bench_meta m2;
	char err[256] = "";
	CHECK_EQ_INT(cn_bench_data_read(path, &a2, &m2, err, sizeof err), CN_OK);
	char *j1 = cn_bench_report_json(&a, NULL), *j2 = cn_bench_report_json(&a2, NULL);
	CHECK(j1 && j2 && !strcmp(j1, j2));
	CHECK(strstr(j1, "NoSuchKey") != NULL);
	free(j1);
	free(j2);
	cn_bench_acc_fini(&a2);
	cn_bench_meta_fini(&m2);
	cn_bench_acc_fini(&a);
	/* not a benchdata file / missing file: clear errors */
	FILE *f = fopen(path, "w");
	fputs("hello\n", f);
	fclose(f);
	CHECK(cn_bench_data_read(path, &a2, &m2, err, sizeof err) != CN_OK);
	CHECK(strstr(err, "not a cairn benchdata") != NULL);
	unlink(path);
	CHECK_EQ_INT(cn_bench_data_read(path, &a2, &m2, err, sizeof err), CN_ERR_IO);
}

int main(void)
{
	RUN(test_hist_exact_small);
	RUN(test_hist_relative_precision);
	RUN(test_segments_split);
	RUN(test_segments_window);
	RUN(test_merge_equals_single);
	RUN(test_parse_size);
	RUN(test_flags);
	RUN(test_csv_and_file);
	TEST_END();
}

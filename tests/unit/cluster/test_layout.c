/* Unit tests for the erasure layout (src/cluster/layout.c) against MinIO's published
 * examples (DESIGN.md §9, MinIO's endpoint-ellipses tests and docs). */
#include "cluster/layout.h"
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>

static char errbuf[512];

/* Builds args with opts; checks pools' set size and set count; returns the error. */
static cn_err build(cn_layout *l, const cn_layout_opts *o, size_t nargs, ...)
{
	const char *args[8];
	va_list ap;
	va_start(ap, nargs);
	for (size_t i = 0; i < nargs && i < 8; i++)
		args[i] = va_arg(ap, const char *);
	va_end(ap);
	return cn_layout_build(args, nargs, o, l, errbuf, sizeof errbuf);
}

static void expect_sets(const char *arg, unsigned set_drive_count, unsigned want_size,
                        size_t want_sets, unsigned want_parity)
{
	cn_layout l;
	cn_layout_opts o = { .set_drive_count = set_drive_count };
	cn_err e = build(&l, &o, 1, arg);
	CHECK_EQ_INT(e, CN_OK);
	if (e) {
		fprintf(stderr, "  %s: %s\n", arg, errbuf);
		return;
	}
	CHECK_EQ_INT(l.npools, 1);
	CHECK_EQ_INT(l.pools[0].set_size, want_size);
	CHECK_EQ_INT(l.pools[0].nsets, want_sets);
	CHECK_EQ_INT(cn_layout_nsets(&l), want_sets);
	CHECK_EQ_INT(l.pools[0].ndrives, (size_t)want_size * want_sets);
	CHECK_EQ_INT(l.parity_standard, want_parity);
	CHECK_EQ_INT(l.custom_set_size, set_drive_count != 0);
	cn_layout_fini(&l);
}

TEST(minio_examples)
{
	/* issue 3 / DESIGN.md §9 / MinIO docs */
	expect_sets("http://node{1...4}/disk{1...4}", 0, 16, 1, 4);   /* 4 x 4 -> 1 x 16, EC:4 */
	expect_sets("http://node{1...2}/disk{1...4}", 4, 4, 2, 2);    /* override 4 -> 2 sets */
	expect_sets("http://node{1...2}/disk{1...4}", 0, 8, 1, 4);    /* no override: one of 8 */
	expect_sets("http://node{1...8}/disk{1...4}", 0, 16, 2, 4);   /* 8 x 4 -> 2 x 16 */
	expect_sets("/mnt/disk{1...6}", 0, 6, 1, 3);
	expect_sets("/mnt/disk{1...16}", 0, 16, 1, 4);
	expect_sets("/mnt/disk{1...12}", 0, 12, 1, 4);
	expect_sets("/mnt/disk{1...32}", 0, 16, 2, 4);
	expect_sets("/data{1...64}", 0, 16, 4, 4);
	expect_sets("/mnt/disk{1...4}", 0, 4, 1, 2);
	expect_sets("/mnt/disk{1...2}", 0, 2, 1, 1);
	expect_sets("/mnt/disk{1...3}", 0, 3, 1, 1);
	expect_sets("/mnt/disk{1...5}", 0, 5, 1, 2);
	expect_sets("/mnt/disk{1...7}", 0, 7, 1, 3);
	/* symmetry with the host ellipsis picks 15 over 12 and 12 over 15 */
	expect_sets("http://host{1...3}/data{1...180}", 0, 15, 36, 4);
	expect_sets("http://host{1...2}/data{1...180}", 0, 12, 30, 4);
	/* 18 drives on 3 hosts: 2, 6 ... 9 symmetric -> 9 (2 is not: 3 % 2 != 0) */
	expect_sets("http://h{1...3}/d{1...6}", 0, 9, 2, 4);
	/* 24 drives on 6 hosts: candidates 2 3 4 6 8 12; symmetric 2 3 6 12 -> 12 */
	expect_sets("http://h{1...6}/d{1...4}", 0, 12, 2, 4);
}

TEST(drive_order)
{
	cn_layout l;
	CHECK_EQ_INT(build(&l, NULL, 1, "http://host{1...2}/export{1...8}"), CN_OK);
	CHECK_EQ_INT(l.pools[0].set_size, 16);
	/* hosts interleaved first; slot j of set 0 is the j-th expanded endpoint */
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 0), "http://host1/export1");
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 1), "http://host2/export1");
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 2), "http://host1/export2");
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 15), "http://host2/export8");
	CHECK(cn_layout_drive(&l, 0, 1, 0) == NULL);
	CHECK(cn_layout_drive(&l, 0, 0, 16) == NULL);
	CHECK(cn_layout_drive(&l, 1, 0, 0) == NULL);
	CHECK(l.distributed);
	cn_layout_fini(&l);

	/* two sets of 16 out of 32: consecutive chunks */
	CHECK_EQ_INT(build(&l, NULL, 1, "/d{1...32}"), CN_OK);
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 0), "/d1");
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 15), "/d16");
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 1, 0), "/d17");
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 1, 15), "/d32");
	CHECK(!l.distributed);
	cn_layout_fini(&l);
}

TEST(pools)
{
	cn_layout l;
	CHECK_EQ_INT(build(&l, NULL, 2, "http://n{1...4}/d{1...4}", "http://n{5...8}/d{1...4}"), CN_OK);
	CHECK_EQ_INT(l.npools, 2);
	CHECK_EQ_INT(l.nendpoints, 32);
	CHECK_EQ_INT(cn_layout_nsets(&l), 2);
	CHECK_EQ_INT(l.pools[1].first, 16);
	CHECK_EQ_STR(cn_layout_drive(&l, 1, 0, 0), "http://n5/d1");
	CHECK_EQ_STR(l.pools[1].arg, "http://n{5...8}/d{1...4}");
	cn_layout_fini(&l);

	/* each pool sized on its own (MinIO); parity from the first pool, valid for both */
	CHECK_EQ_INT(build(&l, NULL, 2, "/a{1...16}", "/b{1...8}"), CN_OK);
	CHECK_EQ_INT(l.pools[0].set_size, 16);
	CHECK_EQ_INT(l.pools[1].set_size, 8);
	CHECK_EQ_INT(l.parity_standard, 4);
	cn_layout_fini(&l);

	/* first pool's default EC:4 does not fit a second pool of 6-drive sets */
	CHECK_EQ_INT(build(&l, NULL, 2, "/a{1...16}", "/b{1...6}"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "parity 4") != NULL);

	/* pools with and without ellipsis cannot be mixed */
	CHECK_EQ_INT(build(&l, NULL, 2, "/a{1...4}", "/b"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "ellipsis") != NULL);
	/* same drive twice */
	CHECK_EQ_INT(build(&l, NULL, 2, "/a{1...4}", "/a{3...6}"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "duplicate endpoint /a3") != NULL);
	/* URLs and paths mixed */
	CHECK_EQ_INT(build(&l, NULL, 2, "/a{1...4}", "http://h{1...4}/d"), CN_ERR_INVALID);
	CHECK(l.endpoints == NULL && l.npools == 0);
}

TEST(single_and_legacy)
{
	cn_layout l;
	CHECK_EQ_INT(build(&l, NULL, 1, "./data"), CN_OK);
	CHECK(l.single_drive);
	CHECK_EQ_INT(l.pools[0].set_size, 1);
	CHECK_EQ_INT(l.parity_standard, 0);
	CHECK_EQ_INT(l.parity_rrs, 0);
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 0), "./data");
	cn_layout_fini(&l);

	/* several plain arguments: one pool, no symmetry rule */
	CHECK_EQ_INT(build(&l, NULL, 4, "/d1", "/d2", "/d3", "/d4"), CN_OK);
	CHECK(!l.single_drive);
	CHECK_EQ_INT(l.npools, 1);
	CHECK_EQ_INT(l.pools[0].set_size, 4);
	CHECK_EQ_INT(l.parity_standard, 2);
	CHECK_EQ_STR(cn_layout_drive(&l, 0, 0, 3), "/d4");
	cn_layout_fini(&l);

	CHECK_EQ_INT(build(&l, NULL, 3, "/d1", "/d2", "/d1"), CN_ERR_INVALID);
	cn_layout_opts o = { .set_drive_count = 4 };
	CHECK_EQ_INT(build(&l, &o, 1, "./data"), CN_ERR_INVALID);
}

TEST(invalid_counts)
{
	cn_layout l;
	CHECK_EQ_INT(build(&l, NULL, 1, "/d{1...17}"), CN_ERR_INVALID);   /* prime > 16 */
	CHECK(strstr(errbuf, "17") != NULL);
	CHECK_EQ_INT(build(&l, NULL, 1, "/d{1...1}"), CN_ERR_INVALID);    /* one drive via ellipsis */
	CHECK_EQ_INT(build(&l, NULL, 1, "/d{1...19}"), CN_ERR_INVALID);
	/* 34 = 2 x 17: only 2 divides it, so MinIO makes 17 sets of 2 (EC:1) */
	expect_sets("/d{1...34}", 0, 2, 17, 1);
	/* 3 hosts x 2 drives = 6: candidates 2 3 6; symmetric 3, 6 -> 6 */
	expect_sets("http://h{1...3}/d{1...2}", 0, 6, 1, 3);
	/* 7 hosts x 2 = 14: candidates 2 7 14; symmetric with L=7: 7, 14 -> 14 */
	expect_sets("http://h{1...7}/d{1...2}", 0, 14, 1, 4);
	/* 11 hosts x 2 = 22: candidates 2, 11; L=11: 2 is not symmetric, 11 is -> 2 sets */
	expect_sets("http://h{1...11}/d{1...2}", 0, 11, 2, 4);
	/* 17 hosts x 2 = 34: candidates {2}; L=17 > 2 and 17 % 2 != 0 -> no symmetric size */
	CHECK_EQ_INT(build(&l, NULL, 1, "http://h{1...17}/d{1...2}"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "symmetric") != NULL);
	CHECK_EQ_INT(build(&l, NULL, 1, "/d{4...1}"), CN_ERR_INVALID);
	CHECK_EQ_INT(build(&l, NULL, 1, "/d{1...100000}"), CN_ERR_TOO_LARGE);
	CHECK_EQ_INT(cn_layout_build(NULL, 0, NULL, &l, errbuf, sizeof errbuf), CN_ERR_INVALID);
	const char *empty[] = { "" };
	CHECK_EQ_INT(cn_layout_build(empty, 1, NULL, &l, errbuf, sizeof errbuf), CN_ERR_INVALID);
}

TEST(override)
{
	cn_layout l;
	cn_layout_opts o = { .set_drive_count = 8 };
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...16}"), CN_OK);
	CHECK_EQ_INT(l.pools[0].set_size, 8);
	CHECK_EQ_INT(l.pools[0].nsets, 2);
	CHECK_EQ_INT(l.parity_standard, 4);
	cn_layout_fini(&l);

	/* the override skips the symmetry rule (MinIO: "user is on their own") */
	o.set_drive_count = 2;
	CHECK_EQ_INT(build(&l, &o, 1, "http://h{1...17}/d{1...2}"), CN_OK);
	CHECK_EQ_INT(l.pools[0].nsets, 17);
	cn_layout_fini(&l);

	o.set_drive_count = 5;
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...16}"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "acceptable values for 16 drives are 2 4 8 16") != NULL);
	o.set_drive_count = 32;
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...16}"), CN_ERR_INVALID);
	o.set_drive_count = 1;
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...16}"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "2 4 8 16") != NULL);
	o.set_drive_count = 12;
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...24}"), CN_OK);
	CHECK_EQ_INT(l.pools[0].nsets, 2);
	cn_layout_fini(&l);
}

TEST(env)
{
	cn_layout l;
	const char *a[] = { "/d{1...16}" };
	setenv("CAIRN_ERASURE_SET_DRIVE_COUNT", "4", 1);
	setenv("CAIRN_STORAGE_CLASS_STANDARD", "EC:2", 1);
	unsetenv("CAIRN_STORAGE_CLASS_RRS");
	setenv("MINIO_STORAGE_CLASS_RRS", "EC:2", 1);
	CHECK_EQ_INT(cn_layout_build_env(a, 1, &l, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(l.pools[0].set_size, 4);
	CHECK_EQ_INT(l.parity_standard, 2);
	CHECK_EQ_INT(l.parity_rrs, 2);   /* MINIO_* alias */
	cn_layout_fini(&l);
	setenv("CAIRN_ERASURE_SET_DRIVE_COUNT", "four", 1);
	CHECK_EQ_INT(cn_layout_build_env(a, 1, &l, errbuf, sizeof errbuf), CN_ERR_INVALID);
	setenv("CAIRN_ERASURE_SET_DRIVE_COUNT", "-4", 1);
	CHECK_EQ_INT(cn_layout_build_env(a, 1, &l, errbuf, sizeof errbuf), CN_ERR_INVALID);
	setenv("CAIRN_ERASURE_SET_DRIVE_COUNT", "6", 1);
	CHECK_EQ_INT(cn_layout_build_env(a, 1, &l, errbuf, sizeof errbuf), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "2 4 8 16") != NULL);
	unsetenv("CAIRN_ERASURE_SET_DRIVE_COUNT");
	unsetenv("CAIRN_STORAGE_CLASS_STANDARD");
	unsetenv("MINIO_STORAGE_CLASS_RRS");
	CHECK_EQ_INT(cn_layout_build_env(a, 1, &l, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(l.pools[0].set_size, 16);
	CHECK_EQ_INT(l.parity_standard, 4);
	CHECK_EQ_INT(l.parity_rrs, 1);
	cn_layout_fini(&l);
}

TEST(parity_defaults)
{
	const unsigned want[17] = { 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4 };
	for (unsigned n = 1; n <= 16; n++)
		CHECK_EQ_INT(cn_layout_default_parity(n), want[n]);
	unsigned sz[CN_LAYOUT_MAX_SET];
	CHECK_EQ_INT(cn_layout_set_sizes(16, sz), 4);
	CHECK_EQ_INT(sz[3], 16);
	CHECK_EQ_INT(cn_layout_set_sizes(540, sz), 9);
	CHECK_EQ_INT(cn_layout_set_sizes(17, sz), 0);
	CHECK_EQ_INT(cn_layout_set_sizes(0, sz), 0);
}

TEST(storage_class_parsing)
{
	unsigned p = 99;
	CHECK_EQ_INT(cn_layout_parse_ec("EC:4", &p, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(p, 4);
	CHECK_EQ_INT(cn_layout_parse_ec("EC:0", &p, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(p, 0);
	CHECK_EQ_INT(cn_layout_parse_ec("EC:12", &p, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(p, 12);
	const char *bad[] = { "", "EC", "EC:", "ec:2", "EC:-1", "EC:2:3", "EC: 2", "EC:2 ",
		              "RS:2", "EC:x", "EC:99999999999", "EC:+2" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		errbuf[0] = 0;
		CHECK_EQ_INT(cn_layout_parse_ec(bad[i], &p, errbuf, sizeof errbuf), CN_ERR_INVALID);
		CHECK(errbuf[0] != 0);
	}
	CHECK_EQ_INT(cn_layout_parse_ec(NULL, &p, errbuf, sizeof errbuf), CN_ERR_INVALID);
}

TEST(storage_class_validation)
{
	/* parity <= N/2 */
	CHECK_EQ_INT(cn_layout_check_parity(8, 1, 16, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(cn_layout_check_parity(9, 1, 16, errbuf, sizeof errbuf), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "less than or equal to 8") != NULL);
	CHECK_EQ_INT(cn_layout_check_parity(2, 1, 4, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(cn_layout_check_parity(3, 1, 4, errbuf, sizeof errbuf), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_layout_check_parity(2, 3, 5, errbuf, sizeof errbuf), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_layout_check_parity(1, 1, 2, errbuf, sizeof errbuf), CN_OK);
	/* EC:0 only for a single drive */
	CHECK_EQ_INT(cn_layout_check_parity(0, 0, 1, errbuf, sizeof errbuf), CN_OK);
	CHECK_EQ_INT(cn_layout_check_parity(1, 0, 1, errbuf, sizeof errbuf), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_layout_check_parity(0, 0, 4, errbuf, sizeof errbuf), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "EC:0") != NULL);
	CHECK_EQ_INT(cn_layout_check_parity(2, 0, 4, errbuf, sizeof errbuf), CN_ERR_INVALID);
	/* STANDARD >= RRS */
	CHECK_EQ_INT(cn_layout_check_parity(2, 3, 16, errbuf, sizeof errbuf), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_layout_check_parity(3, 3, 16, errbuf, sizeof errbuf), CN_OK);

	/* through the builder */
	cn_layout l;
	cn_layout_opts o = { .sc_standard = "EC:3", .sc_rrs = "EC:2" };
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...8}"), CN_OK);
	CHECK_EQ_INT(l.parity_standard, 3);
	CHECK_EQ_INT(l.parity_rrs, 2);
	unsigned p;
	CHECK_EQ_INT(cn_layout_parity_for_class(&l, NULL, &p), CN_OK);
	CHECK_EQ_INT(p, 3);
	CHECK_EQ_INT(cn_layout_parity_for_class(&l, "STANDARD", &p), CN_OK);
	CHECK_EQ_INT(p, 3);
	CHECK_EQ_INT(cn_layout_parity_for_class(&l, "REDUCED_REDUNDANCY", &p), CN_OK);
	CHECK_EQ_INT(p, 2);
	CHECK_EQ_INT(cn_layout_parity_for_class(&l, "GLACIER", &p), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_layout_parity_for_class(&l, "standard", &p), CN_ERR_INVALID);
	cn_layout_fini(&l);
	o = (cn_layout_opts){ .sc_standard = "EC:5" };
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...8}"), CN_ERR_INVALID);
	o = (cn_layout_opts){ .sc_standard = "EC:0" };
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...8}"), CN_ERR_INVALID);
	CHECK_EQ_INT(build(&l, &o, 1, "./one"), CN_OK);
	cn_layout_fini(&l);
	o = (cn_layout_opts){ .sc_standard = "EC:1" };
	CHECK_EQ_INT(build(&l, &o, 1, "./one"), CN_ERR_INVALID);
	o = (cn_layout_opts){ .sc_rrs = "EC:3" };   /* equal to the default EC:3 of 6 drives */
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...6}"), CN_OK);
	cn_layout_fini(&l);
	o = (cn_layout_opts){ .sc_standard = "EC:2", .sc_rrs = "EC:3" };   /* RRS above STANDARD */
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...8}"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "greater than or equal") != NULL);
	o = (cn_layout_opts){ .sc_standard = "EC:1" };  /* STANDARD 1 with default RRS 1 */
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...2}"), CN_OK);
	CHECK_EQ_INT(l.parity_rrs, 1);
	cn_layout_fini(&l);
	o = (cn_layout_opts){ .sc_standard = "bogus" };
	CHECK_EQ_INT(build(&l, &o, 1, "/d{1...8}"), CN_ERR_INVALID);
	CHECK(strstr(errbuf, "bogus") != NULL);
}

TEST(host_warning)
{
	cn_layout l;
	char msg[256];
	/* 2 hosts x 8 drives, one set of 16, EC:4: each host holds 8 > 4 drives */
	CHECK_EQ_INT(build(&l, NULL, 1, "http://h{1...2}:9100/d{1...8}"), CN_OK);
	CHECK(cn_layout_host_warning(&l, l.parity_standard, msg, sizeof msg));
	CHECK(strstr(msg, "h1:9100") != NULL);
	cn_layout_fini(&l);
	/* 4 hosts x 4 drives, EC:4: 4 per host is fine */
	CHECK_EQ_INT(build(&l, NULL, 1, "http://h{1...4}/d{1...4}"), CN_OK);
	CHECK(!cn_layout_host_warning(&l, l.parity_standard, msg, sizeof msg));
	cn_layout_fini(&l);
	/* local drives: never */
	CHECK_EQ_INT(build(&l, NULL, 1, "/d{1...16}"), CN_OK);
	CHECK(!cn_layout_host_warning(&l, l.parity_standard, msg, sizeof msg));
	cn_layout_fini(&l);
	cn_layout_fini(&l);   /* twice is fine */
}

int main(void)
{
	RUN(minio_examples);
	RUN(drive_order);
	RUN(pools);
	RUN(single_and_legacy);
	RUN(invalid_counts);
	RUN(override);
	RUN(env);
	RUN(parity_defaults);
	RUN(storage_class_parsing);
	RUN(storage_class_validation);
	RUN(host_warning);
	TEST_END();
}

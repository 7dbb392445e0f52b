/* Unit tests for the `{a...b}` ellipsis expansion (src/cluster/ellipsis.c). */
#include "cluster/cluster.h"
#include "test.h"

static void expect(const char *arg, size_t n, const char *const *first)
{
	char **l = NULL;
	size_t got = 0;
	cn_err e = cn_cluster_expand(arg, &l, &got);
	CHECK_EQ_INT(e, CN_OK);
	CHECK_EQ_INT(got, n);
	for (size_t i = 0; first[i] && i < got; i++)
		CHECK_EQ_STR(l[i], first[i]);
	cn_cluster_free_list(l, got);
}

TEST(plain_argument)
{
	const char *w[] = { "./data", NULL };
	expect("./data", 1, w);
}

TEST(numeric_range)
{
	const char *w[] = { "/mnt/disk1", "/mnt/disk2", "/mnt/disk3", "/mnt/disk4", NULL };
	expect("/mnt/disk{1...4}", 4, w);
}

TEST(zero_padded)
{
	const char *w[] = { "/d01", "/d02", NULL };
	expect("/d{01...16}", 16, w);
	char **l;
	size_t n;
	CHECK_EQ_INT(cn_cluster_expand("/d{01...16}", &l, &n), CN_OK);
	CHECK_EQ_STR(l[15], "/d16");
	cn_cluster_free_list(l, n);
}

TEST(letters)
{
	const char *w[] = { "/dev/sda", "/dev/sdb", "/dev/sdc", NULL };
	expect("/dev/sd{a...c}", 3, w);
}

TEST(hosts_interleave_first)
{
	/* DESIGN.md §9: host1/export1, host2/export1, host1/export2, ... */
	const char *w[] = { "http://host1/export1", "http://host2/export1", "http://host1/export2",
		            "http://host2/export2", NULL };
	expect("http://host{1...2}/export{1...8}", 16, w);
}

TEST(product_size)
{
	const char *w[] = { NULL };
	expect("http://host{1...4}/disk{1...4}", 16, w);
	expect("http://host{1...3}/data{1...180}", 540, w);
}

TEST(invalid)
{
	char **l;
	size_t n;
	CHECK_EQ_INT(cn_cluster_expand("/d{4...1}", &l, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_cluster_expand("/d{1..4}", &l, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_cluster_expand("/d{1...4", &l, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_cluster_expand("/d}", &l, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_cluster_expand("/d{a...4}", &l, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_cluster_expand("", &l, &n), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_cluster_expand("/d{1...100000}", &l, &n), CN_ERR_TOO_LARGE);
}

int main(void)
{
	RUN(plain_argument);
	RUN(numeric_range);
	RUN(zero_padded);
	RUN(letters);
	RUN(hosts_interleave_first);
	RUN(product_size);
	RUN(invalid);
	TEST_END();
}

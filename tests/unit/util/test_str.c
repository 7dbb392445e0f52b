/* Unit tests for the string helpers the request path uses instead of the printf engine
 * (src/util/util.c): cn_strlcpy, cn_fmt_u64, cn_buf_put_u64, cn_find_head_end. Each is
 * compared with the libc call it replaces (snprintf, memmem) over many inputs. cn_str_cmp:
 * memcmp's order, a prefix first. cn_env2: the first of a setting's two names that is set
 * and not empty. */
#include "util/util.h"
#include "test.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

TEST(strlcpy_is_snprintf_s)
{
	const char *srcs[] = { "", "a", "abcdefg", "abcdefgh", "abcdefghi", "0123456789abcdef" };
	for (size_t cap = 1; cap <= 12; cap++)
		for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
			char got[16], want[16];
			memset(got, 'x', sizeof got);
			int w = snprintf(want, cap, "%s", srcs[i]);
			size_t g = cn_strlcpy(got, srcs[i], cap);
			CHECK_EQ_INT(g, w);
			CHECK_EQ_STR(got, want);
			for (size_t k = cap; k < sizeof got; k++)
				CHECK(got[k] == 'x'); /* nothing written past cap */
		}
}

TEST(fmt_u64_is_printf)
{
	uint64_t vs[] = { 0, 1, 9, 10, 99, 100, 4096, 65536, 1000000007ULL, UINT32_MAX,
			  (uint64_t)INT64_MAX, UINT64_MAX };
	for (size_t i = 0; i < sizeof vs / sizeof *vs; i++) {
		char got[21], want[32];
		snprintf(want, sizeof want, "%" PRIu64, vs[i]);
		CHECK_EQ_INT(cn_fmt_u64(vs[i], got), strlen(want));
		CHECK_EQ_STR(got, want);
	}
	/* and every power of ten and its neighbours */
	for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10)
		for (int d = -1; d <= 1; d++) {
			char got[21], want[32];
			snprintf(want, sizeof want, "%" PRIu64, p + (uint64_t)d);
			cn_fmt_u64(p + (uint64_t)d, got);
			CHECK_EQ_STR(got, want);
		}
	cn_buf b;
	cn_buf_init(&b);
	CHECK(cn_buf_puts(&b, "len=") == CN_OK);
	CHECK(cn_buf_put_u64(&b, 18446744073709551615ULL) == CN_OK);
	CHECK_EQ_STR(b.p, "len=18446744073709551615");
	cn_buf_fini(&b);
}

/* The end of a head as cn_find_head_end defines it, byte by byte. */
static const char *head_end_ref(const char *s, size_t len)
{
	for (size_t j = 0; j < len; j++) {
		if (s[j] != '\n')
			continue;
		if (j == 0 || s[j - 1] != '\r')
			return s + j + 1; /* bare LF */
		if (j >= 3 && s[j - 2] == '\n' && s[j - 3] == '\r')
			return s + j + 1; /* CRLFCRLF */
	}
	return NULL;
}

/* cn_find_head_end must agree with the byte-by-byte definition on every string over a
 * small alphabet that makes the near misses ("\r\n\r", "\n\r\n", "\r\r\n\n") common. */
TEST(find_head_end_is_the_definition)
{
	const char alpha[] = { '\r', '\n', 'a' };
	char s[10];
	size_t checked = 0;
	for (size_t len = 0; len <= 9; len++) {
		size_t total = 1;
		for (size_t i = 0; i < len; i++)
			total *= 3;
		for (size_t code = 0; code < total; code++) {
			size_t c = code;
			for (size_t i = 0; i < len; i++) {
				s[i] = alpha[c % 3];
				c /= 3;
			}
			const char *want = head_end_ref(s, len);
			const char *got = cn_find_head_end(s, len, 0);
			if (got != want) {
				CHECK(got == want);
				return;
			}
			checked++;
		}
	}
	CHECK(checked > 29000);
	const char head[] = "GET /b/k HTTP/1.1\r\nHost: x\r\n\r\nbody\n\r\n\r\n";
	CHECK(cn_find_head_end(head, sizeof head - 1, 0) == head + 30);
	CHECK(cn_find_head_end(head, 29, 0) == NULL); /* the last byte of the end not yet here */
	/* resumed 3 bytes before the end of an earlier scan, as the event loop does */
	CHECK(cn_find_head_end(head, sizeof head - 1, 26) == head + 30);
	const char bare[] = "GET / HTTP/1.1\nHost: x\n\n";
	CHECK(cn_find_head_end(bare, sizeof bare - 1, 0) == bare + 15);
	CHECK(cn_find_head_end("\n", 1, 0) != NULL);
}

TEST(str_cmp_is_memcmp_then_length)
{
	CHECK(cn_str_cmp(CN_STR("a"), CN_STR("b")) < 0);
	CHECK(cn_str_cmp(CN_STR("b"), CN_STR("a")) > 0);
	CHECK(cn_str_cmp(CN_STR("ab"), CN_STR("ab")) == 0);
	CHECK(cn_str_cmp(CN_STR("ab"), CN_STR("abc")) < 0); /* a prefix first */
	CHECK(cn_str_cmp(CN_STR("abc"), CN_STR("ab")) > 0);
	CHECK(cn_str_cmp(CN_STR(""), CN_STR("a")) < 0);
	CHECK(cn_str_cmp((cn_str){ NULL, 0 }, CN_STR("")) == 0);
	CHECK(cn_str_cmp(CN_STR("\xff"), CN_STR("a")) > 0); /* unsigned bytes */
}

TEST(env2_first_set_and_not_empty)
{
	unsetenv("CN_TEST_A");
	unsetenv("CN_TEST_B");
	CHECK(cn_env2("CN_TEST_A", "CN_TEST_B") == NULL);
	setenv("CN_TEST_B", "", 1);
	CHECK(cn_env2("CN_TEST_A", "CN_TEST_B") == NULL); /* an empty alias is unset too */
	setenv("CN_TEST_B", "b", 1);
	CHECK_EQ_STR(cn_env2("CN_TEST_A", "CN_TEST_B"), "b");
	setenv("CN_TEST_A", "", 1);
	CHECK_EQ_STR(cn_env2("CN_TEST_A", "CN_TEST_B"), "b");
	setenv("CN_TEST_A", "a", 1);
	CHECK_EQ_STR(cn_env2("CN_TEST_A", "CN_TEST_B"), "a");
	unsetenv("CN_TEST_A");
	unsetenv("CN_TEST_B");
}

int main(void)
{
	RUN(strlcpy_is_snprintf_s);
	RUN(fmt_u64_is_printf);
	RUN(find_head_end_is_the_definition);
	RUN(str_cmp_is_memcmp_then_length);
	RUN(env2_first_set_and_not_empty);
	TEST_END();
}

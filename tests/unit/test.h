/* test.h: the smallest test harness that CI can read. Each test binary defines tests with
 * TEST(name) and lists them in main via RUN(name); CHECK* record failures without stopping
 * the test; the binary prints "N passed, N failed" and exits non-zero on any failure.
 * Tests run from tests/vectors/ (so vector files are found by relative path). */
#ifndef CN_TEST_H
#define CN_TEST_H
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static int t_failed_checks, t_pass, t_fail;
#define TEST(name) static void name(void)
#define CHECK(c) do { if (!(c)) { t_failed_checks++; \
	fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); if (_a != _b) { \
	t_failed_checks++; fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
	__FILE__, __LINE__, #a, _a, #b, _b); } } while (0)
#define CHECK_EQ_STR(a, b) do { const char *_a = (a), *_b = (b); if (!_a || !_b || strcmp(_a, _b)) { \
	t_failed_checks++; fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", \
	__FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)
#define CHECK_MEM(a, b, n) do { if (memcmp((a), (b), (n))) { t_failed_checks++; \
	fprintf(stderr, "%s:%d: memory %s != %s\n", __FILE__, __LINE__, #a, #b); } } while (0)
#define RUN(name) do { int _before = t_failed_checks; name(); \
	if (t_failed_checks == _before) t_pass++; else { t_fail++; fprintf(stderr, "FAIL %s\n", #name); } } while (0)
#define TEST_END() do { printf("%s: %d passed, %d failed\n", __FILE__, t_pass, t_fail); \
	return t_fail ? 1 : 0; } while (0)
#endif

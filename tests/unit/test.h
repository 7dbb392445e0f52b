/* test.h: the smallest test harness that CI can read. Each test binary defines tests with
 * TEST(name) and lists them in main via RUN(name); CHECK* record failures without stopping
 * the test; SKIP("reason", ...) ends a test that cannot run here (printf-style reason). A
 * test passes when it ran at least one CHECK and none failed; one that ran no CHECK and did
 * not SKIP fails (a test that cannot fail is not a pass). The binary prints
 * "N passed, N failed, N skipped" and exits non-zero on any failure.
 * Tests run from tests/vectors/ (so vector files are found by relative path). */
#ifndef CN_TEST_H
#define CN_TEST_H
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

static int t_checks, t_failed_checks, t_skipped, t_pass, t_fail, t_skip;
static char t_skip_reason[256];
#define TEST(name) static void name(void)
#define T_COUNT(c) (t_checks++, (c))
#define CHECK(c) do { if (!T_COUNT(c)) { t_failed_checks++; \
	fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (T_COUNT(_a != _b)) { \
	t_failed_checks++; fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
	__FILE__, __LINE__, #a, _a, #b, _b); } } while (0)
#define CHECK_EQ_STR(a, b) do { const char *_a = (a), *_b = (b); \
	if (T_COUNT(!_a || !_b || strcmp(_a, _b))) { \
	t_failed_checks++; fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", \
	__FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)
#define CHECK_MEM(a, b, n) do { if (T_COUNT(memcmp((a), (b), (n)))) { t_failed_checks++; \
	fprintf(stderr, "%s:%d: memory %s != %s\n", __FILE__, __LINE__, #a, #b); } } while (0)
/* Ends the running test as skipped, with the reason printed beside its name. Only for what
 * this machine cannot do (no mount namespace, no root), never for a failure. */
#define SKIP(...) do { t_skipped = 1; \
	snprintf(t_skip_reason, sizeof t_skip_reason, __VA_ARGS__); return; } while (0)
#define RUN(name) do { int _failed = t_failed_checks, _checks = t_checks; \
	t_skipped = 0; name(); \
	if (t_failed_checks != _failed) { t_fail++; fprintf(stderr, "FAIL %s\n", #name); } \
	else if (t_skipped) { t_skip++; fprintf(stderr, "SKIP %s: %s\n", #name, t_skip_reason); } \
	else if (t_checks == _checks) { t_fail++; \
		fprintf(stderr, "FAIL %s: ran no CHECK and did not SKIP\n", #name); } \
	else t_pass++; } while (0)
#define TEST_END() do { printf("%s: %d passed, %d failed, %d skipped\n", __FILE__, t_pass, t_fail, \
	t_skip); return t_fail ? 1 : 0; } while (0)
#endif

/* Unit tests for the HTTP date (cn_time_http, src/util/util.c): formatted by hand, it
 * must equal strftime's IMF-fixdate for every date it is given. */
#include "util/util.h"
#include "test.h"

#include <time.h>

static void expect_like_strftime(int64_t secs)
{
	char got[30], want[64];
	time_t t = (time_t)secs;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	cn_time_http(secs * 1000 + 999, got);
	CHECK_EQ_STR(got, want);
}

TEST(known_dates)
{
	char out[30];
	cn_time_http(0, out);
	CHECK_EQ_STR(out, "Thu, 01 Jan 1970 00:00:00 GMT");
	cn_time_http(784111777000, out); /* RFC 9110's example */
	CHECK_EQ_STR(out, "Sun, 06 Nov 1994 08:49:37 GMT");
	cn_time_http(1796137478123, out);
	CHECK_EQ_STR(out, "Tue, 01 Dec 2026 15:04:38 GMT");
	cn_time_http(253402300799000, out); /* the last second of year 9999 */
	CHECK_EQ_STR(out, "Fri, 31 Dec 9999 23:59:59 GMT");
}

TEST(every_37_hours_to_2200_like_strftime)
{
	for (int64_t s = 0; s < 7258118400; s += 37 * 3600 + 61)
		expect_like_strftime(s);
}

TEST(out_of_range_years_stay_bounded)
{
	char out[30];
	cn_time_http(253402300800000, out); /* year 10000: the slow path, cut to 29 bytes */
	CHECK(strlen(out) == 29);
}

int main(void)
{
	RUN(known_dates);
	RUN(every_37_hours_to_2200_like_strftime);
	RUN(out_of_range_years_stay_bounded);
	TEST_END();
}

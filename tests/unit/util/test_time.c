/* Unit tests for the dates of src/util/util.c: the HTTP date (cn_time_http), formatted by
 * hand, must equal strftime's IMF-fixdate for every date it is given; cn_time_utc must
 * equal gmtime_r field by field, and the parsers (cn_time_parse_amz/_http, by arithmetic)
 * must give what timegm gives, normalisation of days past a month's end included. Durations
 * (cn_parse_duration, the grammar of the server's settings and of bench's flags) as Go
 * writes them. */
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

static bool same_tm(int64_t secs)
{
	time_t t = (time_t)secs;
	struct tm want, got;
	gmtime_r(&t, &want);
	cn_time_utc(secs, &got);
	return got.tm_year == want.tm_year && got.tm_mon == want.tm_mon &&
	       got.tm_mday == want.tm_mday && got.tm_hour == want.tm_hour &&
	       got.tm_min == want.tm_min && got.tm_sec == want.tm_sec &&
	       got.tm_wday == want.tm_wday && got.tm_yday == want.tm_yday;
}

TEST(utc_like_gmtime)
{
	/* year 1 to 9999 in steps of ~3.3 days (every weekday, month and leap rule), and
	 * every second around the leap days and year ends that break naive code */
	int bad = 0;
	for (int64_t s = -62135596800; s <= 253402300799; s += 287999)
		bad += !same_tm(s);
	const int64_t edges[] = { 0, 951782400 /* 2000-02-29 */, 4107542400 /* 2100-03-01 */,
	                          -2203891200 /* 1900-03-01 */, 1709164800 /* 2024-02-29 */,
	                          946684800 /* 2000-01-01 */, -86400, -1 };
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
		for (int64_t s = edges[i] - 90000; s <= edges[i] + 90000; s += 7)
			bad += !same_tm(s);
	CHECK_EQ_INT(bad, 0);
}

static int64_t timegm_ms(int y, int mo, int d, int h, int mi, int se)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
	                 .tm_min = mi, .tm_sec = se };
	return (int64_t)timegm(&tm) * 1000;
}

TEST(parsers_like_timegm)
{
	int bad = 0;
	uint32_t x = 12345;
	for (int i = 0; i < 200000; i++) {
		x = x * 1103515245u + 12345u;
		int y = 1900 + (int)(x >> 8) % 8100, mo = 1 + (int)(x >> 3) % 12;
		x = x * 1103515245u + 12345u;
		int d = 1 + (int)(x >> 9) % 31, h = (int)(x >> 4) % 24; /* Feb 30 etc.: counted on */
		x = x * 1103515245u + 12345u;
		int mi = (int)(x >> 7) % 60, se = (int)(x >> 2) % 61;   /* :60 too */
		char amz[17];
		snprintf(amz, sizeof amz, "%04d%02d%02dT%02d%02d%02dZ", y, mo, d, h, mi, se);
		int64_t got = -1;
		if (cn_time_parse_amz(cn_str_c(amz), &got) != CN_OK || got != timegm_ms(y, mo, d, h, mi, se))
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	int64_t ms = 0;
	CHECK_EQ_INT(cn_time_parse_amz(cn_str_c("19700101T000000Z"), &ms), CN_OK);
	CHECK_EQ_INT(ms, 0);
	CHECK_EQ_INT(cn_time_parse_amz(cn_str_c("20130524T000000Z"), &ms), CN_OK);
	CHECK_EQ_INT(ms, 1369353600000);
	CHECK_EQ_INT(cn_time_parse_amz(cn_str_c("20130524T240000Z"), &ms), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_time_parse_amz(cn_str_c("20131324T000000Z"), &ms), CN_ERR_INVALID);
	CHECK_EQ_INT(cn_time_parse_http(cn_str_c("Sun, 06 Nov 1994 08:49:37 GMT"), &ms), CN_OK);
	CHECK_EQ_INT(ms, 784111777000);
	CHECK_EQ_INT(cn_time_parse_http(cn_str_c("Sunday, 06-Nov-94 08:49:37 GMT"), &ms), CN_OK);
	CHECK_EQ_INT(ms, 784111777000);
	CHECK_EQ_INT(cn_time_parse_http(cn_str_c("Sun Nov  6 08:49:37 1994"), &ms), CN_OK);
	CHECK_EQ_INT(ms, 784111777000);
	/* ISO 8601 with milliseconds, by the same arithmetic */
	char iso[25];
	cn_time_iso8601(951825599123, iso);
	CHECK_EQ_STR(iso, "2000-02-29T11:59:59.123Z");
}

TEST(durations_as_go_writes_them)
{
	const int64_t ms = 1000000, sec = 1000 * ms;
	static const struct {
		const char *text;
		int64_t ns;
	} ok[] = {
		{ "1m30s", 90 * sec }, { "1h30m", 5400 * sec }, { "1.5h", 5400 * sec },
		{ "500ms", 500 * ms }, { "2", 2 * sec }, { "0", 0 }, { "1h", 3600 * sec },
		{ "24h", 86400 * sec }, { "250us", 250000 }, { "250µs", 250000 }, { "7ns", 7 },
		{ "1m0.5s", 60 * sec + 500 * ms },
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		int64_t ns = -1;
		CHECK_EQ_INT(cn_parse_duration(ok[i].text, &ns), CN_OK);
		CHECK_EQ_INT(ns, ok[i].ns);
	}
	static const char *const bad[] = { "", "5x", "-5s", "+5s", "1s2", "s", "1 h", "ms", "366d",
		                               "9000h" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int64_t ns = -1;
		CHECK_EQ_INT(cn_parse_duration(bad[i], &ns), CN_ERR_INVALID);
		CHECK_EQ_INT(ns, -1);
	}
}

int main(void)
{
	RUN(known_dates);
	RUN(every_37_hours_to_2200_like_strftime);
	RUN(out_of_range_years_stay_bounded);
	RUN(utc_like_gmtime);
	RUN(parsers_like_timegm);
	RUN(durations_as_go_writes_them);
	TEST_END();
}

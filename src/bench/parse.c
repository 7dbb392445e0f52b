/* bench/parse: defaults and the parser of sizes, warp's spelling: KiB/MiB/GiB (and k/m/g)
 * are powers of two, KB/MB/GB powers of ten. Durations are util's cn_parse_duration, the
 * grammar the server's settings use too. */
#include "bench/bench.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cn_bench_cfg_defaults(cn_bench_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->mode = CN_BENCH_PUT;
	c->hosts = "127.0.0.1:9000";
	c->region = "us-east-1";
	c->bucket = "cairn-bench";
	c->prefix = "";
	c->obj_size = 10u << 20;
	c->objects = 2500;
	c->concurrent = 20;
	c->threads = 0;
	c->duration_ns = 60LL * 1000000000;
	c->autoterm_dur_ns = 10LL * 1000000000;
	c->autoterm_pct = 7.5;
	c->parts = 50;
	c->part_size = 5u << 20;
	c->get_distrib = 45;
	c->stat_distrib = 30;
	c->put_distrib = 15;
	c->delete_distrib = 10;
	c->loops = 1;
	c->request_timeout_ms = 120000;
	c->agent_fd = -1;
}

cn_err cn_bench_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return CN_ERR_INVALID;
	while (isspace((unsigned char)*s))
		s++;
	if (*s == '-' || *s == '+')
		return CN_ERR_INVALID;
	char *end;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0)
		return CN_ERR_INVALID;
	while (*end == ' ')
		end++;
	static const struct {
		const char *suffix;
		double mul;
	} units[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", 1024.0 }, { "kib", 1024.0 }, { "ki", 1024.0 }, { "kb", 1e3 },
		{ "m", 1048576.0 }, { "mib", 1048576.0 }, { "mi", 1048576.0 }, { "mb", 1e6 },
		{ "g", 1073741824.0 }, { "gib", 1073741824.0 }, { "gi", 1073741824.0 }, { "gb", 1e9 },
		{ "t", 1099511627776.0 }, { "tib", 1099511627776.0 }, { "tb", 1e12 },
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp(end, units[i].suffix))
			continue;
		double b = v * units[i].mul;
		if (b > 1099511627776.0)
			return CN_ERR_INVALID;
		*out = (uint64_t)llround(b);
		return CN_OK;
	}
	return CN_ERR_INVALID;
}

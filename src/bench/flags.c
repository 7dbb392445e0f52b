/* bench/flags: the benchmark flags, warp's names ("--obj.size 4MiB" or "--obj.size=4MiB"),
 * into a cn_bench_cfg. Shared by `cairn bench MODE` (src/cli/bench.c) and agents, which
 * receive the driver's flags over the wire. Strings in cfg point into argv. */
#include "bench/bench_int.h"

#include <stdlib.h>
#include <string.h>

int cn_bench_parse_mode(const char *s)
{
	static const char *const n[] = { "put", "get", "delete", "stat", "list", "mixed", "multipart", "loop" };
	for (int i = 0; i < (int)(sizeof n / sizeof n[0]); i++)
		if (!strcmp(s, n[i]))
			return i;
	return -1;
}

static bool parse_bool(const char *v, bool *out)
{
	if (!v || !strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")) {
		*out = true;
		return true;
	}
	if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no")) {
		*out = false;
		return true;
	}
	return false;
}

static bool parse_num(const char *v, double lo, double hi, double *out)
{
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !(d >= lo && d <= hi))
		return false;
	*out = d;
	return true;
}

int cn_bench_parse_flags(int argc, char **argv, cn_bench_cfg *c, char *err, size_t errlen)
{
	static const char *const boolflags[] = { "--tls", "--insecure", "--obj.randsize", "--autoterm", "--json",
		                                 "--noclear", "--verify", "--quiet", "--poisson", NULL };
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		if (strncmp(a, "--", 2)) {
			snprintf(err, errlen, "unexpected argument '%s'", a);
			return 2;
		}
		char name[64];
		const char *val = NULL;
		const char *eq = strchr(a, '=');
		size_t nl = eq ? (size_t)(eq - a) : strlen(a);
		if (nl >= sizeof name) {
			snprintf(err, errlen, "unknown flag '%s'", a);
			return 2;
		}
		memcpy(name, a, nl);
		name[nl] = 0;
		bool isbool = false;
		for (int k = 0; boolflags[k]; k++)
			if (!strcmp(name, boolflags[k]))
				isbool = true;
		static const char *const valflags[] = {
			"--host", "--access-key", "--secret-key", "--region", "--bucket", "--prefix", "--obj.size",
			"--part.size", "--objects", "--concurrent", "--threads", "--parts", "--loops", "--duration",
			"--autoterm.dur", "--autoterm.pct", "--request-timeout", "--lookup", "--benchdata", "--rate",
			"--rate.dist", "--sweep", "--plot", "--get-distrib", "--put-distrib", "--stat-distrib",
			"--delete-distrib", "--agents", "--warp-client", NULL
		};
		bool known = isbool;
		for (int k = 0; valflags[k] && !known; k++)
			known = !strcmp(name, valflags[k]);
		if (!known) {
			snprintf(err, errlen, "unknown flag '%s' (see cairn bench --help)", name);
			return 2;
		}
		if (eq)
			val = eq + 1;
		else if (!isbool) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "flag %s needs a value", name);
				return 2;
			}
			val = argv[++i];
		}
		bool ok = true, b = false;
		double d = 0;
		uint64_t sz = 0;
		if (isbool) {
			ok = parse_bool(val, &b);
			if (ok) {
				if (!strcmp(name, "--tls"))
					c->tls = b;
				else if (!strcmp(name, "--insecure"))
					c->insecure = b;
				else if (!strcmp(name, "--obj.randsize"))
					c->randsize = b;
				else if (!strcmp(name, "--autoterm"))
					c->autoterm = b;
				else if (!strcmp(name, "--json"))
					c->json = b;
				else if (!strcmp(name, "--noclear"))
					c->noclear = b;
				else if (!strcmp(name, "--verify"))
					c->verify = b;
				else if (!strcmp(name, "--quiet"))
					c->quiet = b;
				else if (!strcmp(name, "--poisson"))
					c->poisson = b;
			}
		} else if (!strcmp(name, "--host")) {
			c->hosts = val;
		} else if (!strcmp(name, "--access-key")) {
			c->access_key = val;
		} else if (!strcmp(name, "--secret-key")) {
			c->secret_key = val;
		} else if (!strcmp(name, "--region")) {
			c->region = val;
		} else if (!strcmp(name, "--bucket")) {
			c->bucket = val;
			ok = *val && strlen(val) <= 63;
		} else if (!strcmp(name, "--prefix")) {
			c->prefix = val;
			ok = strlen(val) < 200;
		} else if (!strcmp(name, "--obj.size")) {
			ok = !cn_bench_parse_size(val, &sz) && sz > 0 && sz <= (64ull << 30);
			c->obj_size = sz;
		} else if (!strcmp(name, "--part.size")) {
			ok = !cn_bench_parse_size(val, &sz) && sz > 0 && sz <= (5ull << 30);
			c->part_size = sz;
		} else if (!strcmp(name, "--objects")) {
			ok = parse_num(val, 1, 1e8, &d);
			c->objects = (uint64_t)d;
		} else if (!strcmp(name, "--concurrent")) {
			ok = parse_num(val, 1, 100000, &d);
			c->concurrent = (int)d;
		} else if (!strcmp(name, "--threads")) {
			ok = parse_num(val, 1, 64, &d);
			c->threads = (int)d;
		} else if (!strcmp(name, "--parts")) {
			ok = parse_num(val, 1, 10000, &d);
			c->parts = (int)d;
		} else if (!strcmp(name, "--loops")) {
			ok = parse_num(val, 1, 1e6, &d);
			c->loops = (int)d;
		} else if (!strcmp(name, "--duration")) {
			ok = !cn_parse_duration(val, &c->duration_ns) && c->duration_ns > 0;
		} else if (!strcmp(name, "--autoterm.dur")) {
			ok = !cn_parse_duration(val, &c->autoterm_dur_ns) && c->autoterm_dur_ns >= 1000000000;
		} else if (!strcmp(name, "--autoterm.pct")) {
			ok = parse_num(val, 0.01, 100, &c->autoterm_pct);
		} else if (!strcmp(name, "--request-timeout")) {
			int64_t ns;
			ok = !cn_parse_duration(val, &ns) && ns >= 1000000;
			c->request_timeout_ms = (long)(ns / 1000000);
		} else if (!strcmp(name, "--lookup")) {
			ok = !strcmp(val, "path") || !strcmp(val, "dns") || !strcmp(val, "auto");
			c->vhost = !strcmp(val, "dns");
		} else if (!strcmp(name, "--benchdata")) {
			c->benchdata = val;
		} else if (!strcmp(name, "--rate")) {
			ok = parse_num(val, 0.001, 1e7, &c->rate);
		} else if (!strcmp(name, "--rate.dist")) {
			ok = !strcmp(val, "fixed") || !strcmp(val, "poisson");
			c->poisson = !strcmp(val, "poisson");
		} else if (!strcmp(name, "--sweep")) {
			c->sweep = val;
		} else if (!strcmp(name, "--plot")) {
			c->plot = val;
		} else if (!strcmp(name, "--get-distrib")) {
			ok = parse_num(val, 0, 100, &c->get_distrib);
		} else if (!strcmp(name, "--put-distrib")) {
			ok = parse_num(val, 0, 100, &c->put_distrib);
		} else if (!strcmp(name, "--stat-distrib")) {
			ok = parse_num(val, 0, 100, &c->stat_distrib);
		} else if (!strcmp(name, "--delete-distrib")) {
			ok = parse_num(val, 0, 100, &c->delete_distrib);
		} else if (!strcmp(name, "--agents") || !strcmp(name, "--warp-client")) {
			c->agents = val;
		} else {
			snprintf(err, errlen, "unknown flag '%s' (see cairn bench --help)", name);
			return 2;
		}
		if (!ok) {
			snprintf(err, errlen, "bad value '%s' for %s", val ? val : "", name);
			return 2;
		}
	}
	if (c->plot && !c->sweep) {
		snprintf(err, errlen, "--plot needs --sweep");
		return 2;
	}
	if (c->sweep && c->mode == CN_BENCH_MULTIPART) {
		snprintf(err, errlen, "--sweep is not supported for multipart");
		return 2;
	}
	return 0;
}

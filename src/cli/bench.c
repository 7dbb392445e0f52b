/* cli/bench: `cairn bench` — subcommand dispatch (modes, analyze, cmp, agent), credentials
 * and endpoint from the environment (CAIRN_BENCH_* first, then warp's WARP_*), usage text.
 * The flags themselves are parsed by the bench module (agents receive them over the wire). */
#include "bench/bench.h"
#include "cli/cli.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bench_usage(FILE *f)
{
	fprintf(f,
	        "usage: cairn bench MODE [flags]          MODE: put get delete stat list mixed multipart loop\n"
	        "       cairn bench analyze FILE [--analyze.op OP] [--json]\n"
	        "       cairn bench cmp BEFORE AFTER [--analyze.op OP]\n"
	        "       cairn bench agent --listen HOST:PORT\n"
	        "\n"
	        "flags (warp's names; --flag=value or --flag value):\n"
	        "  --host H[,H...]        endpoints, {1...4} ranges allowed; requests go round-robin\n"
	        "  --access-key K --secret-key S --region R --tls --insecure --lookup path|dns\n"
	        "  --bucket B (cairn-bench) --prefix P --noclear\n"
	        "  --obj.size 10MiB (KiB/MiB/GiB powers of 2, KB/MB/GB powers of 10) --obj.randsize\n"
	        "  --objects N (2500)  --concurrent N (20)  --threads N (2)  --duration 1m\n"
	        "  --autoterm [--autoterm.dur 10s --autoterm.pct 7.5]\n"
	        "  --parts N (50) --part.size 5MiB                          multipart\n"
	        "  --get-distrib 45 --stat-distrib 30 --put-distrib 15 --delete-distrib 10   mixed\n"
	        "  --loops N                                                loop\n"
	        "  --rate N [--rate.dist fixed|poisson]   open loop, latency from the intended send time\n"
	        "  --sweep FROM:TO:STEP|R1,R2,... [--plot FILE.svg]   latency vs throughput\n"
	        "  --verify               check every GET body (XXH3 of what was written)\n"
	        "  --json --benchdata FILE.csv.gz --quiet --request-timeout 2m\n"
	        "  --agents H:P[,H:P]     run on `cairn bench agent`s, one merged report\n"
	        "environment: CAIRN_BENCH_HOST, CAIRN_BENCH_ACCESS_KEY, CAIRN_BENCH_SECRET_KEY,\n"
	        "  CAIRN_BENCH_REGION, CAIRN_BENCH_TLS (or WARP_HOST, WARP_ACCESS_KEY, ...)\n");
}

int cn_cli_bench(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
		bench_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? 2 : 0;
	}
	/* libcurl allocates each transfer's 512 KiB receive buffer and frees it at the end.
	 * With glibc's default (dynamic) thresholds such a buffer is a fresh mmap every time:
	 * page faults on every GET, up to 1.8x the client CPU per GiB of 4 MiB GETs (0.25-0.43
	 * vs 0.22-0.24 s/GiB with fixed thresholds, 3 interleaved runs). Keep freed memory in
	 * the heap instead: it is bounded by the peak in flight. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	const char *cmd = argv[0];
	if (!strcmp(cmd, "analyze") || !strcmp(cmd, "cmp")) {
		const char *files[2] = { NULL, NULL }, *op = NULL;
		int nf = 0;
		bool json = false;
		for (int i = 1; i < argc; i++) {
			if (!strcmp(argv[i], "--analyze.op") && i + 1 < argc)
				op = argv[++i];
			else if (!strncmp(argv[i], "--analyze.op=", 13))
				op = argv[i] + 13;
			else if (!strcmp(argv[i], "--json"))
				json = true;
			else if (argv[i][0] != '-' && nf < 2)
				files[nf++] = argv[i];
			else {
				fprintf(stderr, "cairn bench %s: unexpected argument '%s'\n", cmd, argv[i]);
				return 2;
			}
		}
		if (!strcmp(cmd, "analyze")) {
			if (nf != 1) {
				fprintf(stderr, "usage: cairn bench analyze FILE [--analyze.op OP] [--json]\n");
				return 2;
			}
			return cn_bench_analyze(files[0], op, json);
		}
		if (nf != 2) {
			fprintf(stderr, "usage: cairn bench cmp BEFORE AFTER [--analyze.op OP]\n");
			return 2;
		}
		return cn_bench_cmp(files[0], files[1], op);
	}
	if (!strcmp(cmd, "agent")) {
		const char *listen = NULL;
		int runs = 0;
		for (int i = 1; i < argc; i++) {
			if (!strcmp(argv[i], "--listen") && i + 1 < argc)
				listen = argv[++i];
			else if (!strncmp(argv[i], "--listen=", 9))
				listen = argv[i] + 9;
			else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
				runs = atoi(argv[++i]);
			else {
				fprintf(stderr, "cairn bench agent: unexpected argument '%s'\n", argv[i]);
				return 2;
			}
		}
		return cn_bench_agent(listen ? listen : ":7761", runs);
	}
	int mode = cn_bench_parse_mode(cmd);
	if (mode < 0) {
		fprintf(stderr, "cairn bench: unknown mode '%s'\n", cmd);
		bench_usage(stderr);
		return 2;
	}
	cn_bench_cfg c;
	cn_bench_cfg_defaults(&c);
	c.mode = (cn_bench_mode)mode;
	const char *v;
	if ((v = cn_env2("CAIRN_BENCH_HOST", "WARP_HOST")))
		c.hosts = v;
	c.access_key = cn_env2("CAIRN_BENCH_ACCESS_KEY", "WARP_ACCESS_KEY");
	c.secret_key = cn_env2("CAIRN_BENCH_SECRET_KEY", "WARP_SECRET_KEY");
	if ((v = cn_env2("CAIRN_BENCH_REGION", "WARP_REGION")))
		c.region = v;
	if ((v = cn_env2("CAIRN_BENCH_TLS", "WARP_TLS")))
		c.tls = !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "on");
	char err[300];
	if (cn_bench_parse_flags(argc - 1, argv + 1, &c, err, sizeof err)) {
		fprintf(stderr, "cairn bench: %s\n", err);
		return 2;
	}
	if (!c.access_key || !c.secret_key) {
		fprintf(stderr, "cairn bench: --access-key and --secret-key are needed (or CAIRN_BENCH_ACCESS_KEY/"
		                "CAIRN_BENCH_SECRET_KEY, WARP_ACCESS_KEY/WARP_SECRET_KEY)\n");
		return 2;
	}
	c.argv = argv + 1;
	c.argc = argc - 1;
	return cn_bench_run(&c);
}

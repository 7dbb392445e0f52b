/* cairn: main() — dispatches to the subcommands in src/cli. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

void cn_cli_usage(void)
{
	printf("cairn — an S3-compatible object store\n"
	       "\n"
	       "usage: cairn COMMAND [args]\n"
	       "\n"
	       "commands:\n"
	       "  server DIR [--address HOST:PORT]   serve S3 from a folder (see cairn server --help)\n"
	       "  bench MODE [flags]                 S3 load generator, warp's flags (see cairn bench --help)\n"
	       "  admin info|heal [flags]            deployment state; heal objects (see cairn admin --help)\n"
	       "  version                            print the version\n"
	       "  help                               this text\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cn_cli_usage();
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "server")) {
		cn_cli_server_reexec(argv); /* before any thread or allocation that matters */
		return cn_cli_server(argc - 2, argv + 2);
	}
	if (!strcmp(argv[1], "bench"))
		return cn_cli_bench(argc - 2, argv + 2);
	if (!strcmp(argv[1], "admin"))
		return cn_cli_admin(argc - 2, argv + 2);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("cairn 0.1.0\n");
		return 0;
	}
	fprintf(stderr, "cairn: unknown command '%s' (try cairn --help)\n", argv[1]);
	return 2;
}

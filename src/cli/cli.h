/* cli: the `cairn` subcommands — flag parsing, configuration from the environment, start-up
 * messages and process lifecycle (signals). Each subcommand returns the process exit code. */
#ifndef CN_CLI_H
#define CN_CLI_H

int cn_cli_server(int argc, char **argv);
/* Called first thing by main for `cairn server` with the whole argv: unless the
 * environment already says so (or CAIRN_MALLOC_HUGETLB=0), re-executes the process once
 * with GLIBC_TUNABLES=...glibc.malloc.hugetlb=1 so that glibc's heap asks for transparent
 * huge pages (settable only before the process starts). Returns when it did not
 * re-execute (already set, opted out, or the exec failed). */
void cn_cli_server_reexec(char **argv);
int cn_cli_bench(int argc, char **argv);
int cn_cli_admin(int argc, char **argv); /* `cairn admin info|heal` (src/cli/admin.c) */
void cn_cli_usage(void);

#endif

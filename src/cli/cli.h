/* cli: the `cairn` subcommands — flag parsing, configuration from the environment, start-up
 * messages and process lifecycle (signals). Each subcommand returns the process exit code. */
#ifndef CN_CLI_H
#define CN_CLI_H

int cn_cli_server(int argc, char **argv);
int cn_cli_bench(int argc, char **argv);
int cn_cli_admin(int argc, char **argv); /* `cairn admin info|heal` (src/cli/admin.c) */
void cn_cli_usage(void);

#endif

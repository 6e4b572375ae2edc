/* gmux: the command-line front of the runtime. Dispatches to cmd_*.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmux/version.h>

#include "cli.h"
#include "commands.h"
#include "daemon/cli_main.h"
#include "common/settings.h"
#include "common/text.h"

extern char **environ;

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    unsigned scopes;                /* the settings checked before it runs */
    const com_cli_opt_t *help_opts; /* what its --help scan reads */
    const char *summary;
};

#define COMMAND_ENTRY_(name, fn, scopes, help_opts, summary) {name, fn, scopes, help_opts, summary},
static const struct command commands[] = {GMUX_COMMAND_LIST(COMMAND_ENTRY_)};
#undef COMMAND_ENTRY_
#define COMMAND_COUNT (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *out)
{
    fprintf(out,
            "gmux %s: GPU multitasking by proactive memory scheduling (mem) and\n"
            "GPU-initiated one-sided networking (net).\n\n"
            "Usage: gmux [-h | --help | -V | --version | --help-settings] COMMAND [ARGS...]\n\n"
            "Commands:\n",
            GMUX_VERSION_STRING);
    for (size_t i = 0; i < COMMAND_COUNT; i++) {
        int col = fprintf(out, "  %-16s ", commands[i].name);
        com_text_wrap(out, commands[i].summary, col > 0 ? (size_t)col : 0, COM_TEXT_WIDTH);
    }
    fprintf(out, "\nRun 'gmux COMMAND --help' or 'gmux --help COMMAND' for a command's options.\n"
                 "Every command also takes --version (-V): it prints what gmux --version does.\n"
                 "Settings come from GMUX_* environment variables: 'gmux --help-settings'.\n"
                 "A command checks those read by what it runs (itself, and the daemon, shim\n"
                 "or ranks it starts): a malformed one is a usage error. A help (--help,\n"
                 "COMMAND --help, --help-settings) and a --version read none.\n\n"
                 "Exit status: the command's (each command's --help lists its own); 0 for\n"
                 "--help, a --version and --help-settings; 2 for a usage error (no command,\n"
                 "an unknown command or option, a malformed setting).\n");
}

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; name && i < COMMAND_COUNT; i++)
        if (strcmp(name, commands[i].name) == 0)
            return &commands[i];
    return NULL;
}

/* Whether the words ask for what reads no setting: gmux --help,
 * --help-settings (the page a malformed setting's error points to),
 * --version, or a command's --help or --version as the command itself
 * finds its --help (gmux run's skips its options' values). */
static bool reads_no_setting(int argc, char **argv, const struct command *cmd)
{
    if (argc < 2)
        return false;
    if (cmd)
        return com_cli_help_asked(argc - 1, argv + 1, cmd->help_opts) ||
               com_cli_version_asked(argc - 1, argv + 1, cmd->help_opts);
    return com_cli_is_help(argv[1]) || strcmp(argv[1], "--help-settings") == 0 ||
           com_cli_is_version(argv[1]);
}

int main(int argc, char **argv)
{
    char err[1024];
    /* gmux daemon --quantum-ms N wins over GMUX_DAEMON_QUANTUM_MS, bad or not */
    if (argc >= 2 && strcmp(argv[1], "daemon") == 0)
        dmn_cli_drop_overridden_env(argc - 1, argv + 1);
    /* only what the command runs reads its settings: GMUX_NET_TIMEOUT=abc
     * stops gmux bench, not gmux status; and a help or --version reads none */
    const struct command *cmd = argc >= 2 ? find_command(argv[1]) : NULL;
    gmux_status_t st = GMUX_OK;
    if (!reads_no_setting(argc, argv, cmd)) {
        st = com_settings_init_scoped(cmd ? cmd->scopes : 0, err, sizeof(err));
        /* an init loads any word; the check also refuses one out of its list */
        if (st == GMUX_OK && cmd && cmd->scopes)
            st = com_settings_check(cmd->scopes, env_lookup, err, sizeof(err));
    }
    if (st != GMUX_OK) {
        fprintf(stderr, "gmux: %s (see gmux --help-settings)\n", err);
        return CLI_EXIT_USAGE;
    }
    com_settings_warn_misspelt(environ, stderr, "gmux");
    if (argc < 2) {
        print_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *arg = argv[1];
    bool help = com_cli_is_help(arg);
    if (help && argc == 3 && argv[2][0] != '-') { /* gmux --help COMMAND */
        const struct command *c = find_command(argv[2]);
        if (!c) {
            fprintf(stderr, "gmux: unknown command '%s' (see gmux --help)\n", argv[2]);
            return CLI_EXIT_USAGE;
        }
        char *cmd_argv[] = {argv[2], "--help", NULL};
        return c->fn(2, cmd_argv);
    }
    if (argc > 2 && (help || com_cli_is_version(arg) || strcmp(arg, "--help-settings") == 0)) {
        fprintf(stderr, "gmux: unexpected argument '%s' after %s (see gmux --help)\n", argv[2],
                arg);
        return CLI_EXIT_USAGE;
    }
    if (help) {
        print_help(stdout);
        return 0;
    }
    if (com_cli_is_version(arg)) {
        printf("gmux %s\n", GMUX_VERSION_STRING);
        return 0;
    }
    if (strcmp(arg, "--help-settings") == 0) {
        com_settings_print_table(stdout, com_settings_table, COM_SETTING_COUNT, env_lookup);
        return 0;
    }
    if (arg[0] == '-') {
        fprintf(stderr, "gmux: unknown option '%s' (see gmux --help)\n", arg);
        return CLI_EXIT_USAGE;
    }
    /* gmux CMD --version: the same line, unless --help is asked too */
    if (cmd && com_cli_version_asked(argc - 1, argv + 1, cmd->help_opts) &&
        !com_cli_help_asked(argc - 1, argv + 1, cmd->help_opts)) {
        printf("gmux %s\n", GMUX_VERSION_STRING);
        return 0;
    }
    if (cmd)
        return cmd->fn(argc - 1, argv + 1);
    fprintf(stderr, "gmux: unknown command '%s' (see gmux --help)\n", arg);
    return CLI_EXIT_USAGE;
}

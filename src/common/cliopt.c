/* Command-line words read alike by every gmux program (see cliopt.h). */
#include "common/cliopt.h"

#include <stdio.h>
#include <string.h>

int com_cli_opt_find(const com_cli_opt_t *opts, const char *word)
{
    for (int k = 0; opts[k].name; k++)
        if (strcmp(word, opts[k].name) == 0)
            return k;
    return -1;
}

bool com_cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

bool com_cli_is_version(const char *arg)
{
    return strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0;
}

/* Whether a word is_word takes is among the command's options: the scan
 * com_cli_help_asked describes. */
static bool word_asked(int argc, char **argv, const com_cli_opt_t *program_opts,
                       bool (*is_word)(const char *))
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (is_word(argv[i]))
            return true;
        if (!program_opts)
            continue;
        if (argv[i][0] != '-')
            return false; /* the program */
        int k = com_cli_opt_find(program_opts, argv[i]);
        if (k >= 0 && program_opts[k].valued)
            i++;
    }
    return false;
}

bool com_cli_help_asked(int argc, char **argv, const com_cli_opt_t *program_opts)
{
    return word_asked(argc, argv, program_opts, com_cli_is_help);
}

bool com_cli_version_asked(int argc, char **argv, const com_cli_opt_t *program_opts)
{
    return word_asked(argc, argv, program_opts, com_cli_is_version);
}

const char *com_cli_option_value(int argc, char **argv, int i)
{
    if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0 || !argv[i + 1][0])
        return NULL;
    return argv[i + 1];
}

int com_cli_usage_verror(const char *prog, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see %s --help)\n", prog);
    return COM_CLI_EXIT_USAGE;
}

int com_cli_usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = com_cli_usage_verror(prog, fmt, ap);
    va_end(ap);
    return rc;
}

int com_cli_bad_word(const char *prog, const char *arg)
{
    if (arg[0] == '-' && arg[1])
        return com_cli_usage_error(prog, "unknown option '%s'", arg);
    return com_cli_usage_error(prog, "unexpected argument '%s'", arg);
}

int com_cli_no_value(const char *prog, const char *opt)
{
    return com_cli_usage_error(prog, "option '%s' needs a value", opt);
}

int com_cli_bad_vvalue(const char *prog, const char *opt, const char *value, const char *wants_fmt,
                       va_list ap)
{
    char wants[1024]; /* room for a list of names (gmux sim --param's) */
    vsnprintf(wants, sizeof(wants), wants_fmt, ap);
    return com_cli_usage_error(prog, "option '%s' wants %s, not '%s'", opt, wants, value);
}

int com_cli_bad_list_word(const char *prog, const char *opt, const char *value, const char *word,
                          const char *wants_fmt, ...)
{
    char wants[1024];
    va_list ap;
    va_start(ap, wants_fmt);
    vsnprintf(wants, sizeof(wants), wants_fmt, ap);
    va_end(ap);
    if (strcmp(word, value) == 0) /* a list of one word: that word */
        return com_cli_bad_value(prog, opt, value, "%s", wants);
    return com_cli_usage_error(prog,
                               "option '%s' wants %s, not '%s' (the word '%s' is none of them)",
                               opt, wants, value, word);
}

int com_cli_bad_value(const char *prog, const char *opt, const char *value, const char *wants_fmt,
                      ...)
{
    va_list ap;
    va_start(ap, wants_fmt);
    int rc = com_cli_bad_vvalue(prog, opt, value, wants_fmt, ap);
    va_end(ap);
    return rc;
}

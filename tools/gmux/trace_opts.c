/* gmux trace's words: see trace_opts.h. Moved out of cmd_trace.c unchanged. */
#include "trace_opts.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/parse.h"

#define CMD "trace"

static int parse_format(const char *text, sim_trace_format_t *f)
{
    if (strcmp(text, "text") == 0)
        *f = SIM_TRACE_TEXT;
    else if (strcmp(text, "binary") == 0)
        *f = SIM_TRACE_BINARY;
    else
        return cli_bad_value(CMD, "--format", text, "text or binary");
    return 0;
}

/* gmux trace generate --workload NAME [--set KEY=VALUE ...] [--seed S]
 * [--format F] -o FILE */
static int read_generate(int argc, char **argv, struct trace_opts *o)
{
    o->format = SIM_TRACE_BINARY;
    o->sets = calloc((size_t)argc, sizeof(char *));
    if (!o->sets)
        return cli_fail(CMD, "out of memory");
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i];
        const char *v = com_cli_option_value(argc, argv, i);
        int takes = strcmp(a, "--workload") == 0 || strcmp(a, "--set") == 0 ||
                    strcmp(a, "--seed") == 0 || strcmp(a, "--format") == 0 || strcmp(a, "-o") == 0;
        if (takes && !v)
            return cli_no_value(CMD, a);
        if (strcmp(a, "--workload") == 0) {
            o->workload = v;
        } else if (strcmp(a, "--set") == 0) {
            o->sets[o->nsets++] = v;
        } else if (strcmp(a, "--seed") == 0) {
            if (com_parse_u64(v, &o->seed) != GMUX_OK)
                return cli_bad_value(CMD, a, v, "a whole number, 0 or more");
        } else if (strcmp(a, "--format") == 0) {
            int rc = parse_format(v, &o->format);
            if (rc)
                return rc;
        } else if (strcmp(a, "-o") == 0) {
            o->out = v;
        } else {
            return cli_bad_word(CMD, a);
        }
    }
    if (!o->workload || !o->out)
        return cli_usage_error(CMD, "generate needs --workload NAME and -o FILE");
    return 0;
}

/* gmux trace convert IN OUT [--format F] */
static int read_convert(int argc, char **argv, struct trace_opts *o)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--format") == 0) {
            const char *v = com_cli_option_value(argc, argv, i++);
            if (!v)
                return cli_no_value(CMD, "--format");
            int rc = parse_format(v, &o->format);
            if (rc)
                return rc;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_bad_word(CMD, argv[i]);
        } else if (!argv[i][0]) { /* no file has it: not a file to fail to open */
            return cli_usage_error(CMD, "empty file name");
        } else if (!o->in) {
            o->in = argv[i];
        } else if (!o->out) {
            o->out = argv[i];
        } else {
            return cli_bad_word(CMD, argv[i]);
        }
    }
    if (!o->in || !o->out)
        return cli_usage_error(CMD, "convert needs IN and OUT");
    return 0;
}

/* gmux trace show FILE */
static int read_show(int argc, char **argv, struct trace_opts *o)
{
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1])
            return cli_bad_word(CMD, argv[i]);
    if (argc != 2)
        return cli_usage_error(CMD, "show needs exactly one FILE");
    if (!argv[1][0])
        return cli_usage_error(CMD, "empty file name");
    o->in = argv[1];
    return 0;
}

/* gmux trace [--format F] [--no-ranges] -o FILE -- CMD ... */
static int read_record(int argc, char **argv, struct trace_opts *o)
{
    o->format_word = "binary";
    o->probe = true;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--no-ranges") == 0) {
            o->probe = false;
            continue;
        }
        if (strcmp(argv[i], "-o") != 0 && strcmp(argv[i], "--format") != 0)
            return cli_bad_word(CMD, argv[i]);
        if (!com_cli_option_value(argc, argv, i))
            return cli_no_value(CMD, argv[i]);
        if (strcmp(argv[i], "-o") == 0) {
            o->out = argv[++i];
        } else if (strcmp(argv[i], "--format") == 0) {
            sim_trace_format_t f;
            int rc = parse_format(argv[i + 1], &f);
            if (rc)
                return rc;
            o->format_word = argv[++i];
        } else {
            return cli_bad_word(CMD, argv[i]);
        }
    }
    if (i + 1 >= argc)
        return cli_usage_error(CMD, "no command given after '--'");
    if (!o->out)
        return cli_usage_error(CMD, "recording needs -o FILE");
    o->cmd = &argv[i + 1];
    return 0;
}

int trace_opts_read(int argc, char **argv, struct trace_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->seed = 1;
    if (argc < 2)
        return cli_usage_error(CMD, "missing subcommand (generate, convert, show)");
    const char *sub = argv[1];
    if (com_cli_help_asked(argc, argv, NULL))
        return -1;
    if (strcmp(sub, "--") == 0 || strcmp(sub, "-o") == 0 || strcmp(sub, "--format") == 0 ||
        strcmp(sub, "--no-ranges") == 0) {
        o->sub = TRACE_SUB_RECORD;
        return read_record(argc, argv, o);
    }
    if (strcmp(sub, "generate") == 0) {
        o->sub = TRACE_SUB_GENERATE;
        return read_generate(argc - 1, argv + 1, o);
    }
    if (strcmp(sub, "convert") == 0) {
        o->sub = TRACE_SUB_CONVERT;
        return read_convert(argc - 1, argv + 1, o);
    }
    if (strcmp(sub, "show") == 0) {
        o->sub = TRACE_SUB_SHOW;
        return read_show(argc - 1, argv + 1, o);
    }
    if (sub[0] == '-')
        return cli_bad_word(CMD, sub);
    return cli_usage_error(CMD, "unknown subcommand '%s'", sub);
}

void trace_opts_free(struct trace_opts *o)
{
    free(o->sets);
    o->sets = NULL;
}

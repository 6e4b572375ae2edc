/*
 * Every option a command's parser takes is listed in the usage lines of
 * its --help, for every gmux command and gmuxd: the options a parser takes
 * are read from its source (each strcmp of a word with a literal that
 * starts with '-', each entry of a com_cli_opt_t table), the usage lines
 * from the built command. With test_every_usage_option_is_taken
 * (test_cli_help), which runs each option a usage line lists, the two
 * agree both ways. Until 2026-12-03 only gmux sim's options were checked
 * against its help, from a list written in the test. gmux-calibrate is
 * held to the same where it is built (nvcc and CUPTI). Every page lists
 * -h, --help, -V and --version too, as gmux --help says every command takes
 * them: until 2026-12-03 no gmux command's page did, nor gmuxd's its -h.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli_words.h"
#include "tproc.h"

#define MAX_OPTS 64

/* The options found in a text, each once. */
typedef struct optset {
    char name[MAX_OPTS][40];
    size_t n;
} optset_t;

static void optset_add(optset_t *s, const char *name, size_t len)
{
    assert_true(len < sizeof(s->name[0]));
    for (size_t k = 0; k < s->n; k++)
        if (strlen(s->name[k]) == len && strncmp(s->name[k], name, len) == 0)
            return;
    assert_true(s->n < MAX_OPTS);
    memcpy(s->name[s->n], name, len);
    s->name[s->n++][len] = '\0';
}

static bool optset_has(const optset_t *s, const char *name)
{
    for (size_t k = 0; k < s->n; k++)
        if (strcmp(s->name[k], name) == 0)
            return true;
    return false;
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* Words every program takes without its parser seeing them (main.c,
 * gmuxd.c find them first): a help, and a version as gmux --help says. */
static bool generic(const char *opt)
{
    return strcmp(opt, "--") == 0 || strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0 ||
           strcmp(opt, "-V") == 0 || strcmp(opt, "--version") == 0;
}

static const char *skip_blank_back(const char *text, const char *p)
{
    while (p > text && (p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t'))
        p--;
    return p;
}

static const char *skip_blank(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t')
        p++;
    return p;
}

/* Whether the literal opening at q is the second argument of a strcmp or
 * strncmp: a comma before it, and before that, at the same depth of
 * parentheses, "cmp(". */
static bool compared(const char *text, const char *q, const char *after)
{
    if (*skip_blank(after) != ')' && *skip_blank(after) != ',')
        return false;
    const char *p = skip_blank_back(text, q);
    if (p == text || p[-1] != ',')
        return false;
    int depth = 0;
    for (p--; p > text; p--) {
        char c = p[-1];
        if (c == ';' || c == '{' || c == '}')
            return false;
        if (c == ')')
            depth++;
        else if (c == '(' && depth-- == 0)
            return p - 1 - text >= 3 && strncmp(p - 4, "cmp", 3) == 0;
    }
    return false;
}

/* Whether the literal opening at q names an entry of an option table:
 * {"--socket", true}. */
static bool table_entry(const char *text, const char *q, const char *after)
{
    const char *p = skip_blank_back(text, q);
    if (p == text || p[-1] != '{')
        return false;
    p = skip_blank(after);
    if (*p++ != ',')
        return false;
    p = skip_blank(p);
    size_t n = strncmp(p, "true", 4) == 0 ? 4 : strncmp(p, "false", 5) == 0 ? 5 : 0;
    return n && *skip_blank(p + n) == '}';
}

/* Adds to s each option that the C text compares a word with or lists in
 * an option table. */
static void scan_source(const char *text, optset_t *s)
{
    for (const char *q = strstr(text, "\"-"); q; q = strstr(q + 1, "\"-")) {
        const char *e = q + 2;
        while (word_char(*e))
            e++;
        if (*e != '"' || e == q + 2 || (q > text && q[-1] == '\\'))
            continue;
        if (compared(text, q, e + 1) || table_entry(text, q, e + 1))
            optset_add(s, q + 1, (size_t)(e - q - 1));
    }
}

/* Adds to s each option word of text ("--socket" of "[--socket PATH]"). */
static void scan_usage(const char *text, optset_t *s)
{
    for (const char *p = text; *p; p++) {
        if (*p != '-' || (p > text && word_char(p[-1])))
            continue;
        const char *e = p + 1;
        if (*e == '-')
            e++;
        if (!((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z')))
            continue;
        while (word_char(*e))
            e++;
        optset_add(s, p, (size_t)(e - p));
        p = e - 1;
    }
}

static char *read_source(const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", GMUX_SOURCE_DIR, rel);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* The sources whose parsers read each command's words. A command gmux
 * --help lists that is missing here fails the test: add its files. */
static const struct {
    const char *cmd; /* as gmux --help names it; "gmuxd" is the daemon's program */
    const char *files[3];
} sources[] = {
    {"demo", {"tools/gmux/cmd_demo.c"}},
    {"sim", {"tools/gmux/cmd_sim.c", "tools/gmux/sim_opts.c"}},
    {"trace", {"tools/gmux/cmd_trace.c", "tools/gmux/trace_opts.c"}},
    {"profile", {"tools/gmux/cmd_profile.c", "tools/gmux/predict_drive.c"}},
    {"predict-report",
     {"tools/gmux/cmd_predict_report.c", "tools/gmux/predict_drive.c",
      "tools/gmux/predict_report_opts.c"}},
    {"run", {"tools/gmux/cmd_run.c"}},
    {"daemon", {"tools/gmux/cmd_daemon.c", "src/daemon/cli_main.c"}},
    {"status", {"tools/gmux/cmd_status.c", "tools/gmux/status_opts.c"}},
    {"top", {"tools/gmux/cmd_top.c", "tools/gmux/top_opts.c"}},
    {"launch", {"tools/gmux/cmd_launch.c", "tools/gmux/launch_opts.c"}},
    {"bench", {"tools/gmux/cmd_bench.c"}},
    {"bench net", {"tools/gmux/bench_net.c", "tools/gmux/bench_net_opts.c"}},
    {"gmuxd", {"src/daemon/gmuxd.c", "src/daemon/cli_main.c"}},
    {"gmux-calibrate", {"tools/calibrate/args.c"}}, /* where built (nvcc, CUPTI) */
};
#define NSOURCES (sizeof(sources) / sizeof(sources[0]))

/* Files under tools/gmux whose option words are no user's command: gmux's
 * own (test_cli checks them) and those gmux bench net passes its ranks. */
static const char *const internal[] = {"main.c", "bench_net_rank.c"};

/* A program of its own (not a gmux command): its path, or NULL when this
 * build has none of it. */
static const char *program_path(const char *cmd)
{
    if (strcmp(cmd, "gmuxd") == 0)
        return GMUXD_PATH;
#ifdef GMUX_CALIBRATE_PATH
    if (strcmp(cmd, "gmux-calibrate") == 0)
        return GMUX_CALIBRATE_PATH;
#endif
    return NULL;
}

/* Whether sources[c] is a program of its own (gmuxd, gmux-calibrate). */
static bool own_program(size_t c)
{
    return strncmp(sources[c].cmd, "gmux", 4) == 0;
}

/* The help of sources[c], into out (cli_words' buffer): its exit status. */
static int command_help(size_t c)
{
    if (own_program(c)) {
        char *argv[] = {(char *)program_path(sources[c].cmd), "--help", NULL};
        return tproc_capture(argv, NULL, 60.0, out, sizeof(out), err, sizeof(err));
    }
    char words[40];
    snprintf(words, sizeof(words), "%s", sources[c].cmd);
    const char *argv[4] = {words, "--help", NULL};
    char *sp = strchr(words, ' ');
    if (sp) { /* "bench net" */
        *sp = '\0';
        argv[1] = sp + 1;
        argv[2] = "--help";
    }
    return run_words(argv);
}

/* The scan finds what a parser compares and what a table lists, and
 * nothing else: a wrong scan would let the test below pass on nothing. */
static void test_scan_reads_parsers(void **state)
{
    (void)state;
    static const char text[] =
        "if (strcmp(argv[i], \"--json\") == 0)\n"
        "    x = strncmp(a, \"-o\", 2) || strcmp(argv[f(i) + 1],\n        \"--plot-dir\");\n"
        "puts(\"--not-compared\"); fail(CMD, \"--said\");\n"
        "static const com_cli_opt_t t[] = {{\"--socket\", true}, {\"--stop\", false}, {NULL}};\n"
        "strcmp(\"--first-argument\", a); msg(\"\\\"-q\\\"\");\n";
    optset_t s = {.n = 0};
    scan_source(text, &s);
    static const char *const want[] = {"--json", "-o", "--plot-dir", "--socket", "--stop"};
    assert_int_equal(s.n, 5);
    for (size_t k = 0; k < 5; k++)
        if (!optset_has(&s, want[k]))
            fail_msg("the scan missed %s", want[k]);
    optset_t u = {.n = 0};
    scan_usage("Usage: gmux x [--socket PATH] [-n N] [--a-b | -V] FILE-NAME\n", &u);
    assert_int_equal(u.n, 4);
    assert_true(optset_has(&u, "--socket") && optset_has(&u, "-n") && optset_has(&u, "--a-b") &&
                optset_has(&u, "-V"));
}

/* Each option a parser takes is in its command's usage lines, and each the
 * usage lines list is one the scan found (else the scan is blind to a
 * parser: add its file above). The help and version words, which main.c,
 * gmuxd.c and args.c find before any parser, are in every page's usage. */
static void test_every_option_taken_is_listed(void **state)
{
    (void)state;
    char names[32][32];
    size_t n = list_commands(names, 32);
    assert_true(n >= 11);
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        for (size_t c = 0; c < NSOURCES; c++)
            known |= strcmp(sources[c].cmd, names[i]) == 0;
        if (!known)
            fail_msg("gmux %s: its parser's sources are not in this test's table", names[i]);
    }
    if (!strstr(out, "Every command also takes --version (-V)"))
        fail_msg("gmux --help does not say every command takes --version:\n%s", out);
    size_t total = 0;
    for (size_t c = 0; c < NSOURCES; c++) {
        if (own_program(c) && !program_path(sources[c].cmd))
            continue; /* gmux-calibrate, not built here */
        optset_t taken = {.n = 0}, listed = {.n = 0};
        for (size_t f = 0; f < 3 && sources[c].files[f]; f++)
            scan_source(read_source(sources[c].files[f]), &taken);
        int rc = command_help(c);
        if (rc != 0)
            fail_msg("%s --help: exit %d: %s", sources[c].cmd, rc, err);
        const char *end = strstr(out, "\n\n");
        assert_non_null(end);
        out[end - out] = '\0';
        scan_usage(out, &listed);
        for (size_t k = 0; k < taken.n; k++)
            if (!generic(taken.name[k]) && !optset_has(&listed, taken.name[k]))
                fail_msg("%s takes %s, which its --help's usage lines do not list:\n%s",
                         sources[c].cmd, taken.name[k], out);
        for (size_t k = 0; k < listed.n; k++)
            if (!generic(listed.name[k]) && !optset_has(&taken, listed.name[k]))
                fail_msg("%s --help lists %s, which the scan of its sources did not find",
                         sources[c].cmd, listed.name[k]);
        /* gmux --help says every command takes them: each page says so too */
        static const char *const own[] = {"-h", "--help", "-V", "--version"};
        for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
            if (!optset_has(&listed, own[k]))
                fail_msg("%s takes %s; its --help's usage lines do not say so:\n%s", sources[c].cmd,
                         own[k], out);
        total += taken.n;
    }
    assert_true(total >= 60); /* about 70 options in all: the scan read the parsers */
}

/* Every file under tools/gmux whose words the scan finds options in is a
 * command's (in the table above) or an internal one: a parser added in a
 * new file is held to the test above. */
static void test_every_parser_file_known(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/tools/gmux", GMUX_SOURCE_DIR);
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t parsers = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0)
            continue;
        char rel[300];
        snprintf(rel, sizeof(rel), "tools/gmux/%s", e->d_name);
        optset_t s = {.n = 0};
        scan_source(read_source(rel), &s);
        size_t own = 0;
        for (size_t k = 0; k < s.n; k++)
            own += !generic(s.name[k]);
        if (own == 0)
            continue;
        parsers++;
        bool known = false;
        for (size_t c = 0; c < NSOURCES; c++)
            for (size_t f = 0; f < 3 && sources[c].files[f]; f++)
                known |= strcmp(sources[c].files[f], rel) == 0;
        for (size_t k = 0; k < sizeof(internal) / sizeof(internal[0]); k++)
            known |= strcmp(internal[k], e->d_name) == 0;
        if (!known)
            fail_msg("%s reads options (%s ...) of no command this test knows", rel, s.name[0]);
    }
    closedir(d);
    assert_true(parsers >= 12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_reads_parsers),
        cmocka_unit_test(test_every_option_taken_is_listed),
        cmocka_unit_test(test_every_parser_file_known),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

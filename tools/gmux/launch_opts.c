/* gmux launch's words: see launch_opts.h. */
#include "launch_opts.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopt.h"
#include "common/parse.h"

#define PROG "gmux launch"

bool launch_parse_ranks(const char *text, int *n_p)
{
    int64_t n;
    if (com_parse_i64(text, &n) != GMUX_OK || n < 1 || n > LAUNCH_MAX_RANKS)
        return false;
    *n_p = (int)n;
    return true;
}

bool launch_parse_seconds(const char *text, double *s_p)
{
    double d; /* finite: no NaN, no inf */
    if (com_parse_double(text, &d) != GMUX_OK || d < LAUNCH_MIN_SECONDS || d > LAUNCH_MAX_SECONDS)
        return false;
    *s_p = d;
    return true;
}

int launch_opts_read(int argc, char **argv, struct launch_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->grace_s = 10;
    o->bind = "127.0.0.1";
    if (com_cli_help_asked(argc, argv, NULL))
        return -1;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-n") != 0 && strcmp(a, "--timeout") != 0 && strcmp(a, "--grace") != 0 &&
            strcmp(a, "--bind") != 0 && strcmp(a, "--hosts") != 0)
            return com_cli_bad_word(PROG, a);
        const char *v = com_cli_option_value(argc, argv, i);
        if (!v)
            return com_cli_no_value(PROG, a);
        i++;
        if (strcmp(a, "-n") == 0) {
            if (!launch_parse_ranks(v, &o->n))
                return com_cli_bad_value(PROG, a, v, "1 to %d ranks", LAUNCH_MAX_RANKS);
        } else if (strcmp(a, "--timeout") == 0 || strcmp(a, "--grace") == 0) {
            if (!launch_parse_seconds(v, a[2] == 't' ? &o->timeout_s : &o->grace_s))
                return com_cli_bad_value(PROG, a, v, "seconds from %g to %.0f", LAUNCH_MIN_SECONDS,
                                         LAUNCH_MAX_SECONDS);
        } else if (strcmp(a, "--bind") == 0) {
            struct in_addr in;
            if (inet_pton(AF_INET, v, &in) != 1) /* said "invalid argument" once it listened */
                return com_cli_bad_value(PROG, a, v, "a numeric IPv4 address (a.b.c.d)");
            o->bind = v;
        } else {                    /* --hosts */
            char *copy = strdup(v); /* o->hosts point into it until launch_opts_free */
            if (!copy) {
                fprintf(stderr, PROG ": out of memory\n");
                return 1;
            }
            free(o->hosts_copy); /* the last --hosts counts, as every option's last value */
            o->hosts_copy = copy;
            o->nhosts = 0;
            for (char *s = strtok(copy, ","); s; s = strtok(NULL, ",")) {
                if (o->nhosts == LAUNCH_MAX_HOSTS) /* were dropped without a word */
                    return com_cli_bad_value(PROG, a, v, "at most %d hosts separated by commas",
                                             LAUNCH_MAX_HOSTS);
                o->hosts[o->nhosts++] = s;
            }
            if (o->nhosts == 0)
                return com_cli_bad_value(PROG, a, v, "host names separated by commas");
        }
    }
    if (o->n == 0)
        return com_cli_usage_error(PROG, "missing -n N");
    if (i >= argc)
        return com_cli_usage_error(PROG, "missing '-- CMD'");
    o->cmd = argv + i;
    return 0;
}

void launch_opts_free(struct launch_opts *o)
{
    free(o->hosts_copy);
    o->hosts_copy = NULL;
    o->nhosts = 0;
}

/*
 * libFuzzer harness for gmux launch's words (tools/gmux/launch_opts.c), read
 * before anything is started: the input is split at NUL bytes into the
 * words after "launch". No input may crash or leak (launch_opts_free gives
 * back what it took, whatever the answer); the reader answers -1 (help),
 * 0 or 2 (a usage error, said on stderr), and -1 only when -h or --help is
 * among the words before "--". When it answers 0: -n from 1 to 1024,
 * --timeout 0 (none) or from 0.001 to 1e6, --grace from 0.001 to 1e6
 * (LAUNCH_MIN_SECONDS, LAUNCH_MAX_SECONDS; never NaN), a --bind inet_pton takes, at most 64 hosts,
 * each non-empty and without a comma, and a command that is the words after
 * "--", of which there is one at least.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopt.h"
#include "launch_opts.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool seconds_ok(double s)
{
    return s >= LAUNCH_MIN_SECONDS && s <= LAUNCH_MAX_SECONDS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[FUZZ_WORDS_TEXT], prog[] = "launch";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);
    int dashdash = argc;
    bool help = false;
    for (int i = 1; i < argc && dashdash == argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            dashdash = i;
        else
            help = help || com_cli_is_help(argv[i]);
    }

    struct launch_opts o;
    int rc = launch_opts_read(argc, argv, &o);
    if ((rc == -1) != help || (rc != -1 && rc != 0 && rc != COM_CLI_EXIT_USAGE))
        abort();
    if (rc == 0) {
        struct in_addr in;
        if (o.n < 1 || o.n > LAUNCH_MAX_RANKS || (o.timeout_s != 0 && !seconds_ok(o.timeout_s)) ||
            !seconds_ok(o.grace_s) || inet_pton(AF_INET, o.bind, &in) != 1 || o.nhosts < 0 ||
            o.nhosts > LAUNCH_MAX_HOSTS)
            abort();
        for (int h = 0; h < o.nhosts; h++)
            if (!o.hosts[h][0] || strchr(o.hosts[h], ','))
                abort();
        if (o.cmd != argv + dashdash + 1 || !o.cmd[0])
            abort();
    }
    launch_opts_free(&o);
    return 0;
}

/*
 * libFuzzer harness for gmux sim's words (tools/gmux/sim_opts.c), read
 * before any file or workload: the input is split at NUL bytes into the
 * words after "sim" (--help is found by cmd_sim.c first: the reader is
 * given no input with one). The reader answers 0 or 2 (a usage error, said
 * on stderr) and writes role (exactly argc bytes, so ASan sees a write past
 * it). When it answers 0: one of --workload and --trace, a non-empty word;
 * a trace with no --set nor --seed; at most 64 --set; a policy at least;
 * --oversub 0 (none) or above 0 and at most 1e6, and 0 with --sweep; --plot
 * only with --sweep; task numbers below 256, priorities within 1e6; each
 * word marked a --param's or a --calibration's follows that option, and a
 * --param's sets a parameter.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cliopt.h"
#include "sim_opts.h"

#include "../fuzz/fuzz_words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sim_opts o; /* large: not on the stack */

static void check_role(int argc, char **argv, const unsigned char *role)
{
    char err[1024];
    for (int i = 1; i < argc; i++) {
        sim_params_t p;
        sim_params_default(&p);
        if (role[i] == SIM_ARG_OTHER)
            continue;
        if (role[i] == SIM_ARG_PARAM && (strcmp(argv[i - 1], "--param") != 0 ||
                                         sim_params_set(&p, argv[i], err, sizeof(err)) != GMUX_OK))
            abort();
        if (role[i] == SIM_ARG_CALIB && (strcmp(argv[i - 1], "--calibration") != 0 || !argv[i][0]))
            abort();
        if (role[i] > SIM_ARG_PARAM)
            abort();
    }
}

static void check(int argc, char **argv, const unsigned char *role)
{
    if (!o.job.workload == !o.job.trace)
        abort();
    if (!fuzz_words_at(argc, argv, o.job.workload ? o.job.workload : o.job.trace, false))
        abort();
    if (o.job.trace && (o.nsets || o.seed_given))
        abort();
    if (o.nsets > SIM_OPTS_MAX_SETS)
        abort();
    bool any = false;
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        any = any || o.job.policies[p];
    if (!any)
        abort();
    if (o.job.oversub_pct != 0 && !(o.job.oversub_pct > 0 && o.job.oversub_pct <= 1e6))
        abort();
    if ((o.sweep && o.job.oversub_pct != 0) || (o.plot_given && !o.sweep) || !o.plot[0])
        abort();
    if (o.recorded && !o.predict_given)
        abort();
    if (o.nclass > SIM_OPTS_MAX_CLASSED)
        abort();
    for (uint32_t t = 0; t < SIM_OPTS_MAX_CLASSED; t++)
        if (o.lc[t] > 1 || o.prio[t] < -SIM_OPTS_MAX_PRIO || o.prio[t] > SIM_OPTS_MAX_PRIO ||
            (t >= o.nclass && (o.lc[t] || o.prio[t])))
            abort();
    check_role(argc, argv, role);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[FUZZ_WORDS_TEXT], prog[] = "sim";
    char *argv[FUZZ_WORDS_MAX + 2];
    int argc = fuzz_words(data, size, prog, text, argv);
    if (com_cli_help_asked(argc, argv, NULL)) /* cmd_sim prints its help first */
        return 0;
    unsigned char *role = calloc((size_t)argc, 1);
    if (!role)
        abort();
    int rc = sim_opts_read(argc, argv, role, &o);
    if (rc != 0 && rc != COM_CLI_EXIT_USAGE)
        abort();
    if (rc == 0)
        check(argc, argv, role);
    free(role);
    return 0;
}

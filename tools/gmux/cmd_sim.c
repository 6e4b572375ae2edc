/*
 * gmux sim: runs a workload or a trace on the simulated device under the
 * memory policies (demand, proactive, proactive-lru, oracle) and reports them
 * beside the transfer bound. See docs/sim.md.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "sim/calib.h"
#include "commands.h"
#include "out_file.h"
#include "sim/workload.h"
#include "sim_opts.h"
#include "sim_report.h"

#define CMD "sim"

static void print_help(void)
{
    printf("Usage: gmux sim (--workload NAME [--set KEY=VALUE ...] | --trace FILE)\n"
           "                [--calibration FILE] [--param KEY=VALUE ...] [--policy LIST]\n"
           "                [--seed S] [--oversub PCT | --sweep [--plot PREFIX]] [--json]\n"
           "                [--lc TASK ...] [--prio TASK=N ...] [--quiet]\n"
           "                [--predict learned|recorded] [--templates FILE]\n"
           "       gmux sim -h | --help | -V | --version\n\n"
           "Simulates the tasks of a workload (or a trace file) sharing one GPU and\n"
           "compares the memory policies on the same plan: demand (CUDA Unified Memory\n"
           "demand paging), proactive (gmux's engine, Belady/OPT eviction),\n"
           "proactive-lru (the engine with LRU eviction) and oracle (unlimited memory),\n"
           "beside the transfer bound: a lower bound on the makespan of any policy\n"
           "that moves whole chunks at this device size (faults that move smaller\n"
           "blocks can beat it on sparse access; such a row is marked '*').\n\n"
           "  --workload NAME a built-in workload (list below; join several with '+')\n"
           "  --set KEY=VALUE a setting of the workload (below)\n"
           "  --trace FILE    a trace file instead (gmux trace; docs/trace-format.md)\n"
           "  --calibration F device parameters measured by gmux-calibrate on a GPU (JSON);\n"
           "                  applied over the defaults, before any --param; given again,\n"
           "                  each file over the ones before it\n"
           "  --param KEY=VALUE a device parameter (below)\n"
           "  --policy LIST   comma-separated policies (default: all four)\n"
           "  --seed S        the workload's seed (default 1; a --set seed=S wins);\n"
           "                  not with --trace\n"
           "  --oversub PCT   device memory = footprint * 100 / PCT (default: the hbm param)\n"
           "  --sweep         oversubscription 100%% to 400%%; writes PREFIX.png (gnuplot)\n"
           "  --plot PREFIX   where the sweep writes its files (default gmux-sim-sweep;\n"
           "                  only with --sweep); a folder (DIR/, DIR/., ..) is refused:\n"
           "                  give the stem too, as in DIR/gmux-sim-sweep\n"
           "  --json          one JSON object instead of the tables\n"
           "  --lc TASK       makes task number TASK latency-critical\n"
           "  --prio TASK=N   gives task TASK priority N (higher runs first)\n"
           "  --quiet         no progress lines on stderr (at most one a second in the\n"
           "                  runs and the transfer bound; a line per sweep step)\n"
           "  --predict HOW   working sets of the proactive policies: 'learned' (the\n"
           "                  default: templates learned online from launches that ran,\n"
           "                  the launch history and streams for indirect kernels;\n"
           "                  docs/templates.md) or 'recorded' (an ablation: the trace's\n"
           "                  own ranges, a perfect predictor no real program has; learned\n"
           "                  is within 1.04x of it on the bundled workloads,\n"
           "                  docs/bench/predict.md)\n"
           "  --templates F   learned prediction starting from database F (gmux profile);\n"
           "                  implies --predict learned (not with --predict recorded)\n\n"
           "Exit status: 0 (also when the --templates database cannot be read: said, and\n"
           "learned online); 1 when the trace or a --calibration file cannot be read, the\n"
           "sweep's data file or plot script cannot be written whole (no plot is drawn),\n"
           "a chosen policy fails for another reason than the device's size, none runs,\n"
           "or --lc/--prio names a task the workload does not have; 2 for a usage error\n"
           "(a bad workload name or --set included).\n\n"
           "Device parameters (--param KEY=VALUE; sources in docs/sim.md):\n");
    sim_params_print_help(stdout);
    printf("\n");
    sim_workload_print_help(stdout);
}

/* Reads each --calibration (the argv words marked ARG_CALIB) over the
 * defaults, then each --param (ARG_PARAM) in order over them: 0, or 1 after
 * saying which file could not be read. */
static int apply_device_params(int argc, char **argv, const unsigned char *role,
                               sim_params_t *params)
{
    for (int i = 1; i < argc; i++) {
        if (role[i] != SIM_ARG_CALIB)
            continue;
        char applied[512], cerr[512];
        if (sim_calib_apply_file(params, argv[i], applied, sizeof(applied), cerr, sizeof(cerr)) !=
            GMUX_OK)
            return cli_fail(CMD, "%s", cerr);
        fprintf(stderr, "gmux sim: calibrated from %s: %s\n", argv[i],
                applied[0] ? applied : "(no usable measurement)");
    }
    char err[1024];
    for (int i = 1; i < argc; i++) /* checked when parsed: cannot fail here */
        if (role[i] == SIM_ARG_PARAM &&
            sim_params_set(params, argv[i], err, sizeof(err)) != GMUX_OK)
            return cli_bad_value(CMD, "--param", argv[i], "KEY=VALUE, a device parameter (%s)",
                                 err);
    return 0;
}

/* What follows the words' checks: the --plot files against the inputs, the
 * workload opened once, the device parameters; then the runs. */
static int sim_checked(int argc, char **argv, const unsigned char *role, struct sim_opts *o)
{
    sim_learned_t learned;
    char err[1024];
    if (o->sweep) { /* its files are written over whatever has their names */
        for (int e = 0; e < 3; e++) {
            char file[1100];
            static const char *const ext[] = {".dat", ".gp", ".png"};
            snprintf(file, sizeof(file), "%s%s", o->plot, ext[e]);
            const char *inputs[] = {o->job.trace, o->templates};
            for (int k = 0; k < 2; k++)
                if (inputs[k] && cli_same_file(file, inputs[k]))
                    return cli_usage_error(CMD, "--plot '%s' writes %s, the same file as '%s'",
                                           o->plot, file, inputs[k]);
            /* every --calibration is read, not only the last */
            for (int k = 1; k < argc; k++)
                if (role[k] == SIM_ARG_CALIB && cli_same_file(file, argv[k]))
                    return cli_usage_error(CMD, "--plot '%s' writes %s, the same file as '%s'",
                                           o->plot, file, argv[k]);
        }
    }
    if (o->templates && o->predict_given && o->recorded)
        return cli_usage_error(CMD, "--templates needs the learned prediction");
    if (o->job.workload) { /* a bad name or setting is the caller's, said before any work */
        sim_source_t *src = NULL;
        int bad = cli_workload_open(CMD, o->job.workload, o->sets, o->nsets, o->job.seed, &src);
        if (bad)
            return bad;
        sim_source_close(src);
    }
    int bad = apply_device_params(argc, argv, role, &o->job.params);
    if (bad)
        return bad;
    if (sim_params_check(&o->job.params, err, sizeof(err)) != GMUX_OK)
        return cli_usage_error(CMD, "%s", err);
    if (!o->recorded)
        sim_report_use_learned(&o->job, &learned, o->templates);
    o->job.sets = o->sets;
    o->job.nsets = o->nsets;
    o->job.lc = o->lc;
    o->job.prio = o->prio;
    o->job.nclass = o->nclass;
    return o->sweep ? sim_report_sweep(&o->job, o->json, o->plot, stdout, o->json ? stderr : stdout)
                    : sim_report_run(&o->job, o->json, stdout);
}

static int sim_main(int argc, char **argv, unsigned char *role)
{
    struct sim_opts *o = calloc(1, sizeof(*o));
    if (!o)
        return cli_fail(CMD, "out of memory");
    int rc = sim_opts_read(argc, argv, role, o);
    if (rc == 0)
        rc = sim_checked(argc, argv, role, o);
    free(o);
    return rc;
}

int cmd_sim(int argc, char **argv)
{
    if (com_cli_help_asked(argc, argv, NULL)) { /* before any --calibration is read */
        print_help();
        return 0;
    }
    unsigned char *role = calloc((size_t)argc, 1); /* what each word is, SIM_ARG_* */
    if (!role)
        return cli_fail(CMD, "out of memory");
    int rc = sim_main(argc, argv, role);
    free(role);
    return rc;
}

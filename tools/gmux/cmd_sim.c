/*
 * gmux sim: runs a workload or a trace on the simulated device under the
 * memory policies (demand, proactive, proactive-lru, oracle) and reports them
 * beside the transfer bound. See docs/sim.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim/calib.h"
#include "commands.h"
#include "common/parse.h"
#include "out_file.h"
#include "plot.h"
#include "sim/workload.h"
#include "sim_report.h"

#define CMD         "sim"
#define MAX_SETS    64
#define MAX_CLASSED 256
/* what --prio wants, with the last task number */
#define PRIO_WANTS "TASK=N (TASK from 0 to %d, N from -1000000 to 1000000)"

/* What a word of argv is to the steps after the options are checked: the
 * value of a --calibration (a file read then) or of a --param. */
enum { ARG_OTHER, ARG_CALIB, ARG_PARAM };

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

/* Reads a comma-separated list of any length into pol (0, or the usage
 * status after saying why). */
static int parse_policies(const char *list, bool *pol)
{
    memset(pol, 0, sizeof(bool) * SIM_POLICY_COUNT);
    char *buf = strdup(list);
    if (!buf)
        return cli_fail(CMD, "out of memory");
    char *save = NULL;
    int n = 0, rc = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        sim_policy_t p;
        _Static_assert(SIM_POLICY_COUNT == 4, "the message names every policy");
        if (sim_policy_parse(tok, &p) != GMUX_OK) /* the whole list quoted, and the word */
            rc = cli_bad_list_word(
                CMD, "--policy", list, tok, "policies separated by commas (%s, %s, %s or %s)",
                sim_policy_name(SIM_POLICY_DEMAND), sim_policy_name(SIM_POLICY_PROACTIVE),
                sim_policy_name(SIM_POLICY_PROACTIVE_LRU), sim_policy_name(SIM_POLICY_ORACLE));
        else
            pol[p] = true;
        n++;
    }
    free(buf);
    if (rc == 0 && n == 0)
        rc = cli_bad_value(CMD, "--policy", list, "policies separated by commas");
    return rc;
}

/* Reads each --calibration (the argv words marked ARG_CALIB) over the
 * defaults, then each --param (ARG_PARAM) in order over them: 0, or 1 after
 * saying which file could not be read. */
static int apply_device_params(int argc, char **argv, const unsigned char *role,
                               sim_params_t *params)
{
    for (int i = 1; i < argc; i++) {
        if (role[i] != ARG_CALIB)
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
        if (role[i] == ARG_PARAM && sim_params_set(params, argv[i], err, sizeof(err)) != GMUX_OK)
            return cli_bad_value(CMD, "--param", argv[i], "KEY=VALUE, a device parameter (%s)",
                                 err);
    return 0;
}

static int sim_main(int argc, char **argv, unsigned char *role)
{
    const char *sets[MAX_SETS];
    size_t nsets = 0;
    uint8_t lc[MAX_CLASSED] = {0};
    int prio[MAX_CLASSED] = {0};
    uint32_t nclass = 0;
    sim_job_t job;
    memset(&job, 0, sizeof(job));
    sim_params_default(&job.params);
    /* --param is checked here on defaults and applied after the calibration
     * files, which are read only once every option has been checked */
    sim_params_t scratch;
    sim_params_default(&scratch);
    job.seed = 1;
    job.progress = true;
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        job.policies[p] = true;
    bool json = false, sweep = false;
    bool recorded = false, predict_given = false;
    const char *templates = NULL;
    sim_learned_t learned;
    const char *plot = "gmux-sim-sweep";
    bool plot_given = false, seed_given = false;
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            json = true;
            continue;
        }
        if (strcmp(a, "--sweep") == 0) {
            sweep = true;
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            job.progress = false;
            continue;
        }
        bool takes =
            strcmp(a, "--workload") == 0 || strcmp(a, "--set") == 0 || strcmp(a, "--trace") == 0 ||
            strcmp(a, "--param") == 0 || strcmp(a, "--policy") == 0 ||
            strcmp(a, "--oversub") == 0 || strcmp(a, "--seed") == 0 || strcmp(a, "--plot") == 0 ||
            strcmp(a, "--lc") == 0 || strcmp(a, "--prio") == 0 || strcmp(a, "--predict") == 0 ||
            strcmp(a, "--templates") == 0 || strcmp(a, "--calibration") == 0;
        if (!takes)
            return cli_bad_word(CMD, a);
        const char *v = com_cli_option_value(argc, argv, i++);
        if (!v)
            return cli_no_value(CMD, a);
        if (strcmp(a, "--workload") == 0) {
            job.workload = v;
        } else if (strcmp(a, "--trace") == 0) {
            job.trace = v;
        } else if (strcmp(a, "--set") == 0) {
            if (nsets == MAX_SETS)
                return cli_usage_error(CMD, "too many --set options at '%s'", v);
            sets[nsets++] = v;
        } else if (strcmp(a, "--param") == 0) {
            if (sim_params_set(&scratch, v, err, sizeof(err)) != GMUX_OK)
                return cli_bad_value(CMD, a, v, "KEY=VALUE, a device parameter (%s)", err);
            role[i] = ARG_PARAM;
        } else if (strcmp(a, "--policy") == 0) {
            int rc = parse_policies(v, job.policies);
            if (rc)
                return rc;
        } else if (strcmp(a, "--oversub") == 0) {
            if (com_parse_double(v, &job.oversub_pct) != GMUX_OK || !(job.oversub_pct > 0) ||
                job.oversub_pct > 1e6)
                return cli_bad_value(CMD, a, v, "a percentage above 0, at most 1e6");
        } else if (strcmp(a, "--seed") == 0) {
            if (com_parse_u64(v, &job.seed) != GMUX_OK)
                return cli_bad_value(CMD, a, v, "a whole number, 0 or more");
            seed_given = true;
        } else if (strcmp(a, "--plot") == 0) {
            int bad = plot_prefix_check(CMD, a, v, "gmux-sim-sweep");
            if (bad)
                return bad;
            plot = v;
            plot_given = true;
        } else if (strcmp(a, "--predict") == 0) {
            if (strcmp(v, "learned") != 0 && strcmp(v, "recorded") != 0)
                return cli_bad_value(CMD, a, v, "learned or recorded");
            recorded = strcmp(v, "recorded") == 0;
            predict_given = true;
        } else if (strcmp(a, "--calibration") == 0) {
            role[i] = ARG_CALIB; /* read once every option is checked */
        } else if (strcmp(a, "--templates") == 0) {
            templates = v;
        } else if (strcmp(a, "--lc") == 0) {
            uint64_t t;
            if (com_parse_u64(v, &t) != GMUX_OK || t >= MAX_CLASSED)
                return cli_bad_value(CMD, a, v, "a task number from 0 to %d", MAX_CLASSED - 1);
            lc[t] = 1;
            if (t + 1 > nclass)
                nclass = (uint32_t)t + 1;
        } else {
            const char *eq = strchr(v, '=');
            char tbuf[32];
            uint64_t t;
            int64_t n;
            if (!eq || (size_t)(eq - v) >= sizeof(tbuf))
                return cli_bad_value(CMD, a, v, PRIO_WANTS, MAX_CLASSED - 1);
            memcpy(tbuf, v, (size_t)(eq - v));
            tbuf[eq - v] = '\0';
            if (com_parse_u64(tbuf, &t) != GMUX_OK || t >= MAX_CLASSED ||
                com_parse_i64(eq + 1, &n) != GMUX_OK || n < -1000000 || n > 1000000)
                return cli_bad_value(CMD, a, v, PRIO_WANTS, MAX_CLASSED - 1);
            prio[t] = (int)n;
            if (t + 1 > nclass)
                nclass = (uint32_t)t + 1;
        }
    }
    /* the workload takes the last seed=N over --seed: the report names it
     * (a bad number fails when the workload opens) */
    for (size_t i = 0; i < nsets; i++)
        if (strncmp(sets[i], "seed=", 5) == 0)
            (void)com_parse_u64(sets[i] + 5, &job.seed);
    if (!job.workload == !job.trace)
        return cli_usage_error(CMD, "give exactly one of --workload and --trace");
    if (job.trace && nsets > 0)
        return cli_usage_error(CMD, "--set applies to --workload, not to '%s'", job.trace);
    if (job.trace && seed_given) /* a trace has no seed: it was taken and did nothing */
        return cli_usage_error(CMD, "--seed applies to --workload, not to '%s'", job.trace);
    if (sweep && job.oversub_pct > 0)
        return cli_usage_error(CMD, "--sweep sets the oversubscription itself");
    if (plot_given && !sweep) /* was accepted and ignored */
        return cli_usage_error(CMD, "--plot names where --sweep writes; give --sweep too");
    if (sweep) { /* its files are written over whatever has their names */
        for (int e = 0; e < 3; e++) {
            char file[1100];
            static const char *const ext[] = {".dat", ".gp", ".png"};
            snprintf(file, sizeof(file), "%s%s", plot, ext[e]);
            const char *inputs[] = {job.trace, templates};
            for (int k = 0; k < 2; k++)
                if (inputs[k] && cli_same_file(file, inputs[k]))
                    return cli_usage_error(CMD, "--plot '%s' writes %s, the same file as '%s'",
                                           plot, file, inputs[k]);
            /* every --calibration is read, not only the last */
            for (int k = 1; k < argc; k++)
                if (role[k] == ARG_CALIB && cli_same_file(file, argv[k]))
                    return cli_usage_error(CMD, "--plot '%s' writes %s, the same file as '%s'",
                                           plot, file, argv[k]);
        }
    }
    if (templates && predict_given && recorded)
        return cli_usage_error(CMD, "--templates needs the learned prediction");
    if (job.workload) { /* a bad name or setting is the caller's, said before any work */
        sim_source_t *src = NULL;
        int bad = cli_workload_open(CMD, job.workload, sets, nsets, job.seed, &src);
        if (bad)
            return bad;
        sim_source_close(src);
    }
    int bad = apply_device_params(argc, argv, role, &job.params);
    if (bad)
        return bad;
    if (sim_params_check(&job.params, err, sizeof(err)) != GMUX_OK)
        return cli_usage_error(CMD, "%s", err);
    if (!recorded)
        sim_report_use_learned(&job, &learned, templates);
    job.sets = sets;
    job.nsets = nsets;
    job.lc = lc;
    job.prio = prio;
    job.nclass = nclass;
    return sweep ? sim_report_sweep(&job, json, plot, stdout, json ? stderr : stdout)
                 : sim_report_run(&job, json, stdout);
}

int cmd_sim(int argc, char **argv)
{
    if (com_cli_help_asked(argc, argv, NULL)) { /* before any --calibration is read */
        print_help();
        return 0;
    }
    unsigned char *role = calloc((size_t)argc, 1); /* what each word is, ARG_* */
    if (!role)
        return cli_fail(CMD, "out of memory");
    int rc = sim_main(argc, argv, role);
    free(role);
    return rc;
}

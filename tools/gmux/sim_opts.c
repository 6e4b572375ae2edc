/* gmux sim's words: see sim_opts.h. Moved out of cmd_sim.c unchanged. */
#include "sim_opts.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/parse.h"
#include "plot.h"
#include "sim/params.h"
#include "sim/run.h"

#define CMD "sim"
/* what --prio wants, with the last task number */
#define PRIO_WANTS "TASK=N (TASK from 0 to %d, N from -1000000 to 1000000)"

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

int sim_opts_read(int argc, char **argv, unsigned char *role, struct sim_opts *o)
{
    memset(o, 0, sizeof(*o));
    sim_params_default(&o->job.params);
    /* --param is checked here on defaults and applied after the calibration
     * files, which are read only once every option has been checked */
    sim_params_t scratch;
    sim_params_default(&scratch);
    o->job.seed = 1;
    o->job.progress = true;
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        o->job.policies[p] = true;
    o->plot = "gmux-sim-sweep";
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o->json = true;
            continue;
        }
        if (strcmp(a, "--sweep") == 0) {
            o->sweep = true;
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            o->job.progress = false;
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
            o->job.workload = v;
        } else if (strcmp(a, "--trace") == 0) {
            o->job.trace = v;
        } else if (strcmp(a, "--set") == 0) {
            if (o->nsets == SIM_OPTS_MAX_SETS)
                return cli_usage_error(CMD, "too many --set options at '%s'", v);
            o->sets[o->nsets++] = v;
        } else if (strcmp(a, "--param") == 0) {
            if (sim_params_set(&scratch, v, err, sizeof(err)) != GMUX_OK)
                return cli_bad_value(CMD, a, v, "KEY=VALUE, a device parameter (%s)", err);
            role[i] = SIM_ARG_PARAM;
        } else if (strcmp(a, "--policy") == 0) {
            int rc = parse_policies(v, o->job.policies);
            if (rc)
                return rc;
        } else if (strcmp(a, "--oversub") == 0) {
            if (com_parse_double(v, &o->job.oversub_pct) != GMUX_OK || !(o->job.oversub_pct > 0) ||
                o->job.oversub_pct > 1e6)
                return cli_bad_value(CMD, a, v, "a percentage above 0, at most 1e6");
        } else if (strcmp(a, "--seed") == 0) {
            if (com_parse_u64(v, &o->job.seed) != GMUX_OK)
                return cli_bad_value(CMD, a, v, "a whole number, 0 or more");
            o->seed_given = true;
        } else if (strcmp(a, "--plot") == 0) {
            int bad = plot_prefix_check(CMD, a, v, "gmux-sim-sweep");
            if (bad)
                return bad;
            o->plot = v;
            o->plot_given = true;
        } else if (strcmp(a, "--predict") == 0) {
            if (strcmp(v, "learned") != 0 && strcmp(v, "recorded") != 0)
                return cli_bad_value(CMD, a, v, "learned or recorded");
            o->recorded = strcmp(v, "recorded") == 0;
            o->predict_given = true;
        } else if (strcmp(a, "--calibration") == 0) {
            role[i] = SIM_ARG_CALIB; /* read once every option is checked */
        } else if (strcmp(a, "--templates") == 0) {
            o->templates = v;
        } else if (strcmp(a, "--lc") == 0) {
            uint64_t t;
            if (com_parse_u64(v, &t) != GMUX_OK || t >= SIM_OPTS_MAX_CLASSED)
                return cli_bad_value(CMD, a, v, "a task number from 0 to %d",
                                     SIM_OPTS_MAX_CLASSED - 1);
            o->lc[t] = 1;
            if (t + 1 > o->nclass)
                o->nclass = (uint32_t)t + 1;
        } else {
            const char *eq = strchr(v, '=');
            char tbuf[32];
            uint64_t t;
            int64_t n;
            if (!eq || (size_t)(eq - v) >= sizeof(tbuf))
                return cli_bad_value(CMD, a, v, PRIO_WANTS, SIM_OPTS_MAX_CLASSED - 1);
            memcpy(tbuf, v, (size_t)(eq - v));
            tbuf[eq - v] = '\0';
            if (com_parse_u64(tbuf, &t) != GMUX_OK || t >= SIM_OPTS_MAX_CLASSED ||
                com_parse_i64(eq + 1, &n) != GMUX_OK || n < -1000000 || n > 1000000)
                return cli_bad_value(CMD, a, v, PRIO_WANTS, SIM_OPTS_MAX_CLASSED - 1);
            o->prio[t] = (int)n;
            if (t + 1 > o->nclass)
                o->nclass = (uint32_t)t + 1;
        }
    }
    /* the workload takes the last seed=N over --seed: the report names it
     * (a bad number fails when the workload opens) */
    for (size_t i = 0; i < o->nsets; i++)
        if (strncmp(o->sets[i], "seed=", 5) == 0)
            (void)com_parse_u64(o->sets[i] + 5, &o->job.seed);
    if (!o->job.workload == !o->job.trace)
        return cli_usage_error(CMD, "give exactly one of --workload and --trace");
    if (o->job.trace && o->nsets > 0)
        return cli_usage_error(CMD, "--set applies to --workload, not to '%s'", o->job.trace);
    if (o->job.trace && o->seed_given) /* a trace has no seed: it was taken and did nothing */
        return cli_usage_error(CMD, "--seed applies to --workload, not to '%s'", o->job.trace);
    if (o->sweep && o->job.oversub_pct > 0)
        return cli_usage_error(CMD, "--sweep sets the oversubscription itself");
    if (o->plot_given && !o->sweep) /* was accepted and ignored */
        return cli_usage_error(CMD, "--plot names where --sweep writes; give --sweep too");
    return 0;
}

/*
 * gmux bench net: put+signal round-trip latency, bandwidth against size and
 * 8-byte message rate of gmux next to raw libfabric, over loopback. This is
 * the gmux side: options, the launch of two ranks per provider
 * (gmux-net-rank bench-net, bench_net_rank.c, which measure and print) and
 * the plot. It links no libfabric (net_rank.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_net_opts.h"
#include "cli.h"
#include "commands.h"
#include "net_rank.h"
#include "out_file.h"
#include "plot.h"

/* The data file of provider prov under --plot PREFIX, PREFIX.PROV.dat
 * (path), begun as a part file with its header (out_file.h): rank 0 of that
 * provider's run appends the rows to o->dst, renamed over path only once the
 * run succeeded (a run that fails part way leaves no data file that looks
 * whole). 0, or 1 after saying why. */
static int plot_data_begin(cli_out_t *o, const char *prefix, const char *prov, char *path,
                           size_t len)
{
    snprintf(path, len, "%s.%s.dat", prefix, prov);
    if (cli_out_begin(o, "bench net", path) != 0)
        return 1;
    FILE *f = fopen(o->dst, "w");
    if (!f)
        return cli_fail("bench net", "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "# gmux bench net, %s: bytes gmux_MiBps raw_MiBps ratio ratio_min ratio_max\n",
            prov);
    if (plot_file_close(f, "bench net", path) != 0) {
        cli_out_finish(o, false);
        return 1;
    }
    return 0;
}

/* PREFIX.gp and PREFIX.png: bandwidth against size, gmux solid and raw
 * dashed per provider; below it gmux/raw with the range of the per-pair
 * ratios. */
static int plot_write(const char *prefix, const char *const *provs, int nprov, bool same, FILE *out)
{
    char dat[1024];
    plot_script_t s;
    if (plot_script_begin(&s, "bench net", prefix, "960,840") != 0)
        return 1;
    FILE *f = s.f;
    fprintf(f,
            "set multiplot layout 2,1\n"
            "set logscale x 2\nset format x '%%.0b%%BB'\nset xrange [6:6e6]\nset grid\n"
            "set key outside right\nset lmargin 12\nset rmargin 26\n"
            "set title 'gmux bench net: put bandwidth against size (loopback, 2 ranks)%s'\n"
            "set ylabel 'MiB/s (median of the runs)'\nset logscale y\nplot ",
            same ? ", A/A control" : "");
    for (int p = 0; p < nprov; p++) {
        snprintf(dat, sizeof(dat), "%s.%s.dat", prefix, provs[p]);
        fprintf(f, "%s", p ? ", " : "");
        plot_put_str(f, dat);
        fprintf(f,
                " using 1:2 with linespoints lw 2 lc %d title '%s gmux', "
                "'' using 1:3 with linespoints dt 2 lc %d title '%s raw libfabric'",
                p + 1, provs[p], p + 1, provs[p]);
    }
    fprintf(f, "\nset title 'gmux / raw (median of the per-pair ratios, bars: their range)'\n"
               "unset logscale y\nset ylabel 'gmux / raw'\nset xlabel 'put size'\n"
               "plot 1 with lines lc 0 notitle");
    for (int p = 0; p < nprov; p++) {
        snprintf(dat, sizeof(dat), "%s.%s.dat", prefix, provs[p]);
        fprintf(f, ", ");
        plot_put_str(f, dat);
        fprintf(f, " using 1:4:5:6 with yerrorlines lc %d title '%s'", p + 1, provs[p]);
    }
    fprintf(f, "\nunset multiplot\n");
    snprintf(dat, sizeof(dat), "%s.*.dat", prefix);
    return plot_script_finish(&s, dat, out);
}

static int print_help(void)
{
    printf("Usage: gmux bench net [--provider shm|tcp|both] [--reps N] [--json] [--quick]\n"
           "                      [--calls] [--same gmux|raw] [--plot PREFIX]\n"
           "       gmux bench net -h | --help | -V | --version\n\n"
           "Two ranks over loopback: put+signal round-trip latency, bandwidth\n"
           "against size and 8-byte put rate, gmux next to raw libfabric, on each\n"
           "--provider (default both: shm, then tcp).\n"
           "Each figure is N alternating gmux and raw runs (default %d, at most %d),\n"
           "each side first in every other pair: gmux and raw are each column's\n"
           "median, gmux/raw the median of the N per-run ratios [their range];\n"
           "--json: one JSON record per figure instead of the table; it adds each\n"
           "column's best run. One untimed run of each side comes first. More runs\n"
           "make a noisy machine's ratios steadier.\n"
           "--quick: fewer iterations and smaller transfers (a check that it runs;\n"
           "the figures are less steady).\n"
           "--calls: also print each rank's libfabric calls per transfer.\n"
           "--same SIDE: run SIDE in both columns (an A/A control: its ratios show\n"
           "how far this machine's noise alone moves a figure from 1).\n"
           "--plot PREFIX: also write PREFIX.png (gnuplot): bandwidth against size,\n"
           "gmux beside raw per provider, and gmux/raw with its range; the data in\n"
           "PREFIX.PROVIDER.dat, the script in PREFIX.gp (a folder, DIR/, is no\n"
           "PREFIX: a usage error; give DIR/NAME). A data file is written\n"
           "(as FILE.part~, then renamed) only for a provider's run that succeeds;\n"
           "after a failed or interrupted run an earlier one stays as it was, and\n"
           "no plot is drawn. The script and the PNG are replaced alike, the PNG\n"
           "once gnuplot succeeded.\n\n"
           "Exit status: 0; a rank's failure as gmux launch reports it (the worst\n"
           "over the providers); 1 when gmux-net-rank is not found or a --plot data\n"
           "file or the plot script cannot be written (no plot is drawn); 128+N after\n"
           "SIGINT, SIGTERM or SIGHUP N, which stops the ranks and says the figures\n"
           "printed so far are partial; 2 for a usage error.\n",
           BENCH_NET_REPS, BENCH_NET_REPS_MAX);
    return 0;
}

int bench_net(int argc, char **argv)
{
    struct bench_net_opts o;
    int bad = bench_net_opts_read(argc, argv, &o);
    if (bad < 0)
        return print_help();
    if (bad)
        return bad;
    const char **provs = o.provs, *same = o.same, *plot = o.plot;
    char *reps = o.reps;
    int nprov = o.nprov;
    bool json = o.json, quick = o.quick, calls = o.calls;
    char exe[PATH_MAX];
    if (net_rank_exe("bench net", exe, sizeof(exe)) != 0)
        return 1;
    int worst = 0;
    char dats[2][1024];
    cli_out_t outs[2];
    for (int p = 0; plot && p < nprov; p++) {
        if (plot_data_begin(&outs[p], plot, provs[p], dats[p], sizeof(dats[p])) != 0) {
            while (p-- > 0)
                cli_out_finish(&outs[p], false);
            return 1;
        }
    }
    /* an interrupt, in a run or between two, ends the bench after that run
     * (gmux launch stops its ranks) */
    struct cli_interrupts ints;
    cli_interrupts_catch(&ints);
    int p = 0;
    for (; p < nprov && !cli_interrupted(); p++) {
        setenv("GMUX_NET_PROVIDER", provs[p], 1);
        /* the launch, the rank's program and its options: at most 17 words */
        char *args[18] = {"launch", "-n", "2",         "--timeout", "300",
                          "--",     exe,  "bench-net", "--reps",    reps};
        int k = 10;
        if (json)
            args[k++] = "--json";
        if (quick)
            args[k++] = "--quick";
        if (calls)
            args[k++] = "--calls";
        if (same) {
            args[k++] = "--same";
            args[k++] = (char *)same;
        }
        if (plot) {
            args[k++] = "--plot-data";
            args[k++] = (char *)outs[p].dst;
        }
        args[k] = NULL;
        fflush(stdout);
        int rc = cmd_launch(k, args);
        if (rc > worst)
            worst = rc;
        if (plot && cli_out_finish(&outs[p], rc == 0) != 0) { /* said */
            worst = worst ? worst : 1;
        } else if (plot && rc != 0 && !cli_interrupted()) {
            fflush(stdout);
            fprintf(stderr,
                    "gmux bench net: the %s run failed: no %s written (its rows were partial; "
                    "an earlier one stays as it was)\n",
                    provs[p], dats[p]);
        }
    }
    for (int q = p; plot && q < nprov; q++) /* never run: an interrupt */
        cli_out_finish(&outs[q], false);
    cli_interrupts_restore(&ints);
    if (cli_interrupted()) {
        fflush(stdout);
        fprintf(stderr,
                "gmux bench net: interrupted by signal %d; the figures printed are "
                "partial (not measured to the end:",
                cli_interrupted());
        for (int q = p > 0 ? p - 1 : 0; q < nprov; q++) /* the one cut short and the rest */
            fprintf(stderr, " %s", provs[q]);
        fprintf(stderr, ")%s\n", plot ? "; no plot written, nor their data files" : "");
        return 128 + cli_interrupted();
    }
    if (plot && worst == 0)
        worst = plot_write(plot, provs, nprov, same != NULL, json ? stderr : stdout);
    return worst;
}

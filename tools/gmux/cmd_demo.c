/*
 * gmux demo: the main job on the built-in defaults, one demonstration per
 * part of the runtime, none needing a GPU.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "demo_moe.h"
#include "sim_report.h"

struct demo_part {
    const char *name;
    int (*run)(void);
    bool in_process; /* starts no process: an interrupt may end gmux at once */
};

int demo_daemon(void); /* demo_daemon.c */

static const char *plot_dir; /* --plot-dir; NULL: the current directory */

static int demo_sim(void)
{
    return sim_report_demo(plot_dir);
}

static const struct demo_part parts[] = {
    {"mem: simulator report (8 LLM instances, DL and scientific mixes)", demo_sim, true},
    {"mem: gmuxd time slices (2 batch tasks, 1 latency-class task)", demo_daemon, false},
    {"net: loopback put/signal demo", demo_net, false},
    {"net: MoE dispatch/combine, CPU threads, 4 ranks over loopback", demo_moe_run, false},
};

int cmd_demo(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("Usage: gmux demo [--plot-dir DIR]\n\nRuns each part of gmux on its built-in "
                   "defaults; needs no GPU:\n");
            for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
                printf("  %s\n", parts[k].name);
            printf("A part that fails is marked FAILED and the exit status is 1.\n"
                   "SIGINT, SIGTERM or SIGHUP N stops the running part's processes (ranks,\n"
                   "daemon), removes its temporary files and exits 128+N.\n\n"
                   "  --plot-dir DIR  where the simulator's sweep plot goes "
                   "(gmux-demo-llm-sweep.png, .dat, .gp;\n"
                   "                  default: the current directory, skipped if it cannot be "
                   "written)\n");
            return 0;
        }
        if (strcmp(argv[i], "--plot-dir") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("demo", "--plot-dir needs a directory");
            const char *d = argv[++i];
            struct stat st;
            if (stat(d, &st) != 0)
                return cli_usage_error("demo", "--plot-dir '%s': %s", d, strerror(errno));
            if (!S_ISDIR(st.st_mode))
                return cli_usage_error("demo", "--plot-dir '%s': not a directory", d);
            if (access(d, W_OK) != 0)
                return cli_usage_error("demo", "--plot-dir '%s': cannot write there (%s)", d,
                                       strerror(errno));
            plot_dir = d;
            continue;
        }
        return cli_usage_error("demo", "unexpected argument '%s'", argv[i]);
    }
    /* Between parts and in those that start processes (which stop them on
     * an interrupt themselves), an interrupt ends the demo after the part */
    struct cli_interrupts ints;
    cli_interrupts_catch(&ints);
    int failed = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && !cli_interrupted(); i++) {
        printf("== %s\n", parts[i].name);
        if (parts[i].in_process)
            cli_interrupts_restore(&ints);
        int rc = parts[i].run();
        if (parts[i].in_process)
            cli_interrupts_catch(&ints);
        if (cli_interrupted())
            break; /* the part's processes are stopped; those after it not run */
        if (rc != 0) {
            printf("   FAILED (exit %d)\n", rc);
            failed = 1;
        }
    }
    cli_interrupts_restore(&ints);
    if (!cli_interrupted())
        return failed;
    fflush(stdout);
    fprintf(stderr, "gmux demo: interrupted by signal %d; stopped before its end\n",
            cli_interrupted());
    return 128 + cli_interrupted();
}

/*
 * gmux demo: the main job on the built-in defaults, one demonstration per
 * part of the runtime, none needing a GPU.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "demo_moe.h"
#include "sim_report.h"

struct demo_part {
    const char *name;
    int (*run)(void);
};

int demo_daemon(void); /* demo_daemon.c */

static const char *plot_dir;            /* --plot-dir; NULL: the current directory */
static struct cli_interrupts demo_ints; /* the dispositions before the demo */

/* The simulator's report runs in a child process, so that an interrupt
 * stops it as it stops the other parts' processes: the child dies of it
 * (SIGTERM from here when the signal was sent to gmux alone), gmux reaps it
 * and says so, and exits 128+N; the simulator's loops check no flag. */
static int demo_sim(void)
{
    fflush(NULL);
    pid_t pid = cli_fork_child(&demo_ints);
    if (pid < 0)
        return cli_fail("demo", "cannot start the simulator: %s", strerror(errno));
    if (pid == 0) {
        int rc = sim_report_demo(plot_dir);
        fflush(NULL);
        _exit(rc);
    }
    int st, sent = 0;
    for (;;) {
        /* an interrupt before the wait, or one that cut it short: SIGTERM,
         * SIGKILL at the next */
        if (cli_interrupted() && sent < 2)
            kill(pid, sent++ ? SIGKILL : SIGTERM);
        if (waitpid(pid, &st, 0) == pid)
            break;
        if (errno != EINTR)
            return cli_fail("demo", "waitpid: %s", strerror(errno));
    }
    if (cli_interrupted())
        return 1; /* the caller says it and exits 128+N */
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return cli_fail("demo", "the simulator was killed by signal %d", WTERMSIG(st));
}

static const struct demo_part parts[] = {
    {"mem: simulator report (8 LLM instances, DL and scientific mixes)", demo_sim},
    {"mem: gmuxd time slices (2 batch tasks, 1 latency-class task)", demo_daemon},
    {"net: loopback put/signal demo", demo_net},
    {"net: MoE dispatch/combine, CPU threads, 4 ranks over loopback", demo_moe_run},
};

int cmd_demo(int argc, char **argv)
{
    /* --help anywhere wins, before --plot-dir is looked at */
    bool help = com_cli_help_asked(argc, argv, NULL);
    for (int i = 1; i < argc; i++) {
        if (help) {
            printf("Usage: gmux demo [--plot-dir DIR]\n"
                   "       gmux demo -h | --help | -V | --version\n\nRuns each part of gmux on its "
                   "built-in "
                   "defaults; needs no GPU:\n");
            for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
                printf("  %s\n", parts[k].name);
            printf("A part that fails is marked FAILED and the demo goes on with the next.\n"
                   "SIGINT, SIGTERM or SIGHUP N stops the running part's processes (the\n"
                   "simulator, ranks, daemon), removes its temporary files and ends the demo.\n\n"
                   "  --plot-dir DIR  where the simulator's sweep plot goes\n"
                   "                  (gmux-demo-llm-sweep.png, .dat, .gp); default: the\n"
                   "                  current directory, the plot skipped if it cannot be\n"
                   "                  written there\n\n"
                   "Exit status: 0 when every part ran; 1 when a part failed; 128+N after\n"
                   "SIGINT, SIGTERM or SIGHUP N; 2 for a usage error (--plot-dir not a\n"
                   "writable directory included).\n");
            return 0;
        }
        if (strcmp(argv[i], "--plot-dir") == 0) {
            const char *d = com_cli_option_value(argc, argv, i++);
            if (!d)
                return cli_no_value("demo", "--plot-dir");
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
        return cli_bad_word("demo", argv[i]);
    }
    /* Between parts and in each part (which stops its processes on an
     * interrupt itself), an interrupt ends the demo after the part */
    cli_interrupts_catch(&demo_ints);
    int failed = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && !cli_interrupted(); i++) {
        printf("== %s\n", parts[i].name);
        int rc = parts[i].run();
        if (cli_interrupted())
            break; /* the part's processes are stopped; those after it not run */
        if (rc != 0) {
            printf("   FAILED (exit %d)\n", rc);
            failed = 1;
        }
    }
    cli_interrupts_restore(&demo_ints);
    if (!cli_interrupted())
        return failed;
    fflush(stdout);
    fprintf(stderr, "gmux demo: interrupted by signal %d; stopped before its end\n",
            cli_interrupted());
    return 128 + cli_interrupted();
}

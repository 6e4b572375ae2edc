/*
 * Demo part "net: MoE dispatch/combine": runs the CPU-thread MoE example
 * (examples/moe/moe_cpu) on 4 ranks over loopback under this binary's own
 * `gmux launch`, and prints its time.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "demo_moe.h"

#ifndef GMUX_MOE_CPU_PATH
#define GMUX_MOE_CPU_PATH ""
#endif

int demo_moe_run(void)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) {
        printf("   cannot find the gmux binary: %s\n", strerror(errno));
        return 1;
    }
    self[len] = '\0';
    if (access(GMUX_MOE_CPU_PATH, X_OK) != 0) {
        printf("   moe_cpu not found at '%s' (the demo runs from the build tree)\n",
               GMUX_MOE_CPU_PATH);
        return 1;
    }
    char *argv[] = {self,        "launch", "-n", "4",
                    "--timeout", "120",    "--", (char *)GMUX_MOE_CPU_PATH,
                    "--iters",   "20",     NULL};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fflush(stdout);
    /* an interrupt goes on to the launch, which stops and reaps its ranks */
    struct cli_interrupts ints;
    cli_interrupts_catch(&ints);
    pid_t pid = cli_fork_child(&ints);
    if (pid < 0) {
        cli_interrupts_restore(&ints);
        return 1;
    }
    if (pid == 0) {
        execv(self, argv);
        _exit(127);
    }
    int status = 0, sent = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        if (cli_interrupted() && !sent++)
            kill(pid, cli_interrupted());
    cli_interrupts_restore(&ints);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("   4 ranks over loopback, 20 iterations: %.2f s wall (job start to exit)%s\n", s,
           rc == 0 ? "" : ", FAILED");
    return rc;
}

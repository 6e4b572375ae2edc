/*
 * The gmuxd part of `gmux demo`: a daemon on a private socket and three
 * synthetic tasks (one latency-class) sharing the GPU by time slices, with
 * the daemon's view printed mid-run, as `gmux top` would show it.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "common/clock.h"
#include "daemon/client.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "daemon/server.h"

int demo_daemon(void);

static volatile sig_atomic_t demo_stop;
static void demo_on_term(int sig)
{
    (void)sig;
    demo_stop = 1;
}

static int demo_task(const char *path, const char *name, dmn_class_t cls, int kernels, int idle_ms)
{
    dmn_client_opts_t o = {path, name, cls, 0, 512ull << 20, NULL, NULL, NULL, NULL, NULL, NULL};
    dmn_client_t *c;
    if (dmn_client_open(&o, &c) != GMUX_OK || dmn_client_is_local(c))
        return 1;
    dmn_msg_stats_t st = {0, 512ull << 20, 0, 0, 0, 0, 0};
    for (int k = 0; k < kernels; k++) {
        dmn_client_pending(c, 1, NULL, 0);
        if (dmn_client_wait_turn(c, 10 * COM_NS_PER_S) != GMUX_OK)
            return 1;
        com_clock_sleep_ns(2 * COM_NS_PER_MS); /* the "kernel" */
        st.kernels = (uint64_t)k + 1;
        st.resident = 256ull << 20;
        st.migrated += 8ull << 20;
        dmn_client_report(c, &st);
        if (idle_ms) {
            dmn_client_idle(c);
            com_clock_sleep_ns((uint64_t)idle_ms * COM_NS_PER_MS);
        }
    }
    dmn_client_close(c);
    return 0;
}

/* Removes dir and what the daemon left in it (its socket and lock file). */
static int remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    return rmdir(dir);
}

int demo_daemon(void)
{
    /* from here an interrupt stops the tasks and the daemon and removes dir */
    struct cli_interrupts ints;
    cli_interrupts_catch(&ints);
    /* under $TMPDIR when it leaves room for the socket's name */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) > 60)
        tmp = "/tmp";
    char dir[96], path[128];
    snprintf(dir, sizeof(dir), "%s/gmux-demo-XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        cli_interrupts_restore(&ints);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/gmuxd.sock", dir);
    int p[2], rc = 1;
    if (pipe(p) != 0) {
        rmdir(dir);
        cli_interrupts_restore(&ints);
        return 1;
    }
    fflush(stdout);
    pid_t srv = cli_fork_child(&ints);
    if (srv == 0) {
        close(p[0]);
        signal(SIGTERM, demo_on_term);
        dmn_server_opts_t o = {
            path, DMN_NO_GROUP, 10 * COM_NS_PER_MS, COM_NS_PER_S, NULL, 0, 0, 0, 0, 0, NULL, 0};
        _exit(dmn_server_run(&o, &demo_stop, p[1]) == GMUX_OK ? 0 : 1);
    }
    close(p[1]);
    char b;
    int up = read(p[0], &b, 1) == 1 && !cli_interrupted();
    close(p[0]);
    pid_t kids[3] = {-1, -1, -1};
    dmn_report_t *r = calloc(1, sizeof(*r));
    if (!up || !r)
        goto stop_server;
    const char *names[3] = {"train-a", "train-b", "serve"};
    for (int i = 0; i < 3 && !cli_interrupted(); i++) {
        fflush(stdout);
        kids[i] = cli_fork_child(&ints);
        if (kids[i] == 0) {
            _exit(demo_task(path, names[i], i == 2 ? DMN_CLASS_LATENCY : DMN_CLASS_BATCH,
                            i == 2 ? 15 : 120, i == 2 ? 20 : 0));
        }
    }
    com_clock_sleep_ns(300 * COM_NS_PER_MS);
    if (!cli_interrupted() && dmn_report_fetch(path, r, 3000) == GMUX_OK) {
        printf("   three tasks share the GPU by time slices (quantum 10 ms); mid-run:\n\n");
        dmn_report_table(stdout, path, r, cli_columns());
    }
    rc = 0;
    for (int i = 0; i < 3; i++) {
        int st = 0;
        pid_t got = -1;
        while (kids[i] > 0) {
            if (cli_interrupted()) /* this task and those after it */
                for (int k = i; k < 3; k++)
                    if (kids[k] > 0)
                        kill(kids[k], SIGKILL);
            got = waitpid(kids[i], &st, 0);
            if (got >= 0 || errno != EINTR)
                break;
        }
        if (kids[i] <= 0 || got != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = 1;
    }
    /* the tasks have exited; gmuxd sees their connections close at its next
     * poll, so ask until it has let them all go (2 s at most) */
    uint64_t gone_by = com_deadline_after_ns(2 * COM_NS_PER_S);
    bool fetched = false;
    while (rc == 0 && !cli_interrupted() &&
           (fetched = dmn_report_fetch(path, r, 3000) == GMUX_OK) && r->n_tasks > 0 &&
           !com_deadline_passed(gone_by))
        com_clock_sleep_ns(20 * COM_NS_PER_MS);
    if (rc == 0 && fetched) {
        if (r->n_tasks == 0)
            printf("\n   all tasks done: %llu switches; gmuxd let every task go\n",
                   (unsigned long long)r->switches);
        else
            printf("\n   all tasks done: %llu switches; %u task%s still registered 2 s after "
                   "exiting\n",
                   (unsigned long long)r->switches, r->n_tasks, r->n_tasks == 1 ? "" : "s");
    }
stop_server:
    free(r);
    if (srv > 0) {
        kill(srv, SIGTERM);
        while (waitpid(srv, NULL, 0) < 0 && errno == EINTR)
            kill(srv, SIGKILL); /* a second interrupt: no more waiting */
    }
    if (remove_dir(dir) != 0)
        rc = 1;
    cli_interrupts_restore(&ints);
    return rc;
}

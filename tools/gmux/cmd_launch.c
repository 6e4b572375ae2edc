/*
 * gmux launch: starts the ranks of a job and serves their rendezvous.
 *
 *   gmux launch -n N [--hosts H1,H2,...] [--timeout S] [--grace S] [--bind ADDR] -- CMD [ARGS]
 *
 * Local ranks are forked and exec'd; ranks on other hosts go through ssh.
 * Each rank gets GMUX_RANK, GMUX_SIZE, GMUX_NNODES and GMUX_BOOTSTRAP (the
 * rendezvous server on ADDR, 127.0.0.1 unless --bind says otherwise). When a
 * rank dies, the others are told at once (their operations fail with
 * GMUX_ERR_PEER); those still running after the grace period are killed.
 * The exit status is the first failure's: the first non-zero status of a
 * rank that ended by itself (128+N for a signal N; the worst of those seen
 * in one waitpid round), never that of a rank gmux killed after it. Without
 * one: 124 on timeout, 1 when a rank could not be started, else the worst
 * rank's. A rank that cannot be forked is said, the others are stopped as
 * on SIGTERM, and gmux exits 1.
 * SIGINT, SIGTERM or SIGHUP N to gmux: the ranks get SIGTERM (SIGKILL after
 * the grace period), are reaped, and gmux exits 128+N.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "launch_opts.h"
#include "common/clock.h"
#include "common/parse.h"
#include "net/boot_proto.h"
#include "net/rdv.h"

static int usage(void)
{
    printf("Usage: gmux launch -n N [--hosts H1,H2,...] [--timeout S] [--grace S]\n"
           "                   [--bind ADDR] -- CMD [ARGS...]\n"
           "       gmux launch -h | --help | -V | --version\n\n"
           "Starts N ranks of CMD, 1 to %d (fork/exec here; ssh for the --hosts that\n"
           "are not localhost, round robin, at most %d hosts; the last --hosts counts)\n"
           "with a TCP rendezvous on ADDR (default 127.0.0.1; remote --hosts need one\n"
           "they reach) for gmux_comm_init.\n"
           "A rank that dies (or exits, even 0, without gmux_comm_finalize) makes the\n"
           "others fail; they are killed after --grace seconds (default 10). A rank\n"
           "whose finalize returned GMUX_ERR_PEER (another rank died) ended in order.\n"
           "--timeout S kills the whole job after S seconds (default: no timeout;\n"
           "exit 124); both take seconds from 0.001 to 1e6 (less is refused, not\n"
           "rounded up).\n"
           "SIGINT, SIGTERM or SIGHUP N sends the ranks SIGTERM (SIGKILL\n"
           "after --grace), waits for them and exits 128+N.\n"
           "A rank that ends with a non-zero status is said on stderr; one that gmux\n"
           "itself killed as 'stopped by gmux (signal N) after' the failure, timeout\n"
           "or interrupt that made it stop the job. A job that fails names the ranks\n"
           "that never joined the rendezvous (died or hung before gmux_comm_init).\n\n"
           "Exit status: 128+N after SIGINT, SIGTERM or SIGHUP N. Else the first\n"
           "non-zero status of a rank that ended by itself (128+N for a rank killed by\n"
           "signal N; of ranks seen ending together, the worst); the ranks launch\n"
           "kills after it do not count. Without one: 124 on timeout; 1 when a rank\n"
           "cannot be started (said; the others are stopped as on SIGTERM); else the\n"
           "worst rank's (0, or 137 for ranks killed after an exit 0 without\n"
           "gmux_comm_finalize). 1 when the rendezvous cannot listen on ADDR; 127/126\n"
           "when CMD is not found/not executable; 2 for a usage error (an ADDR that is\n"
           "not a numeric IPv4 address among them).\n",
           LAUNCH_MAX_RANKS, LAUNCH_MAX_HOSTS);
    return 0;
}

static bool is_local(const char *h)
{
    return strcmp(h, "localhost") == 0 || strcmp(h, "127.0.0.1") == 0;
}

static pid_t start_rank(const struct launch_opts *o, int rank, int port, int nnodes,
                        const struct cli_interrupts *ints)
{
    char vrank[32], vsize[32], vboot[96], vnodes[32], vjob[64];
    snprintf(vjob, sizeof(vjob), NET_ENV_JOB "=%dp%d", (int)getpid(), port);
    snprintf(vrank, sizeof(vrank), "GMUX_RANK=%d", rank);
    snprintf(vsize, sizeof(vsize), "GMUX_SIZE=%d", o->n);
    snprintf(vboot, sizeof(vboot), "GMUX_BOOTSTRAP=%s:%d", o->bind, port);
    snprintf(vnodes, sizeof(vnodes), "GMUX_NNODES=%d", nnodes);
    const char *host = o->nhosts ? o->hosts[rank % o->nhosts] : "localhost";
    fflush(NULL);
    /* a SIGTERM of gmux's before the exec is not lost (the rank lived on
     * until the SIGKILL after --grace) */
    pid_t pid = cli_fork_child(ints);
    if (pid != 0)
        return pid;
    if (is_local(host)) {
        putenv(vrank);
        putenv(vsize);
        putenv(vboot);
        putenv(vnodes);
        putenv(vjob);
        execvp(o->cmd[0], o->cmd);
        fprintf(stderr, "gmux launch: cannot run '%s': %s\n", o->cmd[0], strerror(errno));
        _exit(127);
    }
    int nc = 0;
    while (o->cmd[nc])
        nc++;
    char **args = calloc((size_t)nc + 8, sizeof(char *));
    if (!args)
        _exit(127);
    int k = 0;
    args[k++] = "ssh";
    args[k++] = (char *)host;
    args[k++] = "env";
    args[k++] = vrank;
    args[k++] = vsize;
    args[k++] = vboot;
    args[k++] = vnodes;
    args[k++] = vjob;
    for (int j = 0; j < nc; j++)
        args[k++] = o->cmd[j];
    args[k] = NULL;
    execvp("ssh", args);
    fprintf(stderr, "gmux launch: cannot run ssh: %s\n", strerror(errno));
    _exit(127);
}

/* Removes the shm regions and guard pages that rank (every rank: -1) of
 * this job left behind: a rank unlinks its own at the end of its join, so
 * only one that died before that leaves any; only names of this job,
 * never anyone else's. Called for a rank as soon as it is known gone
 * (on_rank_gone), before the others hear of it: the ranks still running
 * mapped its files already if they can still need them (comm.c,
 * unlink_shm_names), and a long job no longer keeps them until the
 * launcher exits. */
static void remove_shm_leftovers(int port, int rank)
{
    char prefix[64];
    int n = rank < 0
                ? snprintf(prefix, sizeof(prefix), NET_SHM_PREFIX "%dp%d-", (int)getpid(), port)
                : snprintf(prefix, sizeof(prefix), NET_SHM_PREFIX "%dp%d-%d", (int)getpid(), port,
                           rank);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char next = e->d_name[n]; /* rank 1's names are not rank 12's */
        if (strncmp(e->d_name, prefix, (size_t)n) == 0 && (rank < 0 || next < '0' || next > '9'))
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* The rendezvous announces rank gone (net_rdv_on_gone); arg: its port. */
static void on_rank_gone(void *arg, int rank)
{
    remove_shm_leftovers(*(const int *)arg, rank);
}

static volatile sig_atomic_t child_exited;

static void on_child(int sig)
{
    (void)sig;
    child_exited = 1;
}

static int exit_code(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}

/* Why gmux sent a rank a signal, to say it when the rank is reaped. */
enum launch_why { WHY_NONE, WHY_FAILURE, WHY_INTERRUPT, WHY_TIMEOUT, WHY_START };

/* The last signal gmux sent a rank, and why (sig 0: none). */
struct launch_stop {
    int sig;
    enum launch_why why;
};

static void stop_rank(pid_t pid, struct launch_stop *s, int sig, enum launch_why why)
{
    kill(pid, sig);
    s->sig = sig;
    s->why = why;
}

/* "rank K failed", "the interrupt"...: why gmux stopped a rank. bad: the
 * failed rank (WHY_FAILURE) or the one that could not be started (WHY_START). */
static const char *why_text(enum launch_why why, int bad, char *buf, size_t len)
{
    switch (why) {
    case WHY_FAILURE:
        snprintf(buf, len, "rank %d failed", bad);
        return buf;
    case WHY_START:
        snprintf(buf, len, "rank %d could not be started", bad);
        return buf;
    case WHY_INTERRUPT:
        return "the interrupt";
    case WHY_TIMEOUT:
        return "the timeout";
    default:
        return "a failure";
    }
}

/* Says how a rank that ended with a non-zero status ended: stopped by
 * gmux when it died of the signal gmux last sent it, else as it was (a
 * signal from elsewhere, or an exit of its own). */
static void say_rank_end(int r, int ws, const struct launch_stop *s, int bad)
{
    char buf[64];
    if (WIFSIGNALED(ws) && s->sig && WTERMSIG(ws) == s->sig)
        fprintf(stderr, "gmux launch: rank %d stopped by gmux (signal %d) after %s\n", r, s->sig,
                why_text(s->why, bad, buf, sizeof(buf)));
    else if (WIFSIGNALED(ws))
        fprintf(stderr, "gmux launch: rank %d killed by signal %d\n", r, WTERMSIG(ws));
    else if (s->sig)
        fprintf(stderr,
                "gmux launch: rank %d exited with status %d (gmux had sent it signal %d "
                "after %s)\n",
                r, exit_code(ws), s->sig, why_text(s->why, bad, buf, sizeof(buf)));
    else
        fprintf(stderr, "gmux launch: rank %d exited with status %d\n", r, exit_code(ws));
}

/* Names the ranks that never joined the rendezvous, in runs ("ranks 1-3,
 * 7"), after a job that failed: the one that died or hung before its
 * gmux_comm_init is the one to look at, not those that failed after. */
static void say_never_joined(const net_rdv_t *rdv, int n)
{
    int missing = 0;
    for (int r = 0; r < n; r++)
        missing += !net_rdv_joined(rdv, r);
    if (missing == 0)
        return;
    fprintf(stderr, "gmux launch: rank%s ", missing > 1 ? "s" : "");
    const char *sep = "";
    for (int r = 0; r < n; r++) {
        if (net_rdv_joined(rdv, r))
            continue;
        int end = r;
        while (end + 1 < n && !net_rdv_joined(rdv, end + 1))
            end++;
        if (end > r)
            fprintf(stderr, "%s%d-%d", sep, r, end);
        else
            fprintf(stderr, "%s%d", sep, r);
        sep = ", ";
        r = end;
    }
    fprintf(stderr, " never joined the rendezvous (gmux_comm_init)\n");
}

static int launch_job(const struct launch_opts *opts)
{
    struct launch_opts o = *opts;
    int rc;
    int nnodes = 1;
    for (int h = 0; h < o.nhosts; h++)
        if (!is_local(o.hosts[h]))
            nnodes = o.nhosts;
    if (nnodes > 1 && strcmp(o.bind, "127.0.0.1") == 0)
        return cli_usage_error("launch", "remote hosts need --bind ADDR reachable from them");
    bool any_local = o.nhosts == 0;
    for (int h = 0; h < o.nhosts; h++)
        any_local |= is_local(o.hosts[h]) != 0;
    /* a program that cannot run here is said once, before any rank starts */
    if (any_local && (rc = cli_check_command("launch", o.cmd[0])) != 0)
        return rc;
    net_rdv_t *rdv;
    char why[256];
    gmux_status_t st = net_rdv_create(o.bind, o.n, &rdv, why, sizeof(why));
    if (st != GMUX_OK)
        return cli_fail("launch", "rendezvous: %s", why);
    int port = net_rdv_port(rdv);
    net_rdv_on_gone(rdv, on_rank_gone, &port);
    pid_t *pids = calloc((size_t)o.n, sizeof(pid_t));
    int *codes = calloc((size_t)o.n, sizeof(int));
    struct launch_stop *stops = calloc((size_t)o.n, sizeof(*stops));
    if (!pids || !codes || !stops) {
        free(pids);
        free(codes);
        free(stops);
        net_rdv_destroy(rdv);
        return cli_fail("launch", "out of memory");
    }
    /* SIGINT, SIGTERM, SIGHUP: the ranks are stopped and reaped and this
     * job's shm removed before gmux exits; caught before the first fork so
     * that none arriving meanwhile is lost (exec resets them in the ranks) */
    struct cli_interrupts ints;
    cli_interrupts_catch(&ints);
    int stopped_by = 0;
    int bad_rank = -1; /* the first that failed or could not be started */
    bool start_failed = false;
    for (int r = 0; r < o.n && !cli_interrupted(); r++) {
        pids[r] = start_rank(&o, r, net_rdv_port(rdv), nnodes, &ints);
        if (pids[r] < 0) {
            fprintf(stderr, "gmux launch: cannot start rank %d: %s; stopping the ranks started\n",
                    r, strerror(errno));
            pids[r] = 0;
            start_failed = true;
            bad_rank = r;
            break;
        }
    }
    int running = 0;
    for (int r = 0; r < o.n; r++)
        running += pids[r] > 0;
    /* A rank's exit ends the rendezvous's poll at once (EINTR) instead of at
     * its next 20 ms tick. SIGCHLD is blocked outside that poll, so it never
     * cuts short net_rdv_drain's; set before the ranks started (their mask
     * survives exec), it is set only now, and the first round polls without
     * waiting in case one exited already. */
    struct sigaction sa = {.sa_handler = on_child}, old_sa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, &old_sa);
    sigset_t chld, prev;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &prev);
    child_exited = 1;
    uint64_t deadline =
        o.timeout_s > 0 ? com_deadline_after_ns((uint64_t)(o.timeout_s * 1e9)) : UINT64_MAX;
    uint64_t kill_at = UINT64_MAX;
    if (start_failed) { /* the ranks started would wait for the missing one */
        for (int r = 0; r < o.n; r++)
            if (pids[r] > 0)
                stop_rank(pids[r], &stops[r], SIGTERM, WHY_START);
        kill_at = com_deadline_after_ns((uint64_t)(o.grace_s * 1e9));
    }
    /* the first failure's status: set once, by a round before gmux killed
     * any rank (a rank it kills after a failure never counts); worst: of
     * all ranks, for a job where none failed with a status of its own */
    int first = 0, worst = 0;
    bool killed_any = start_failed;
    bool timed_out = false;
    while (running > 0) {
        sigprocmask(SIG_SETMASK, &prev, NULL); /* one pending is taken here */
        int tick = child_exited ? 0 : 20;
        child_exited = 0;
        net_rdv_step(rdv, tick);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        int ws, round_worst = 0; /* the worst status of this round */
        pid_t pid;
        while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
            for (int r = 0; r < o.n; r++) {
                if (pids[r] != pid)
                    continue;
                pids[r] = 0;
                running--;
                codes[r] = exit_code(ws);
                net_rdv_drain(rdv, r); /* a BYE not read yet is not a death */
                bool failed = codes[r] != 0 || !net_rdv_said_bye(rdv, r);
                if (codes[r] > round_worst)
                    round_worst = codes[r];
                if (codes[r] > worst)
                    worst = codes[r];
                if (codes[r] != 0)
                    say_rank_end(r, ws, &stops[r], bad_rank);
                else if (failed && o.n > 1) /* else the kill of the others would be all
                                             * that is said (one rank: there are none) */
                    fprintf(stderr,
                            "gmux launch: rank %d exited with status 0 without "
                            "gmux_comm_finalize (or after one that failed on its "
                            "own): a death to the others (those still running are stopped "
                            "after --grace)\n",
                            r);
                net_rdv_rank_exited(rdv, r, failed);
                /* a rank gmux stopped is no new failure: once the others
                 * were killed (kill_at spent), it named the rank reaped
                 * first as the one the later ones were stopped after */
                if (failed && kill_at == UINT64_MAX && !stops[r].sig) {
                    kill_at = com_deadline_after_ns((uint64_t)(o.grace_s * 1e9));
                    bad_rank = r;
                }
            }
        }
        if (first == 0 && !killed_any) /* exits seen in one round have no order */
            first = round_worst;
        if (running > 0 && !stopped_by && (stopped_by = cli_interrupted()) != 0) {
            fprintf(stderr, "gmux launch: interrupted by signal %d; stopping the ranks\n",
                    stopped_by);
            for (int r = 0; r < o.n; r++)
                if (pids[r] > 0)
                    stop_rank(pids[r], &stops[r], SIGTERM, WHY_INTERRUPT);
            killed_any = true;
            if (kill_at == UINT64_MAX)
                kill_at = com_deadline_after_ns((uint64_t)(o.grace_s * 1e9));
        }
        bool over = com_deadline_passed(deadline);
        if (running > 0 && (over || com_deadline_passed(kill_at))) {
            if (over && !timed_out)
                fprintf(stderr, "gmux launch: timed out after %g s; killing the job\n",
                        o.timeout_s);
            else if (!over)
                fprintf(stderr, "gmux launch: killing the ranks left after %s\n",
                        stopped_by     ? "the interrupt"
                        : start_failed ? "the failed start"
                                       : "a failure");
            timed_out |= over;
            enum launch_why why = over           ? WHY_TIMEOUT
                                  : stopped_by   ? WHY_INTERRUPT
                                  : start_failed ? WHY_START
                                                 : WHY_FAILURE;
            for (int r = 0; r < o.n; r++)
                if (pids[r] > 0)
                    stop_rank(pids[r], &stops[r], SIGKILL, why);
            killed_any = true;
            kill_at = deadline = UINT64_MAX;
        }
    }
    sigprocmask(SIG_SETMASK, &prev, NULL);
    sigaction(SIGCHLD, &old_sa, NULL);
    cli_interrupts_restore(&ints);
    if (stopped_by || cli_interrupted())
        rc = 128 + cli_interrupted(); /* the first signal, as a shell reports it */
    else if (first > 0)
        rc = first;
    else if (timed_out)
        rc = 124; /* the ranks' own statuses are the kills of the timeout */
    else
        rc = start_failed ? 1 : worst; /* worst: 0, or the kill of the ranks left
                                        * after an exit 0 without BYE */
    if (rc != 0)
        say_never_joined(rdv, o.n);
    remove_shm_leftovers(net_rdv_port(rdv), -1);
    net_rdv_destroy(rdv);
    free(pids);
    free(codes);
    free(stops);
    return rc;
}

int cmd_launch(int argc, char **argv)
{
    struct launch_opts o;
    int rc = launch_opts_read(argc, argv, &o);
    if (rc == 0)
        rc = launch_job(&o);
    else if (rc < 0)
        rc = usage();
    launch_opts_free(&o);
    return rc; /* for a bad option, the status of the error launch_opts_read said */
}

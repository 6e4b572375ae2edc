/*
 * Churn soak of gmuxd with real processes: one daemon on a private socket,
 * N client processes that open, announce random working sets, wait for the
 * turn, hold it briefly, go idle, and now and then close and reopen; a
 * supervisor (this process) kills a random client with SIGKILL every so
 * often and starts a replacement. It checks, all through the run and at its
 * end:
 *   - the daemon is alive and answers STATUS;
 *   - every task the daemon lists belongs to a live client, and a killed
 *     client's task is reclaimed: a STATUS no longer lists it (asked until
 *     it does; --reclaim-ms only ends a wait that would hang);
 *   - no client starves, judged by counts, not time: while a client waits
 *     for its turn (from its PENDING in the socket to its grant, by the
 *     daemon's grant numbers), no other client is granted more than 3
 *     turns plus one per registration it made meanwhile (round robin: each
 *     task at most once after the daemon read the PENDING, one granted in
 *     the pass that read it, one granted before and counted after);
 *   - no client ever ran ungated (local mode) while the daemon was up;
 *   - once the churn stops, exactly the N live clients are registered, and
 *     none once they exit;
 *   - the daemon's descriptors (/proc/PID/fd) and RSS do not grow: the
 *     quiet count at the end equals the one at the start (slack 2), and the
 *     peak of the last third of the run is within bounds of the first's.
 * The daemon's grace is ten minutes: no turn is taken from a client that a
 * loaded host keeps from answering REVOKE (a taken turn lets others go twice
 * while its client, which knows nothing of it, counts itself as waiting).
 * It prints one JSON line of figures (bench/run.sh collects it; `make check`
 * runs a 3 s version, test_daemon_soak); the times in it are information,
 * never judged. To tell the daemon's delays from the host's, it splits each reclaim into
 * kill-to-reaped (the victim's exit, which closes its socket) and reaped-to-gone, counts the waits
 * unanswered after 2 s by the state a STATUS gives the task right after, and says on stderr, with
 * CLOCK_MONOTONIC times, every reclaim over 100 ms, grant after 1 s and
 * unanswered wait.
 *
 * Usage: daemon_soak [--clients N] [--seconds T] [--kill-ms M] [--reclaim-ms B]
 *                    [--placement NAME] [--seed S]
 * Exit: 0 every invariant held, 1 one broke (said on stderr), 2 usage.
 * Not thread-safe (one supervisor, waitpid on its own children).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/client.h"
#include "drig.h"
#include "soak.h"
#include "trand.h"

#define SOAK_MIB (1ull << 20)
/* How long a wait for what must happen (an answer, a reclaim, the clients'
 * registrations and exits) lasts before it is called a hang: a guard, not a
 * figure the soak judges (those are printed). */
#define SOAK_GUARD_S 30

typedef struct soak_opts {
    int clients;
    double seconds;
    int kill_ms, reclaim_ms;
    const char *placement;
    uint64_t seed;
} soak_opts_t;

typedef struct soak_sample {
    uint64_t t_ns;
    long fds, rss_kib;
} soak_sample_t;

soak_shared_t *sh;
static const char *soak_sock; /* the daemon's socket */

static void sleep_us(uint64_t us)
{
    com_clock_sleep_ns(us * COM_NS_PER_US);
}

/* After a wait unanswered: what the daemon says of this task (and of the
 * holder) now, counted by state and said on stderr; returns the state
 * (DMN_STATE_*, SOAK_UNLISTED: not listed or no answer). */
static uint32_t classify_timeout(dmn_client_t *c, soak_slot_t *s, int i)
{
    dmn_report_t *rep = malloc(sizeof(*rep));
    uint32_t id = dmn_client_task_id(c), state = SOAK_UNLISTED, holder = 0, hstate = 0;
    uint64_t hrun = 0;
    if (rep && dmn_report_fetch(soak_sock, rep, 2000) == GMUX_OK)
        for (uint32_t k = 0; k < rep->n_tasks; k++) {
            const dmn_status_task_t *t = &rep->tasks[k];
            if (t->id == id)
                state = t->state;
            else if (t->state == DMN_STATE_RUNNING || t->state == DMN_STATE_REVOKED ||
                     t->state == DMN_STATE_HELD)
                holder = t->pid, hstate = t->state, hrun = t->run_ns;
        }
    free(rep);
    BUMP(&s->timeout_as[state]);
    if (state == DMN_STATE_PENDING && holder)
        BUMP(&s->timeout_held);
    fprintf(stderr,
            "soak: client %d (pid %d, task %u) unanswered after 2 s at %.3f s: daemon says %s; "
            "holder pid %u %s (held %.1f ms)\n",
            i, (int)getpid(), id, (double)com_clock_ns() / 1e9,
            state < SOAK_UNLISTED ? dmn_state_name(state) : "not listed", holder,
            holder ? dmn_state_name(hstate) : "none", (double)hrun / 1e6);
    return state;
}

/* ---- the client processes ---- */

static dmn_client_t *client_open(int i, uint64_t *rs)
{
    char name[32];
    snprintf(name, sizeof(name), "soak-%d", i);
    dmn_client_opts_t o = {0};
    o.path = soak_sock;
    o.name = name;
    o.cls = DMN_CLASS_BATCH;
    o.priority = 0; /* one level: round robin, so a starved client is a defect */
    o.budget = (16 + trand_next(rs) % 241) * SOAK_MIB;
    dmn_client_t *c = NULL;
    if (dmn_client_open(&o, &c) != GMUX_OK) {
        BUMP(&sh->slot[i].open_errors);
        return NULL;
    }
    BUMP(&sh->slot[i].opens);
    return c;
}

/* One kernel boundary: random working set, wait (bounded), hold, go idle. */
static void client_turn(dmn_client_t *c, soak_slot_t *s, int i, uint64_t *rs, dmn_msg_stats_t *st,
                        int n_clients)
{
    dmn_range_t ranges[4];
    uint32_t n = 1 + (uint32_t)(trand_next(rs) % 4);
    for (uint32_t k = 0; k < n; k++) {
        ranges[k].base = 0x100000000ull * (uint64_t)(i + 1) + (trand_next(rs) % 64) * 64 * SOAK_MIB;
        ranges[k].len = (1 + trand_next(rs) % 64) * SOAK_MIB;
    }
    dmn_client_pending(c, 1 + (uint32_t)(trand_next(rs) % 4), ranges, n);
    soak_seen_t seen; /* once the PENDING is in the socket */
    soak_seen_take(&seen, n_clients);
    uint64_t asked = com_clock_ns();
    if (dmn_client_wait_turn(c, 2 * COM_NS_PER_S) == GMUX_OK) {
        uint64_t now = com_clock_ns(), grant = dmn_client_grant_seq(c);
        if (grant) /* else not a grant: local, or the connection ended */
            soak_seen_judge(&seen, n_clients, s, i, grant);
        if (dmn_client_is_local(c)) {
            BUMP(&s->local_turns);
        } else {
            uint64_t k = LOAD(&s->turns);
            STORE(&s->grant[k % SOAK_RING], grant);
            BUMP(&s->turns);
            if (now - asked > LOAD(&s->wait_max_ns))
                STORE(&s->wait_max_ns, now - asked);
            if (now - asked > COM_NS_PER_S) /* to set beside the daemon's log */
                fprintf(stderr, "soak: client %d (pid %d) granted after %.1f ms at %.3f s\n", i,
                        (int)getpid(), (double)(now - asked) / 1e6, (double)now / 1e9);
        }
        sleep_us(trand_next(rs) % 2000);
        st->kernels++;
        st->resident = ranges[0].len;
        st->total = st->resident * n;
        dmn_client_report(c, st);
    } else {
        BUMP(&s->timeouts);
        /* still pending: the daemon granted it nothing since it read the
         * PENDING (granted, the end of the wait is not known: not judged) */
        if (classify_timeout(c, s, i) == DMN_STATE_PENDING)
            soak_seen_judge(&seen, n_clients, s, i, UINT64_MAX);
    }
    dmn_client_idle(c);
    sleep_us(trand_next(rs) % 1000);
}

static int client_main(int i, int n_clients, uint64_t seed, uint64_t hard_deadline)
{
    soak_slot_t *s = &sh->slot[i];
    uint64_t rs = seed ? seed : 1;
    dmn_msg_stats_t st = {0, 0, 0, 0, 0, 768 * SOAK_MIB, 0};
    dmn_client_t *c = NULL;
    while (!LOAD(&sh->stop) && !com_deadline_passed(hard_deadline)) {
        if (!c && !(c = client_open(i, &rs))) {
            sleep_us(10000);
            continue;
        }
        int rounds = 1 + (int)(trand_next(&rs) % 8);
        for (int k = 0; k < rounds && !LOAD(&sh->stop); k++)
            client_turn(c, s, i, &rs, &st, n_clients);
        if (trand_next(&rs) % 3 == 0) {
            dmn_client_close(c);
            c = NULL;
        }
    }
    while (!c && !com_deadline_passed(hard_deadline))
        if (!(c = client_open(i, &rs)))
            sleep_us(10000);
    if (!c)
        return 3;
    STORE(&s->parked, 1);
    while (!LOAD(&sh->quit) && !com_deadline_passed(hard_deadline)) {
        dmn_client_poll(c);
        sleep_us(5000);
    }
    dmn_client_close(c);
    return LOAD(&sh->quit) ? 0 : 3;
}

static pid_t spawn_client(int i, int n_clients, uint64_t seed, uint64_t hard_deadline)
{
    soak_slot_t *s = &sh->slot[i];
    memset(s, 0, sizeof(*s));
    STORE(&s->born_ns, com_clock_ns());
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no client outlives a crashed supervisor */
        _exit(client_main(i, n_clients, seed, hard_deadline));
    }
    STORE(&s->pid, pid > 0 ? pid : 0);
    return pid;
}

/* ---- the daemon's resources ---- */

static long proc_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static long proc_rss_kib(pid_t pid)
{
    char path[64], line[128];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* ---- the supervisor's checks ---- */

static int find_slot(const soak_opts_t *o, uint32_t pid)
{
    for (int i = 0; i < o->clients; i++)
        if ((uint32_t)LOAD(&sh->slot[i].pid) == pid)
            return i;
    return -1;
}

static int lists_pid(const dmn_report_t *rep, uint32_t pid)
{
    for (uint32_t k = 0; k < rep->n_tasks; k++)
        if (rep->tasks[k].pid == pid)
            return 1;
    return 0;
}

static int check_report(const soak_opts_t *o, const dmn_report_t *rep)
{
    for (uint32_t k = 0; k < rep->n_tasks; k++)
        if (find_slot(o, rep->tasks[k].pid) < 0) {
            fprintf(stderr, "soak: the daemon lists task %u of pid %u, no live client\n",
                    rep->tasks[k].id, rep->tasks[k].pid);
            return -1;
        }
    for (int i = 0; i < o->clients; i++) {
        soak_slot_t *s = &sh->slot[i];
        if (LOAD(&s->starved) > 0) {
            fprintf(stderr, "soak: client %d (pid %d) was passed over while it waited\n", i,
                    (int)LOAD(&s->pid));
            return -1;
        }
        if (LOAD(&s->local_turns) > 0) {
            fprintf(stderr, "soak: client %d ran ungated (local mode) with the daemon up\n", i);
            return -1;
        }
        if (LOAD(&s->open_errors) > 0) {
            fprintf(stderr, "soak: client %d could not register with the daemon up\n", i);
            return -1;
        }
    }
    return 0;
}

typedef struct soak_totals {
    uint64_t turns, timeouts, opens, open_errors, kills, wait_max_ns, overtaken_max, starved;
    uint64_t timeout_as[SOAK_UNLISTED + 1], timeout_held;
    /* a reclaim's two parts: kill to reaped (the victim's exit, which closes
     * its socket), reaped to the STATUS without it */
    double reclaim_max_ms, reclaim_sum_ms, reap_max_ms, after_reap_max_ms;
} soak_totals_t;

static void add_slot(soak_totals_t *t, const soak_slot_t *s)
{
    t->turns += LOAD(&s->turns);
    t->timeouts += LOAD(&s->timeouts);
    t->opens += LOAD(&s->opens);
    t->open_errors += LOAD(&s->open_errors);
    if (LOAD(&s->wait_max_ns) > t->wait_max_ns)
        t->wait_max_ns = LOAD(&s->wait_max_ns);
    if (LOAD(&s->overtaken_max) > t->overtaken_max)
        t->overtaken_max = LOAD(&s->overtaken_max);
    t->starved += LOAD(&s->starved);
    for (int k = 0; k <= SOAK_UNLISTED; k++)
        t->timeout_as[k] += LOAD(&s->timeout_as[k]);
    t->timeout_held += LOAD(&s->timeout_held);
}

/* SIGKILLs client i, asks STATUS until the daemon no longer lists its task
 * (reclaim_ms only ends a wait that would hang: the time is said, not
 * judged), starts a replacement. */
static int kill_one(const soak_opts_t *o, int i, soak_totals_t *t, uint64_t *rs,
                    uint64_t hard_deadline)
{
    soak_slot_t *s = &sh->slot[i];
    pid_t victim = (pid_t)LOAD(&s->pid);
    uint64_t t0 = com_clock_ns();
    kill(victim, SIGKILL);
    while (waitpid(victim, NULL, 0) < 0 && errno == EINTR)
        ;
    uint64_t reaped = com_clock_ns();
    STORE(&s->pid, 0);
    add_slot(t, s);
    t->kills++;
    dmn_report_t *rep = malloc(sizeof(*rep));
    int gone = 0;
    uint64_t bound = com_deadline_after_ns((uint64_t)o->reclaim_ms * COM_NS_PER_MS);
    while (!gone && !com_deadline_passed(bound)) {
        if (dmn_report_fetch(soak_sock, rep, 2000) == GMUX_OK)
            gone = !lists_pid(rep, (uint32_t)victim);
        if (!gone)
            sleep_us(2000);
    }
    free(rep);
    uint64_t t2 = com_clock_ns();
    double ms = (double)(t2 - t0) / 1e6, reap_ms = (double)(reaped - t0) / 1e6;
    if (ms > 100.0) /* the times, to set beside the daemon's log (GMUX_LOG=daemon=info) */
        fprintf(stderr, "soak: pid %d killed at %.3f s: reaped %.1f ms after, gone %.1f ms after\n",
                (int)victim, (double)t0 / 1e9, reap_ms, ms);
    if (reap_ms > t->reap_max_ms)
        t->reap_max_ms = reap_ms;
    if (ms - reap_ms > t->after_reap_max_ms)
        t->after_reap_max_ms = ms - reap_ms;
    if (!gone) {
        fprintf(stderr, "soak: pid %d killed, its task never reclaimed (asked for %d ms)\n",
                (int)victim, o->reclaim_ms);
        return -1;
    }
    t->reclaim_sum_ms += ms;
    if (ms > t->reclaim_max_ms)
        t->reclaim_max_ms = ms;
    return spawn_client(i, o->clients, trand_next(rs), hard_deadline) > 0 ? 0 : -1;
}

static int all_parked(const dmn_report_t *rep, void *arg)
{
    const soak_opts_t *o = arg;
    for (int i = 0; i < o->clients; i++)
        if (!LOAD(&sh->slot[i].parked))
            return 0;
    if ((int)rep->n_tasks != o->clients)
        return 0;
    for (int i = 0; i < o->clients; i++)
        if (!lists_pid(rep, (uint32_t)LOAD(&sh->slot[i].pid)))
            return 0;
    return 1;
}

static int parse(int argc, char **argv, soak_opts_t *o)
{
    *o = (soak_opts_t){8, 10.0, 500, SOAK_GUARD_S * 1000, "chunk", 0};
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return -1;
        if (strcmp(a, "--clients") == 0)
            o->clients = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            o->seconds = atof(v);
        else if (strcmp(a, "--kill-ms") == 0)
            o->kill_ms = atoi(v);
        else if (strcmp(a, "--reclaim-ms") == 0)
            o->reclaim_ms = atoi(v);
        else if (strcmp(a, "--placement") == 0)
            o->placement = v;
        else if (strcmp(a, "--seed") == 0)
            o->seed = strtoull(v, NULL, 0);
        else
            return -1;
    }
    if (o->clients < 1 || o->clients > SOAK_MAX_CLIENTS || o->seconds <= 0 || o->kill_ms < 1 ||
        o->reclaim_ms < 1)
        return -1;
    return 0;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif
#ifndef SOAK_SANITIZED
#define SOAK_SANITIZED 0
#endif

static void take_sample(pid_t d, soak_sample_t *smp, int cap, int *n)
{
    if (*n < cap)
        smp[(*n)++] = (soak_sample_t){com_clock_ns(), proc_fds(d), proc_rss_kib(d)};
}

/* The peaks of the samples taken in [from, to). */
static void peaks(const soak_sample_t *smp, int n, uint64_t from, uint64_t to, long *fds, long *rss)
{
    *fds = *rss = -1;
    for (int k = 0; k < n; k++)
        if (smp[k].t_ns >= from && smp[k].t_ns < to) {
            *fds = smp[k].fds > *fds ? smp[k].fds : *fds;
            *rss = smp[k].rss_kib > *rss ? smp[k].rss_kib : *rss;
        }
}

/* The churn: checks every 100 ms, a kill every kill_ms on average. */
static int churn(const soak_opts_t *o, pid_t d, dmn_report_t *rep, soak_totals_t *t,
                 soak_sample_t *smp, int cap, int *n, uint64_t *rs, uint64_t hard_deadline)
{
    uint64_t end = com_deadline_after_ns((uint64_t)(o->seconds * 1e9));
    uint64_t next_kill = com_clock_ns() + (uint64_t)o->kill_ms * COM_NS_PER_MS / 2 +
                         trand_next(rs) % ((uint64_t)o->kill_ms * COM_NS_PER_MS);
    while (!com_deadline_passed(end)) {
        if (waitpid(d, NULL, WNOHANG) != 0) {
            fprintf(stderr, "soak: gmuxd (pid %d) died\n", (int)d);
            drig_current->daemon = -1;
            return -1;
        }
        if (dmn_report_fetch(soak_sock, rep, SOAK_GUARD_S * 1000) != GMUX_OK) {
            fprintf(stderr, "soak: gmuxd did not answer STATUS (asked for %d s)\n", SOAK_GUARD_S);
            return -1;
        }
        if (check_report(o, rep) != 0)
            return -1;
        take_sample(d, smp, cap, n);
        if (com_clock_ns() >= next_kill) {
            if (kill_one(o, (int)(trand_next(rs) % (uint64_t)o->clients), t, rs, hard_deadline))
                return -1;
            next_kill = com_clock_ns() + (uint64_t)o->kill_ms * COM_NS_PER_MS / 2 +
                        trand_next(rs) % ((uint64_t)o->kill_ms * COM_NS_PER_MS);
        }
        sleep_us(100000);
    }
    return 0;
}

/* Stops the churn and the clients: exactly the live ones registered, then none. */
static int wind_down(const soak_opts_t *o, pid_t d, dmn_report_t *rep, soak_totals_t *t,
                     long *fd_end, long *rss_end)
{
    STORE(&sh->stop, 1);
    if (!drig_until(drig_current, all_parked, (void *)o, SOAK_GUARD_S, rep)) {
        fprintf(stderr, "soak: churn stopped, yet the daemon lists %u tasks for %d clients\n",
                rep->n_tasks, o->clients);
        return -1;
    }
    sleep_us(50000); /* the daemon closes our last STATUS connection */
    *fd_end = proc_fds(d);
    *rss_end = proc_rss_kib(d);
    STORE(&sh->quit, 1);
    int rc = 0;
    for (int i = 0; i < o->clients; i++) {
        pid_t pid = (pid_t)LOAD(&sh->slot[i].pid);
        int st = drig_wait(pid, SOAK_GUARD_S);
        STORE(&sh->slot[i].pid, 0);
        add_slot(t, &sh->slot[i]);
        if (st != 0) {
            fprintf(stderr, "soak: client %d (pid %d) ended with %d\n", i, (int)pid, st);
            rc = -1;
        }
    }
    int none = 0;
    if (!drig_until(drig_current, drig_n_tasks_is, &none, SOAK_GUARD_S, rep)) {
        fprintf(stderr, "soak: every client gone, the daemon still lists %u\n", rep->n_tasks);
        rc = -1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    soak_opts_t o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr,
                "usage: %s [--clients N<=%d] [--seconds T] [--kill-ms M] "
                "[--reclaim-ms B] [--placement NAME] [--seed S]\n",
                argv[0], SOAK_MAX_CLIENTS);
        return 2;
    }
    uint64_t rs = o.seed ? o.seed : com_clock_ns() ^ (uint64_t)getpid() << 32;
    uint64_t seed = rs;
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    int cap = (int)(o.seconds * 10) + 64;
    soak_sample_t *smp = calloc((size_t)cap, sizeof(*smp));
    dmn_report_t *rep = malloc(sizeof(*rep));
    drig_t r;
    drig_init(&r);
    soak_sock = r.sock;
    soak_totals_t t = {0};
    int n = 0, rc = -1, want = o.clients;
    long fd_start = -1, rss_start = -1, fd_end = -1, rss_end = -1;
    uint64_t hard = com_deadline_after_ns((uint64_t)((o.seconds + 60) * 1e9));
    setenv("GMUX_DAEMON_GRACE_MS", "600000", 1); /* see the header */
    pid_t d = drig_start_daemon(&r, 20, o.placement);
    unsetenv("GMUX_DAEMON_GRACE_MS");
    if (d < 0) {
        fprintf(stderr, "soak: gmuxd did not start\n");
        goto out;
    }
    for (int i = 0; i < o.clients; i++)
        if (spawn_client(i, o.clients, trand_next(&rs), hard) <= 0)
            goto out;
    if (!drig_until(&r, drig_n_tasks_is, &want, SOAK_GUARD_S, rep)) {
        fprintf(stderr, "soak: %u of %d clients registered (asked for %d s)\n", rep->n_tasks, want,
                SOAK_GUARD_S);
        goto out;
    }
    sleep_us(50000);
    fd_start = proc_fds(d);
    rss_start = proc_rss_kib(d);
    uint64_t t0 = com_clock_ns();
    if (churn(&o, d, rep, &t, smp, cap, &n, &rs, hard) != 0)
        goto out;
    uint64_t t1 = com_clock_ns();
    if (wind_down(&o, d, rep, &t, &fd_end, &rss_end) != 0)
        goto out;
    uint64_t switches = rep->switches, reclaimed = rep->reclaimed;
    kill(d, SIGTERM);
    int dst = drig_wait(d, SOAK_GUARD_S);
    r.daemon = -1;
    long fd1, rss1, fd3, rss3;
    uint64_t third = (t1 - t0) / 3;
    peaks(smp, n, t0, t0 + third, &fd1, &rss1);
    peaks(smp, n, t1 - third, t1 + 1, &fd3, &rss3);
    rc = 0;
    if (dst != 0) {
        fprintf(stderr, "soak: gmuxd ended with %d on SIGTERM (want 0)\n", dst);
        rc = -1;
    }
    if (t.starved > 0) { /* a client that starved and then was killed */
        fprintf(stderr, "soak: %llu waits passed over\n", (unsigned long long)t.starved);
        rc = -1;
    }
    if (t.turns == 0 || t.open_errors > 0) {
        fprintf(stderr, "soak: %llu turns, %llu failed opens\n", (unsigned long long)t.turns,
                (unsigned long long)t.open_errors);
        rc = -1;
    }
    /* Every registration ended, each reclaimed once (a client killed between
     * its registration and counting it is the one registration not counted). */
    if (reclaimed < t.opens || reclaimed > t.opens + t.kills) {
        fprintf(stderr, "soak: %llu tasks reclaimed for %llu registrations (%llu kills)\n",
                (unsigned long long)reclaimed, (unsigned long long)t.opens,
                (unsigned long long)t.kills);
        rc = -1;
    }
    /* Quiet to quiet: the same N connections, so the same descriptors. */
    if (fd_end > fd_start + 2) {
        fprintf(stderr, "soak: gmuxd's descriptors grew from %ld to %ld\n", fd_start, fd_end);
        rc = -1;
    }
    /* Peaks under churn: at most N reopened connections and our query differ. */
    if (fd3 > fd1 + o.clients + 2) {
        fprintf(stderr, "soak: descriptor peak %ld in the last third, %ld in the first\n", fd3,
                fd1);
        rc = -1;
    }
    /* A sanitizer's allocator keeps freed memory a while: RSS is reported, not judged. */
    if (!SOAK_SANITIZED && rss3 > rss1 + (rss1 / 4 > 4096 ? rss1 / 4 : 4096)) {
        fprintf(stderr, "soak: gmuxd's RSS peak grew from %ld KiB to %ld KiB\n", rss1, rss3);
        rc = -1;
    }
    printf(
        "{\"bench\": \"daemon_soak\", \"clients\": %d, \"seconds\": %.1f, \"seed\": %llu, "
        "\"turns\": %llu, \"overtaken_max\": %llu, \"wait_timeouts\": %llu, \"wait_ms_max\": %.1f, "
        "\"opens\": %llu, "
        "\"kills\": %llu, "
        "\"reclaimed\": %llu, \"switches\": %llu, \"reclaim_ms_max\": %.1f, "
        "\"reclaim_ms_mean\": %.1f, \"reap_ms_max\": %.1f, \"after_reap_ms_max\": %.1f, "
        "\"timeouts_pending\": %llu, \"timeouts_pending_held\": %llu, "
        "\"timeouts_running\": %llu, \"timeouts_other\": %llu, \"fd_start\": %ld, \"fd_end\": %ld, "
        "\"fd_peak_first_third\": %ld, \"fd_peak_last_third\": %ld, \"rss_kib_start\": %ld, "
        "\"rss_kib_end\": %ld, \"rss_kib_peak_first_third\": %ld, "
        "\"rss_kib_peak_last_third\": %ld, \"ok\": %s}\n",
        o.clients, (double)(t1 - t0) / 1e9, (unsigned long long)seed, (unsigned long long)t.turns,
        (unsigned long long)t.overtaken_max, (unsigned long long)t.timeouts,
        (double)t.wait_max_ns / 1e6, (unsigned long long)t.opens, (unsigned long long)t.kills,
        (unsigned long long)reclaimed, (unsigned long long)switches, t.reclaim_max_ms,
        t.kills ? t.reclaim_sum_ms / (double)t.kills : 0.0, t.reap_max_ms, t.after_reap_max_ms,
        (unsigned long long)t.timeout_as[DMN_STATE_PENDING], (unsigned long long)t.timeout_held,
        (unsigned long long)(t.timeout_as[DMN_STATE_RUNNING] + t.timeout_as[DMN_STATE_REVOKED] +
                             t.timeout_as[DMN_STATE_HELD]),
        (unsigned long long)(t.timeout_as[DMN_STATE_IDLE] + t.timeout_as[SOAK_UNLISTED]), fd_start,
        fd_end, fd1, fd3, rss_start, rss_end, rss1, rss3, rc == 0 ? "true" : "false");
out:
    if (rc != 0)
        fprintf(stderr, "soak: FAILED (seed %llu)\n", (unsigned long long)seed);
    STORE(&sh->quit, 1);
    for (int i = 0; i < SOAK_MAX_CLIENTS; i++) {
        pid_t pid = (pid_t)LOAD(&sh->slot[i].pid);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
    }
    drig_fini(&r);
    free(rep);
    free(smp);
    munmap(sh, sizeof(*sh));
    return rc == 0 ? 0 : 1;
}

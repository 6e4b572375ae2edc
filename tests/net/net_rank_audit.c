/*
 * net_rank scenarios of defects an audit found, one per name (main passes
 * the mode name; net_rank.h):
 *   quiet2     two threads' quiets on one context: the second finds the
 *              first's request already sent and must still wait for its ack
 *              before returning (its own write covered by it). Rank 1 is
 *              stopped (stop_self) meanwhile and its window is shared memory
 *              that rank 0 reads directly: the data must be there when the
 *              second quiet returns.
 *   rxerr      (shm) rank 0 sends more malformed (oversized) messages than rank 1
 *              posts receives: each completes with an error; rank 1 must
 *              post it again, or quiet (control messages) stops working.
 *   fetchlate  a get and a fetching atomic that time out while rank 1 is
 *              stopped: when their completions arrive later, the caller's
 *              buffer (and the stack frame the atomic returned from) must not
 *              be written.
 *   deadops    the last rank dies with writes to it outstanding, posted once
 *              it made its last progress call: the first pass after the
 *              survivors learn of the death must give every op back, some
 *              taken back by reclaim_dead (shm never reports them, tcp
 *              cancels them one error per CQ read); the stats tell the paths
 *              apart.
 *   deadfetch  a get from a rank whose death notice its own progress pass
 *              reads posts no op that the reclaim, already run, would miss.
 *   deadring   the same for puts queued in a ring: the pass that reads the
 *              notice reclaims, then drains them, posting none.
 *   staleop    (test hooks) the late completion of an op taken back when its
 *              peer died must not complete the op that took its place.
 *   devwinbad  gmux_dev_window_register on a handle that is not staged (on
 *              the last rank) fails on every rank together.
 *   stagefull  a staged device window whose registration fails locally on one
 *              rank (its stage table full) fails on every rank, and the next
 *              registration pairs with the next everywhere.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gmux/net_device.h>
#include <gmux/net_ext.h>
#include <rdma/fi_errno.h>

#include "common/clock.h"
#include "net/devstage.h"
#include "net/fiload.h"
#include "net/internal.h"
#include "net_rank.h"
#include "rank_kill.h"
#include "rank_stop.h"

#define SHARED_HDR 4096 /* header page of a shared window file: the owner's pid */

/* A window of `size` bytes in a file of /dev/shm that another rank maps too. */
static uint8_t *shared_map(int rank, size_t size, bool create)
{
    const char *job = getenv("GMUX_JOB");
    char name[160];
    snprintf(name, sizeof(name), "/gmux-audit-%s-%d", job ? job : "x", rank);
    int fd = shm_open(name, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0600);
    CHECK(fd >= 0, "shm_open %s", name);
    CHECK(!create || ftruncate(fd, (off_t)(SHARED_HDR + size)) == 0, "ftruncate");
    void *p = mmap(NULL, SHARED_HDR + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    CHECK(p != MAP_FAILED, "mmap %s", name);
    if (create)
        *(volatile pid_t *)p = getpid();
    return p;
}

static void shared_unlink(int rank)
{
    const char *job = getenv("GMUX_JOB");
    char name[160];
    snprintf(name, sizeof(name), "/gmux-audit-%s-%d", job ? job : "x", rank);
    shm_unlink(name);
}

/* --- quiet2 ------------------------------------------------------------------ */

enum { Q2_SIZE = 4096 };
static _Atomic bool q2_done;
static pid_t q2_pid;

static void *q2_first(void *arg)
{
    *(gmux_status_t *)arg = gmux_quiet(comm, 0);
    return NULL;
}

/* Resumes rank 1 once the second quiet waits beside the first (two waiters),
 * or when rank 0 is done without it. */
static void *q2_resume(void *arg)
{
    (void)arg;
    while (!atomic_load(&q2_done) && atomic_load(&comm->waiters) < 2)
        usleep(200);
    kill(q2_pid, SIGCONT);
    return NULL;
}

static uint64_t quiet_token(int peer)
{
    net_progress_lock_wait(comm);
    uint64_t t = comm->out[(uint32_t)peer].quiet_token; /* context 0 */
    pthread_mutex_unlock(&comm->progress_lock);
    return t;
}

static int mode_quiet2(void)
{
    uint8_t *mine = shared_map(me, Q2_SIZE, true);
    gmux_window_t w;
    OK(gmux_window_register(comm, mine + SHARED_HDR, Q2_SIZE, &w));
    OK(gmux_barrier(gmux_team_world(comm)));
    if (me == 0) {
        uint8_t *theirs = shared_map(1, Q2_SIZE, false);
        q2_pid = *(volatile pid_t *)theirs;
        uint8_t src[Q2_SIZE];
        for (size_t i = 0; i < Q2_SIZE; i++)
            src[i] = (uint8_t)(i * 7 + 3);
        uint64_t before = quiet_token(1);
        stop_rank(theirs, q2_pid);
        OK(gmux_put(comm, 0, 1, w, 0, src, Q2_SIZE, NULL));
        gmux_status_t first = GMUX_ERR_BUSY;
        pthread_t a, c;
        CHECK(pthread_create(&a, NULL, q2_first, &first) == 0, "thread");
        for (int i = 0; quiet_token(1) == before; i++) { /* the first quiet's request is out */
            CHECK(i < 200000, "the first quiet sent no request");
            usleep(100);
        }
        CHECK(pthread_create(&c, NULL, q2_resume, NULL) == 0, "thread");
        gmux_status_t second = gmux_quiet(comm, 0);
        bool there = memcmp(theirs + SHARED_HDR, src, Q2_SIZE) == 0;
        atomic_store(&q2_done, true);
        pthread_join(c, NULL);
        pthread_join(a, NULL);
        CHECK(second == GMUX_OK && first == GMUX_OK, "quiets: %s, %s", gmux_status_name(first),
              gmux_status_name(second));
        CHECK(there, "the second quiet returned before its write was at rank 1");
        munmap(theirs, SHARED_HDR + Q2_SIZE);
    } else {
        stop_self(mine);
    }
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, w));
    shared_unlink(me);
    munmap(mine, SHARED_HDR + Q2_SIZE);
    printf("rank %d: quiet2 ok\n", me);
    return 0;
}

/* --- rxerr ------------------------------------------------------------------- */

static int mode_rxerr(void)
{
    enum { ROGUE = NET_RX_BUFS + 64 };
    uint64_t *win = calloc(8, sizeof(uint64_t));
    gmux_window_t w;
    OK(gmux_window_register(comm, win, 8 * sizeof(uint64_t), &w));
    OK(gmux_barrier(gmux_team_world(comm)));
    if (me == 0) {
        /* larger than a control message: each fails the receive it lands in */
        uint8_t big[2 * sizeof(net_msg_t)];
        memset(big, 0x5a, sizeof(big));
        for (int i = 0; i < ROGUE; i++) {
            ssize_t r;
            do {
                net_progress_lock_wait(comm);
                r = fi_inject(comm->fab.ep, big, sizeof(big), comm->fab.peers[1]);
                if (r == -FI_EAGAIN)
                    net_progress_locked(comm);
                pthread_mutex_unlock(&comm->progress_lock);
            } while (r == -FI_EAGAIN);
            CHECK(r == 0, "fi_inject: %s", net_fi_strerror((int)-r));
        }
        /* quiet needs rank 1 to receive its request and answer */
        for (int round = 0; round < 4; round++) {
            OK(gmux_put_value(comm, 0, 1, w, 0, (uint64_t)round + 1, 8, NULL));
            OK(gmux_quiet(comm, 0));
        }
    }
    OK(gmux_barrier(gmux_team_world(comm)));
    if (me == 1)
        CHECK(win[0] == 4, "window holds %" PRIu64, win[0]);
    OK(gmux_window_deregister(comm, w));
    free(win);
    printf("rank %d: rxerr ok\n", me);
    return 0;
}

/* --- fetchlate --------------------------------------------------------------- */

enum { FL_SIZE = 4096, FL_PAD = 32768 };
static gmux_window_t fl_win;

/* A fetching atomic whose result variable is this frame's (gmux_atomic's). */
static __attribute__((noinline)) gmux_status_t fl_atomic(void)
{
    uint64_t old = 0;
    return gmux_atomic(comm, 0, 1, fl_win, 8, GMUX_AMO_ADD, 8, 1, 0, &old);
}

/* Fills the stack where fl_atomic's frames were, lets rank 1 answer, waits
 * for every op of context 0 to complete; returns whether the stack held. */
static __attribute__((noinline)) bool fl_stack_kept(pid_t pid)
{
    volatile uint8_t pad[FL_PAD];
    for (size_t i = 0; i < FL_PAD; i++)
        pad[i] = 0xcc;
    CHECK(kill(pid, SIGCONT) == 0, "SIGCONT");
    gmux_status_t st = gmux_flush(comm, 0);
    CHECK(st == GMUX_OK, "flush after rank 1 resumed: %s", gmux_status_name(st));
    for (size_t i = 0; i < FL_PAD; i++)
        if (pad[i] != 0xcc)
            return false;
    return true;
}

static int mode_fetchlate(void)
{
    uint8_t *mine = shared_map(me, FL_SIZE, true);
    memset(mine + SHARED_HDR, 0x5a, FL_SIZE);
    OK(gmux_window_register(comm, mine + SHARED_HDR, FL_SIZE, &fl_win));
    bool atomics = comm->fab.atomics;
    OK(gmux_barrier(gmux_team_world(comm)));
    if (me == 0) {
        uint8_t *theirs = shared_map(1, FL_SIZE, false);
        pid_t pid = *(volatile pid_t *)theirs;
        uint8_t *dst = malloc(FL_SIZE);
        CHECK(dst, "out of memory");
        memset(dst, 0, FL_SIZE);
        double keep = gmux_comm_timeout(comm);
        stop_rank(theirs, pid);
        OK(gmux_comm_set_timeout(comm, 1.0)); /* the fetches below time out: rank 1 is stopped */
        gmux_status_t st = gmux_get(comm, 0, 1, fl_win, 0, dst, FL_SIZE);
        /* shm reads the stopped rank's memory itself (CMA): then it is done */
        CHECK(st == GMUX_ERR_TIMEOUT || (st == GMUX_OK && dst[0] == 0x5a), "get: %s",
              gmux_status_name(st));
        memset(dst, 0xcc, FL_SIZE); /* the caller's again: nobody else writes it */
        st = atomics ? fl_atomic() : GMUX_ERR_TIMEOUT;
        CHECK(st == GMUX_ERR_TIMEOUT, "atomic: %s", gmux_status_name(st));
        OK(gmux_comm_set_timeout(comm, keep));
        bool stack_kept = fl_stack_kept(pid);
        for (size_t i = 0; i < FL_SIZE; i++)
            CHECK(dst[i] == 0xcc, "byte %zu of a timed-out get's buffer written later (%#x)", i,
                  dst[i]);
        CHECK(stack_kept, "a timed-out atomic wrote its result into a dead stack frame");
        free(dst);
        munmap(theirs, SHARED_HDR + FL_SIZE);
    } else {
        stop_self(mine);
    }
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, fl_win));
    shared_unlink(me);
    munmap(mine, SHARED_HDR + FL_SIZE);
    printf("rank %d: fetchlate ok (atomics %s)\n", me, atomics ? "yes" : "no");
    return 0;
}

/* --- deadops ----------------------------------------------------------------- */

/* Every rank runs without a proxy thread (audit_mode), so nothing but the
 * test's own calls progresses. The victim's last progress is in
 * rank_kill_start_bytes, where it waits until every survivor left the
 * barrier: writes a survivor posted then were done (and answered) by the
 * victim still waiting there, so they came back as plain completions and the
 * reclaim went untested. Here the victim says through a shared file that it
 * is out of that wait (it never progresses again) and dies only once every
 * survivor has posted its
 * writes; each survivor reads the death notice without progressing, then
 * runs one pass, which must give every held op back: reported by the
 * provider (at most a CQ read's worth on tcp, none on shm) or taken back
 * by reclaim_dead, each op once. */
enum { DO_PUTS = 256, DO_SIZE = 1024 * 1024, DO_WAIT_S = 20 };

typedef struct {
    _Atomic uint32_t quiet;  /* the victim made its last progress */
    _Atomic uint32_t posted; /* survivors whose writes are posted */
} do_shared_t;

static uint32_t free_ops(void)
{
    net_progress_lock_wait(comm);
    uint32_t k = 0;
    for (const net_op_t *op = comm->free_ops; op; op = op->next_free)
        k++;
    pthread_mutex_unlock(&comm->progress_lock);
    return k;
}

/* Ops in use (handed to the provider) for peer, or for any peer with -1. */
static uint32_t ops_held(int peer)
{
    net_progress_lock_wait(comm);
    uint32_t k = 0;
    for (uint32_t i = 0; i < comm->nops; i++)
        k += comm->ops[i]->in_use && (peer < 0 || comm->ops[i]->peer == (uint32_t)peer);
    pthread_mutex_unlock(&comm->progress_lock);
    return k;
}

static bool pool_full(void *arg)
{
    (void)arg;
    return free_ops() == comm->nops;
}

static bool do_wait_word(_Atomic uint32_t *w, uint32_t want)
{
    uint64_t end = com_clock_ns() + DO_WAIT_S * COM_NS_PER_S;
    while (atomic_load(w) < want && com_clock_ns() < end)
        usleep(100);
    return atomic_load(w) >= want;
}

/* The victim, out of rank_kill_start's wait: no gmux call follows, so it never reads
 * another write. It dies once the survivors posted theirs. */
static void do_before_death(void *arg)
{
    do_shared_t *sh = arg;
    atomic_store(&sh->quiet, 1);
    do_wait_word(&sh->posted, (uint32_t)(n - 1));
    shared_unlink(me);
}

static int mode_deadops(void)
{
    int victim = n - 1;
    uint8_t *map = NULL;
    if (me == victim)
        map = shared_map(victim, sizeof(do_shared_t), true);
    uint8_t *src = malloc(DO_SIZE);
    CHECK(src, "out of memory");
    memset(src, 0x3c, DO_SIZE);
    void *win;
    gmux_window_t w;
    rank_kill_start_bytes(comm, DO_SIZE, &win, &w, do_before_death, map ? map + SHARED_HDR : NULL);
    map = shared_map(victim, sizeof(do_shared_t), false);
    do_shared_t *sh = (do_shared_t *)(map + SHARED_HDR);
    CHECK(do_wait_word(&sh->quiet, 1), "the victim never made its last progress");
    for (int i = 0; i < DO_PUTS; i++) /* never inject: an op each */
        OK(gmux_put(comm, 1, victim, w, 0, src, DO_SIZE, NULL));
    while (net_ring_pending(&comm->rings[comm->size + victim]) > 0) /* inline progress off */
        net_progress_try(comm);
    atomic_fetch_add(&sh->posted, 1);
    munmap(map, SHARED_HDR + sizeof(do_shared_t));
    /* the death notice, read with no progress pass (none reads the CQ) */
    uint64_t end = com_clock_ns() + DO_WAIT_S * COM_NS_PER_S;
    while (!net_peer_dead(comm, victim) && com_clock_ns() < end) {
        net_boot_poll(comm->boot);
        usleep(1000);
    }
    CHECK(net_peer_dead(comm, victim), "rank %d never declared dead", victim);
    uint32_t held = ops_held(victim), held_all = ops_held(-1);
    CHECK(held > 0, "no op held for the dead rank: the test proves nothing");
    net_stats_t s0 = comm->stats;
    /* one pass: the completions already there, then the reclaim */
    net_progress_lock_wait(comm);
    net_progress_locked(comm);
    pthread_mutex_unlock(&comm->progress_lock);
    uint32_t back = (uint32_t)(comm->stats.ops_taken_back - s0.ops_taken_back);
    uint32_t done = (uint32_t)(comm->stats.ops_done - s0.ops_done);
    uint32_t failed = (uint32_t)(comm->stats.ops_failed - s0.ops_failed);
    CHECK(ops_held(victim) == 0, "%u of %u ops still held for the dead rank after a pass",
          ops_held(victim), held);
    /* each op that left use ended one way (a live peer's may have completed too) */
    CHECK(done + failed + back == held_all - ops_held(-1),
          "%u ops ended, %u done + %u failed + %u taken back", held_all - ops_held(-1), done,
          failed, back);
    CHECK(back > 0 && back <= held, "%u of %u taken back (%u done, %u failed)", back, held, done,
          failed);
    gmux_status_t st = gmux_flush(comm, 1);
    CHECK(st == GMUX_ERR_PEER || st == GMUX_ERR_TRANSPORT, "flush: %s", gmux_status_name(st));
    st = gmux_wait_cond(comm, pool_full, NULL, DO_WAIT_S); /* the live peers' ops too */
    CHECK(pool_full(NULL), "%u of %u ops free after the death (%s)", free_ops(), comm->nops,
          gmux_status_name(st));
    printf("rank %d: deadops ok (%u held: %u done, %u failed, %u taken back)\n", me, held, done,
           failed, back);
    fflush(stdout);
    st = gmux_comm_finalize(comm);
    CHECK(st != GMUX_OK, "finalize after a death returned OK");
    comm = NULL;
    free(win);
    free(src);
    return 0;
}

/* --- deadfetch --------------------------------------------------------------- */

/* Waits until the victim's death notice is in the bootstrap socket, unread,
 * and arranges for the next progress pass to read it. */
static void notice_pending(int victim)
{
    struct pollfd pfd = {.fd = comm->boot->fd, .events = POLLIN};
    CHECK(poll(&pfd, 1, DO_WAIT_S * 1000) == 1, "no death notice");
    CHECK(!net_peer_dead(comm, victim), "the notice was read already");
    comm->boot_poll_calls = 0;
    comm->boot_poll_ns = 0;
}

/* No proxy thread anywhere (audit_mode). The survivor waits until the death
 * notice is in its bootstrap socket, unread, and gets from the victim: the
 * get's own progress pass reads the notice and runs the reclaim, then the
 * get must not post an op to the dead rank, which nothing would take back. */
static int mode_deadfetch(void)
{
    uint64_t *win, got = 0;
    gmux_window_t w;
    int victim = rank_kill_start(comm, &win, &w, NULL, NULL);
    notice_pending(victim);
    gmux_status_t st = gmux_get(comm, 1, victim, w, 0, &got, sizeof(got));
    CHECK(st == GMUX_ERR_PEER, "get from the dead rank: %s", gmux_status_name(st));
    net_progress_try(comm);
    CHECK(ops_held(victim) == 0, "%u ops held for the dead rank after its reclaim",
          ops_held(victim));
    printf("rank %d: deadfetch ok\n", me);
    fflush(stdout);
    CHECK(gmux_comm_finalize(comm) != GMUX_OK, "finalize after a death returned OK");
    comm = NULL;
    free(win);
    return 0;
}

/* --- deadring ---------------------------------------------------------------- */

/* The ring path (what the proxy, a GPU's descriptors and a staged handle's
 * forwarding all go through): puts queued to the victim while its death
 * notice waits unread; the pass that reads it runs the reclaim before it
 * drains the ring, and must then post nothing to the dead rank. */
enum { DR_PUTS = 16, DR_SIZE = 64 * 1024 }; /* above shm's inject size: an op each */

static int mode_deadring(void)
{
    uint8_t *src = malloc(DR_SIZE);
    CHECK(src, "out of memory");
    memset(src, 0x5d, DR_SIZE);
    void *win;
    gmux_window_t w;
    int victim = rank_kill_start_bytes(comm, DR_SIZE, &win, &w, NULL, NULL);
    notice_pending(victim);
    net_comm_set_inline_progress(comm, false); /* queued, for the pass below */
    for (int i = 0; i < DR_PUTS; i++)
        OK(gmux_put(comm, 1, victim, w, 0, src, DR_SIZE, NULL));
    net_ring_t *ring = &comm->rings[comm->size + victim];
    CHECK(net_ring_pending(ring) == DR_PUTS, "%" PRIu64 " puts queued", net_ring_pending(ring));
    net_progress_lock_wait(comm);
    net_progress_locked(comm);
    pthread_mutex_unlock(&comm->progress_lock);
    CHECK(net_peer_dead(comm, victim), "the pass did not read the notice: proves nothing");
    CHECK(net_ring_pending(ring) == 0, "the pass left %" PRIu64 " queued", net_ring_pending(ring));
    CHECK(ops_held(victim) == 0, "%u ops held for the dead rank after its reclaim",
          ops_held(victim));
    gmux_status_t st = gmux_flush(comm, 1);
    CHECK(st == GMUX_ERR_PEER, "flush: %s", gmux_status_name(st));
    printf("rank %d: deadring ok\n", me);
    fflush(stdout);
    CHECK(gmux_comm_finalize(comm) != GMUX_OK, "finalize after a death returned OK");
    comm = NULL;
    free(win);
    free(src);
    return 0;
}

/* --- staleop ------------------------------------------------------------------ */

enum { SO_COUNTER = 7 };

/* An op of the pool handed out as the proxy would for a write to peer 1 on
 * context 0 that bumps counter. LOCKING: held. */
static net_op_t *so_take(uint32_t counter)
{
    net_op_t *op = comm->free_ops;
    CHECK(op, "op pool empty");
    comm->free_ops = op->next_free;
    op->in_use = true;
    op->id = comm->ctx_issued[0];
    op->ctx = 0;
    op->peer = 1;
    op->counter = counter;
    return op;
}

/* The provider's completion of an op taken back (as when its peer died) may
 * still arrive: it must not complete the op that took its place in the pool.
 * Played with the test hooks, rank 1 alive but idle: an op is taken back,
 * the next op handed out, then the first op's completion reported. */
static int mode_staleop(void)
{
    OK(gmux_barrier(gmux_team_world(comm)));
    if (me == 0) {
        gmux_counter_reset(comm, SO_COUNTER);
        net_progress_lock_wait(comm);
        net_op_t *a = so_take(GMUX_NO_COUNTER);
        void *stale = &a->fctx;
        net_ops_take_back(comm, 1);
        bool a_back = !a->in_use;
        net_op_t *b = so_take(SO_COUNTER);
        net_op_completed(comm, stale, true, 0); /* a's completion, late */
        bool b_kept = b->in_use;
        uint64_t early = gmux_counter_read(comm, SO_COUNTER);
        if (b_kept)
            net_op_completed(comm, &b->fctx, true, 0); /* b's own */
        bool b_done = !b->in_use;
        pthread_mutex_unlock(&comm->progress_lock);
        CHECK(a_back, "the op taken back is still in use");
        CHECK(b_kept && early == 0,
              "a stale completion completed the next op (counter %" PRIu64 ")", early);
        CHECK(b_done && gmux_counter_read(comm, SO_COUNTER) == 1, "the next op's completion lost");
        gmux_status_t e = (gmux_status_t)atomic_exchange(&comm->ctx_error[0], GMUX_OK);
        CHECK(e == GMUX_ERR_PEER, "the op taken back failed with %s", gmux_status_name(e));
        CHECK(pool_full(NULL), "%u of %u ops free", free_ops(), comm->nops);
    }
    OK(gmux_barrier(gmux_team_world(comm)));
    printf("rank %d: staleop ok\n", me);
    return 0;
}

/* --- stagefull --------------------------------------------------------------- */

enum { SF_SIZE = 4096, SF_TABLE = 16 /* devstage.c: STAGE_MAX_WINDOWS */ };

/* Host memory stands in for the device's: the copies are memcpy. */
static int sf_copy(void *arg, void *dst, const void *src, size_t n)
{
    (void)arg;
    memcpy(dst, src, n);
    return 0;
}

static void *sf_alloc(void *arg, size_t n)
{
    (void)arg;
    void *p = NULL;
    return posix_memalign(&p, 4096, n) == 0 ? p : NULL;
}

static void sf_free(void *arg, void *p)
{
    (void)arg;
    free(p);
}

static int mode_stagefull(void)
{
    net_devstage_copy_t copy = {.d2h = sf_copy,
                                .h2d = sf_copy,
                                .host_alloc = sf_alloc,
                                .host_free = sf_free,
                                .copy = sf_copy};
    net_devstage_t *stage;
    OK(net_devstage_create(comm, &copy, 1 << 20, &stage));
    static uint8_t ranges[SF_TABLE][64];
    static uint8_t dev_a[SF_SIZE], dev_b[SF_SIZE];
    bool last = me == n - 1;
    if (last) /* its table full: its next window fails before the exchange */
        for (int i = 0; i < SF_TABLE; i++)
            OK(net_devstage_source_register(stage, ranges[i], sizeof(ranges[i])));
    gmux_window_t wa = 0, wb = 0;
    gmux_status_t st = net_devstage_window_register(stage, dev_a, SF_SIZE, &wa);
    CHECK(st == GMUX_ERR_CAPACITY, "window a: %s (every rank fails with the full one)",
          gmux_status_name(st));
    if (last)
        OK(net_devstage_source_deregister(stage, ranges[0]));
    /* the next registration pairs with the next everywhere */
    OK(net_devstage_window_register(stage, dev_b, SF_SIZE, &wb));
    int right = (me + 1) % n, left = (me + n - 1) % n;
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, 0, 1, GMUX_NO_COUNTER};
    OK(gmux_put_value(comm, 0, right, wb, 8, 0x1000u + (uint64_t)me, 8, &o));
    OK(gmux_signal_wait(comm, 0, 1, NULL));
    uint64_t got = 0;
    memcpy(&got, (uint8_t *)gmux_window_base(comm, wb, NULL) + 8, 8);
    CHECK(got == 0x1000u + (uint64_t)left, "window b holds %#" PRIx64, got);
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(net_devstage_window_deregister(stage, wb));
    if (last)
        for (int i = 1; i < SF_TABLE; i++)
            OK(net_devstage_source_deregister(stage, ranges[i]));
    net_devstage_destroy(stage);
    printf("rank %d: stagefull ok\n", me);
    return 0;
}

/* --- devwinbad ------------------------------------------------------------------ */

enum { DW_SIZE = 4096 };

/* A window registration where the last rank passes a host handle (not
 * staged) to gmux_dev_window_register, then one where it passes no memory
 * kind to gmux_window_register_mem: every rank fails at once (not after the
 * timeout), and the next registration pairs with the next everywhere. */
static int mode_devwinbad(void)
{
    static uint8_t buf_a[DW_SIZE], buf_b[DW_SIZE];
    gmux_dev_handle_t h;
    OK(gmux_dev_handle_create_host(comm, &h));
    bool last = me == n - 1;
    gmux_window_t wa = 0, wb = 0;
    /* "at once" is not timed: the timeout is an hour meanwhile, so a
     * registration that waited for it would outlast the launcher's --timeout */
    double keep = gmux_comm_timeout(comm);
    OK(gmux_comm_set_timeout(comm, 3600));
    for (int round = 0; round < 2; round++) { /* 1: gmux_window_register_mem without mem */
        OK(gmux_barrier(gmux_team_world(comm)));
        gmux_status_t st =
            !last        ? gmux_window_register(comm, buf_a, DW_SIZE, &wa)
            : round == 0 ? gmux_dev_window_register(&h, buf_a, DW_SIZE, &wa)
                         : gmux_window_register_mem(comm, buf_a, DW_SIZE, NULL, NULL, &wa, NULL);
        CHECK(st != GMUX_OK && st != GMUX_ERR_TIMEOUT,
              "round %d, window a: %s (every rank fails with the last)", round,
              gmux_status_name(st));
        CHECK(!last || st == (round == 0 ? GMUX_ERR_STATE : GMUX_ERR_INVALID),
              "round %d, the last rank's window a: %s", round, gmux_status_name(st));
    }
    OK(gmux_comm_set_timeout(comm, keep));
    /* the next registration pairs with the next everywhere */
    OK(gmux_window_register(comm, buf_b, DW_SIZE, &wb));
    int right = (me + 1) % n, left = (me + n - 1) % n;
    gmux_op_opts_t o = {GMUX_SIGNAL_ADD, 0, 1, GMUX_NO_COUNTER};
    OK(gmux_put_value(comm, 0, right, wb, 8, 0x2000u + (uint64_t)me, 8, &o));
    OK(gmux_signal_wait(comm, 0, 1, NULL));
    uint64_t got = 0;
    memcpy(&got, buf_b + 8, 8);
    CHECK(got == 0x2000u + (uint64_t)left, "window b holds %#" PRIx64, got);
    OK(gmux_barrier(gmux_team_world(comm)));
    OK(gmux_window_deregister(comm, wb));
    gmux_dev_handle_destroy(&h);
    printf("rank %d: devwinbad ok\n", me);
    return 0;
}

/* --- entry ------------------------------------------------------------------- */

bool audit_mode(const char *what, gmux_comm_params_t *p)
{
    if (strcmp(what, "quiet2") == 0 || strcmp(what, "rxerr") == 0 ||
        strcmp(what, "fetchlate") == 0 || strcmp(what, "stagefull") == 0 ||
        strcmp(what, "staleop") == 0 || strcmp(what, "devwinbad") == 0) {
        p->timeout_s = 20;
        return true;
    }
    if (strcmp(what, "deadops") == 0 || strcmp(what, "deadfetch") == 0 ||
        strcmp(what, "deadring") == 0) {
        p->timeout_s = 20;
        p->start_proxy = 0; /* nothing progresses but the test's own calls */
        return true;
    }
    return false;
}

int mode_audit(const char *what)
{
    if (strcmp(what, "quiet2") == 0)
        return n == 2 ? mode_quiet2() : 2;
    if (strcmp(what, "rxerr") == 0)
        return mode_rxerr();
    if (strcmp(what, "fetchlate") == 0)
        return n == 2 ? mode_fetchlate() : 2;
    if (strcmp(what, "deadops") == 0)
        return mode_deadops();
    if (strcmp(what, "deadfetch") == 0)
        return n == 2 ? mode_deadfetch() : 2;
    if (strcmp(what, "deadring") == 0)
        return n == 2 ? mode_deadring() : 2;
    if (strcmp(what, "stagefull") == 0)
        return mode_stagefull();
    if (strcmp(what, "staleop") == 0)
        return n == 2 ? mode_staleop() : 2;
    if (strcmp(what, "devwinbad") == 0)
        return mode_devwinbad();
    return 2;
}

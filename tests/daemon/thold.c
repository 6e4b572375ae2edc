/* The helpers of the tests of a switch held for its evictions
 * (test_server_hold.c, test_server_hold_ends.c); see thold.h. */
#include "thold.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/settings.h"
#include "daemon/endpoint.h"
#include "daemon/place_chunk.h"
#include "daemon/place_opt.h"
#include "msg_io.h"
#include "tproc.h"
#include "tsrv.h"

static char dir[] = "/tmp/gmux-sh-XXXXXX";
char path[128];
pid_t server_pid;
uint8_t buf[DMN_PROTO_MAX_MSG];

/* Evicts the previous holder's ranges, fills the incoming task's, and fills
 * the task marked for it ahead (its ranges); evict_none: no evictions;
 * evict_holders: the ranges of the tasks holding the turn beside the
 * incoming one (shared mode) instead of the previous holder's. */
int evict_none;
static int evict_holders;
static gmux_status_t plan_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                    const dmn_task_view_t *from, const dmn_task_view_t *to,
                                    dmn_plan_t *plan)
{
    (void)ctx;
    gmux_status_t st = GMUX_OK;
    if (from && from->id != to->id && !evict_none && !evict_holders)
        for (uint32_t i = 0; i < from->n_ranges && st == GMUX_OK; i++)
            st = dmn_plan_add(plan, from->id, DMN_PLAN_EVICT, from->ranges[i]);
    for (size_t k = 0; evict_holders && k < n_tasks && st == GMUX_OK; k++)
        for (uint32_t i = 0;
             tasks[k].turn == 0 && tasks[k].id != to->id && i < tasks[k].n_ranges && st == GMUX_OK;
             i++)
            st = dmn_plan_add(plan, tasks[k].id, DMN_PLAN_EVICT, tasks[k].ranges[i]);
    for (uint32_t i = 0; i < to->n_ranges && st == GMUX_OK; i++)
        st = dmn_plan_add(plan, to->id, DMN_PLAN_FILL, to->ranges[i]);
    for (size_t k = 0; k < n_tasks && st == GMUX_OK; k++)
        for (uint32_t i = 0; tasks[k].ahead && i < tasks[k].n_ranges && st == GMUX_OK; i++)
            st = dmn_plan_add(plan, tasks[k].id, DMN_PLAN_AHEAD, tasks[k].ranges[i]);
    return st;
}

/* What the server handed back (on_unsent) and, with a real placement, what
 * its model counts resident per task id after its last call, in memory
 * shared with the test: the server is a child of it. */
#define THOLD_IDS 64
typedef struct thold_shm {
    thold_unsent_t unsent;
    uint64_t model[THOLD_IDS];
} thold_shm_t;
static thold_shm_t *shm;
thold_unsent_t *unsent_log;
static gmux_status_t plan_on_unsent(void *ctx, const dmn_plan_entry_t *orders, size_t n)
{
    (void)ctx;
    unsent_log->calls++;
    for (size_t i = 0; i < n; i++)
        if (unsent_log->n < THOLD_UNSENT_MAX)
            unsent_log->e[unsent_log->n++] = orders[i];
    return GMUX_OK;
}

static const dmn_placement_t placement = {"hold", NULL, plan_on_switch, plan_on_unsent};

thold_place_t thold_place = THOLD_REC;
uint64_t thold_capacity;
int thold_ahead_off;

/* In the server child: the real placement, behind hooks that copy its
 * model to shm after each call (and log what is handed back). */
static const dmn_placement_t *real;
static dmn_place_opt_t *real_opt;
static dmn_place_chunk_t *real_chunk;
static void model_copy(void)
{
    for (uint32_t id = 1; id < THOLD_IDS; id++)
        shm->model[id] = real_opt ? dmn_place_opt_resident(real_opt, id)
                                  : dmn_place_chunk_resident(real_chunk, id);
}

static gmux_status_t real_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                    const dmn_task_view_t *from, const dmn_task_view_t *to,
                                    dmn_plan_t *plan)
{
    (void)ctx;
    gmux_status_t st = real->on_switch(real->ctx, tasks, n_tasks, from, to, plan);
    model_copy();
    return st;
}

static gmux_status_t real_on_unsent(void *ctx, const dmn_plan_entry_t *orders, size_t n)
{
    (void)plan_on_unsent(ctx, orders, n);
    gmux_status_t st = real->on_unsent(real->ctx, orders, n);
    model_copy();
    return st;
}

static dmn_placement_t real_wrapped = {"real", NULL, real_on_switch, real_on_unsent};

void handed_back(const dmn_plan_entry_t *want, uint32_t n)
{
    assert_int_equal(unsent_log->calls, n > 0);
    assert_int_equal(unsent_log->n, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(unsent_log->e[i].task_id, want[i].task_id);
        assert_int_equal(unsent_log->e[i].kind, want[i].kind);
        assert_int_equal(unsent_log->e[i].range.base, want[i].range.base);
        assert_int_equal(unsent_log->e[i].range.len, want[i].range.len);
    }
}

/* In the server child: time slices, or shared mode with *shared (a
 * capacity that every footprint here fits in many times: the mode's, not
 * the placement's); the fill ahead; the placement. */
static int prep(dmn_server_opts_t *o, void *arg)
{
    char err[64];
    gmux_status_t st = *(const int *)arg
                           ? com_settings_set(COM_SETTING_DAEMON_CAPACITY, "1G", err, sizeof(err))
                           : com_settings_set(COM_SETTING_DAEMON_SHARE, "0", err, sizeof(err));
    if (st == GMUX_OK && thold_ahead_off)
        st = com_settings_set(COM_SETTING_DAEMON_AHEAD, "0", err, sizeof(err));
    if (st == GMUX_OK && thold_place == THOLD_OPT &&
        (st = dmn_place_opt_create(thold_capacity, THOLD_CHUNK, &real_opt)) == GMUX_OK)
        real = dmn_place_opt_placement(real_opt);
    if (st == GMUX_OK && thold_place == THOLD_CHUNK &&
        (st = dmn_place_chunk_create(thold_capacity, THOLD_CHUNK, &real_chunk)) == GMUX_OK)
        real = dmn_place_chunk_placement(real_chunk);
    if (real)
        o->placement = &real_wrapped;
    return st != GMUX_OK;
}

/* What each client read (by its fd): its task id and the chunks of
 * [0, THOLD_SPAN) its orders leave resident; and the bytes of each kind
 * of order every client read since the server started. */
#define THOLD_FDS   256
#define THOLD_SPAN  0x100000ull
#define THOLD_WORDS (THOLD_SPAN / THOLD_CHUNK / 64)
static struct {
    uint32_t id;
    uint64_t bits[THOLD_WORDS];
} ledger[THOLD_FDS];
static uint64_t read_bytes[3];

/* A server child waiting at most wait_ms for evictions; quantum 20 ms, grace
 * grace_ns; time slices, or shared mode with shared set (and evict_holders). */
uint64_t grace_ns = COM_NS_PER_S * 60;
void start_mode(int wait_ms, int shared)
{
    dmn_server_opts_t o = {path,
                           DMN_NO_GROUP,
                           20 * COM_NS_PER_MS,
                           grace_ns,
                           &placement,
                           0,
                           0,
                           (uint64_t)wait_ms * COM_NS_PER_MS,
                           0,
                           0,
                           NULL,
                           0};
    evict_holders = shared;
    memset(shm, 0, sizeof(*shm));
    memset(ledger, 0, sizeof(ledger));
    memset(read_bytes, 0, sizeof(read_bytes));
    tsrv_start(&o, prep, &shared, &server_pid);
    evict_holders = 0;
}

void start_server(int wait_ms)
{
    start_mode(wait_ms, 0);
}

int teardown(void **state)
{
    (void)state;
    tproc_kill_reap(&server_pid);
    return 0;
}

/* A registered raw client of class cls, priority prio and budget (reads
 * time out after 10 s). */
int raw_client_of(const char *name, uint32_t cls, int32_t prio, uint64_t budget)
{
    int fd = -1;
    assert_int_equal(dmn_endpoint_connect(path, &fd), GMUX_OK);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    dmn_msg_register_t r = {(uint32_t)getpid(), cls, prio, 0, budget, {0}};
    snprintf(r.name, sizeof(r.name), "%s", name);
    assert_int_equal(tmsg_write_all(fd, buf, dmn_proto_encode_register(buf, sizeof(buf), 1, &r)),
                     0);
    dmn_msg_t m;
    assert_int_equal(tmsg_read(fd, buf, &m), 0);
    assert_int_equal(m.hdr.type, DMN_MSG_REGISTERED);
    assert_true(fd < THOLD_FDS && m.u.registered.task_id < THOLD_IDS);
    memset(&ledger[fd], 0, sizeof(ledger[fd]));
    ledger[fd].id = m.u.registered.task_id;
    return fd;
}

int raw_client(const char *name)
{
    return raw_client_of(name, DMN_CLASS_BATCH, 0, 0);
}

void send_pending(int fd, uint64_t request, dmn_range_t ws)
{
    assert_int_equal(tmsg_write_all(fd, buf,
                                    dmn_proto_encode_ranges(buf, sizeof(buf), 2, DMN_MSG_PENDING, 1,
                                                            request, &ws, 1)),
                     0);
}

void send_pending_none(int fd, uint64_t request)
{
    assert_int_equal(tmsg_write_all(fd, buf,
                                    dmn_proto_encode_ranges(buf, sizeof(buf), 2, DMN_MSG_PENDING, 1,
                                                            request, NULL, 0)),
                     0);
}

void send_simple(int fd, dmn_msg_type_t type)
{
    assert_int_equal(tmsg_write_all(fd, buf, dmn_proto_encode_empty(buf, sizeof(buf), 3, type)), 0);
}

void send_evicted(int fd, uint64_t grant)
{
    dmn_msg_evicted_t e = {grant, 0, 0};
    assert_int_equal(tmsg_write_all(fd, buf, dmn_proto_encode_evicted(buf, sizeof(buf), 4, &e)), 0);
}

/* Reads until a message of type (a PLAN of kind `kind` when type is PLAN);
 * counts the PLAN ranges of each kind it passes in plans[]. */
void thold_read(int fd, dmn_msg_t *m)
{
    assert_int_equal(tmsg_read(fd, buf, m), 0);
    if (m->hdr.type != DMN_MSG_PLAN)
        return;
    uint32_t kind = m->u.ranges.count;
    assert_true(kind <= DMN_PLAN_AHEAD);
    for (uint32_t i = 0; i < m->u.ranges.n_ranges; i++) {
        dmn_range_t r = dmn_proto_range_at(&m->u.ranges, i);
        read_bytes[kind] += r.len;
        assert_true(r.base % THOLD_CHUNK == 0 && r.len % THOLD_CHUNK == 0);
        assert_true(r.base + r.len <= THOLD_SPAN);
        for (uint64_t c = r.base / THOLD_CHUNK; c < (r.base + r.len) / THOLD_CHUNK; c++) {
            uint64_t bit = 1ull << (c % 64);
            if (kind == DMN_PLAN_EVICT)
                ledger[fd].bits[c / 64] &= ~bit;
            else
                ledger[fd].bits[c / 64] |= bit;
        }
    }
}

/* Reads what fd has to read now (the ledger); whether it read any. */
static int drain(int fd)
{
    int got = 0;
    struct pollfd pf = {fd, POLLIN, 0};
    dmn_msg_t m;
    while (poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN)) {
        thold_read(fd, &m);
        got = 1;
    }
    return got;
}

void thold_agree(const int *fds, int n)
{
    dmn_report_t rep;
    int got;
    do { /* what the daemon sent before it answered has been read */
        assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
        got = 0;
        for (int i = 0; i < n; i++)
            got |= drain(fds[i]);
    } while (got);
    assert_int_equal(rep.evict_bytes, read_bytes[DMN_PLAN_EVICT]);
    assert_int_equal(rep.fill_bytes, read_bytes[DMN_PLAN_FILL]);
    assert_int_equal(rep.ahead_bytes, read_bytes[DMN_PLAN_AHEAD]);
    for (int i = 0; i < n && thold_place != THOLD_REC; i++) {
        uint64_t chunks = 0;
        for (uint64_t w = 0; w < THOLD_WORDS; w++)
            chunks += (uint64_t)__builtin_popcountll(ledger[fds[i]].bits[w]);
        if (shm->model[ledger[fds[i]].id] != chunks * THOLD_CHUNK)
            fail_msg("task %u: the placement counts 0x%llx bytes resident, its orders 0x%llx",
                     ledger[fds[i]].id, (unsigned long long)shm->model[ledger[fds[i]].id],
                     (unsigned long long)(chunks * THOLD_CHUNK));
    }
}

void thold_end(const int *fds, int n)
{
    thold_agree(fds, n);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    tsrv_stop(&server_pid);
}

void thold_gone(int fd)
{
    dmn_report_t rep;
    assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
    (void)drain(fd);
    close(fd);
}

void holds_are(const dmn_report_t *rep, uint64_t waits, uint64_t timeouts)
{
    assert_int_equal(rep->evict_waits, waits);
    assert_int_equal(rep->evict_timeouts, timeouts);
}

void read_until(int fd, dmn_msg_type_t type, int kind, dmn_msg_t *m, int *plans)
{
    for (;;) {
        thold_read(fd, m);
        if (m->hdr.type == DMN_MSG_PLAN && plans)
            plans[m->u.ranges.count] += (int)m->u.ranges.n_ranges;
        if (m->hdr.type == type && (type != DMN_MSG_PLAN || (int)m->u.ranges.count == kind))
            return;
    }
}

/* Whether nothing waits to be read on fd, once the daemon answered a QUERY
 * sent after (so anything it sent with that switch has been written). */
int nothing_for(int fd, dmn_report_t *rep)
{
    assert_int_equal(dmn_report_fetch(path, rep, 10000), GMUX_OK);
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, 0) == 0)
        return 1;
    dmn_msg_t m;
    thold_read(fd, &m);
    print_message("unexpected %s (count %u)\n", dmn_msg_type_name(m.hdr.type), m.u.ranges.count);
    return 0;
}

/* Reads fd's EVICT PLANs up to the empty one that asks for EVICTED (into
 * *m), counting the ranges of each kind it passes in plans[] as read_until. */
void read_evictions(int fd, dmn_msg_t *m, int *plans)
{
    do
        read_until(fd, DMN_MSG_PLAN, DMN_PLAN_EVICT, m, plans);
    while (m->u.ranges.n_ranges != 0);
}

/* The next message on x is its fill ahead (a PLAN AHEAD), and nothing comes
 * after it; no switch waited for evictions. */
void ahead_then_nothing(int x)
{
    dmn_msg_t m;
    thold_read(x, &m);
    assert_int_equal(m.hdr.type, DMN_MSG_PLAN);
    assert_int_equal(m.u.ranges.count, DMN_PLAN_AHEAD);
    dmn_report_t rep;
    assert_true(nothing_for(x, &rep));
    assert_int_equal(rep.evict_waits, 0);
}

const dmn_range_t ws_x = {0x10000, 0x1000}, ws_a = {0x20000, 0x2000}, ws_b = {0x30000, 0x3000},
                  ws_l = {0x40000, 0x4000};

/* X holds the turn, A (and B) wait, X's quantum ends and it releases. */
void x_released(int x, int a, int b)
{
    dmn_msg_t m;
    send_pending(x, 1, ws_x);
    read_until(x, DMN_MSG_GRANT, 0, &m, NULL);
    send_pending(a, 1, ws_a);
    if (b >= 0)
        send_pending(b, 1, ws_b);
    read_until(x, DMN_MSG_REVOKE, 0, &m, NULL);
    send_simple(x, DMN_MSG_RELEASE);
}

/* A server waiting at most wait_ms for evictions; X, A (and B when b is not
 * NULL) registered; X holds the turn, A and B wait, X's quantum ends and it
 * releases: the switch to A evicts X's working set. Returns its grant (2),
 * marked on X's empty EVICT PLAN. */
uint64_t switched_x_to_a(int wait_ms, int *x, int *a, int *b)
{
    start_server(wait_ms);
    *x = raw_client("x"), *a = raw_client("a");
    if (b)
        *b = raw_client("b");
    dmn_msg_t m;
    x_released(*x, *a, b ? *b : -1);
    int plans[3] = {0};
    read_evictions(*x, &m, plans);
    assert_int_equal(plans[DMN_PLAN_EVICT], 1);
    assert_int_equal(m.u.ranges.seq, 2);
    return m.u.ranges.seq;
}

uint32_t state_in(const dmn_report_t *rep, const char *name)
{
    for (uint32_t i = 0; i < rep->n_tasks; i++)
        if (strcmp(rep->tasks[i].name, name) == 0)
            return rep->tasks[i].state;
    fail_msg("task %s not listed", name);
    return UINT32_MAX;
}

/* Waits (at most 1,000 STATUS queries) until the daemon shows the task
 * named name in state. */
void until_state(const char *name, uint32_t state)
{
    dmn_report_t rep;
    for (int k = 0; k < 1000; k++) {
        assert_int_equal(dmn_report_fetch(path, &rep, 10000), GMUX_OK);
        for (uint32_t i = 0; i < rep.n_tasks; i++)
            if (strcmp(rep.tasks[i].name, name) == 0 && rep.tasks[i].state == state)
                return;
        usleep(1000);
    }
    fail_msg("task %s never in state %u", name, state);
}

/* Shared mode, evicting the holders beside the incoming task: X is granted
 * (1), A beside it (2: X, holding, gets its EVICT orders and is not asked
 * for EVICTED: it keeps them), then X gives the turn back (IDLE), and B asks
 * for it: the switch to B (3) fills B's working set and evicts A, holding. */
void shared_x_gave_back(int wait_ms, int *x, int *a, int *b)
{
    start_mode(wait_ms, 1);
    *x = raw_client("x"), *a = raw_client("a"), *b = raw_client("b");
    dmn_msg_t m;
    send_pending(*x, 1, ws_x);
    read_until(*x, DMN_MSG_GRANT, 0, &m, NULL);
    send_pending(*a, 1, ws_a);
    read_until(*a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 2);
    read_until(*x, DMN_MSG_PLAN, DMN_PLAN_EVICT, &m, NULL);
    assert_int_equal(m.u.ranges.n_ranges, 1);
    assert_int_equal(m.u.ranges.seq, 2);
    dmn_report_t rep;
    assert_true(nothing_for(*x, &rep)); /* a holder is not asked */
    assert_int_equal(rep.mode, DMN_MODE_SHARED);
    assert_int_equal(rep.evict_waits, 0);
    send_simple(*x, DMN_MSG_IDLE);
    until_state("x", DMN_STATE_IDLE);
    send_pending(*b, 1, ws_b);
}

dmn_range_t b_fill_3(void)
{
    return (dmn_range_t){ws_b.base, thold_rec() ? ws_b.len : THOLD_CHUNK};
}

/* shared_x_gave_back, then X's request for EVICTED for B's switch (3) read. */
void shared_x_asked(int wait_ms, int *x, int *a, int *b)
{
    shared_x_gave_back(wait_ms, x, a, b);
    dmn_msg_t m;
    read_evictions(*x, &m, NULL);
    assert_int_equal(m.u.ranges.seq, 3);
}

void l_idle_a_granted(int l, int a, uint64_t g)
{
    dmn_msg_t m;
    send_simple(l, DMN_MSG_IDLE);
    read_evictions(l, &m, NULL);
    assert_int_equal(m.u.ranges.seq, g + 2);
    send_evicted(l, g + 2);
    read_until(a, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, g + 2);
}

/* B, idle after the switch that asked X (3), asks again: its switch (4)
 * neither asks X nor holds (holds in all: the first's, 1, once its GRANT
 * went; 0 when it was void). */
void b_again_unheld(int x, int b, uint64_t holds)
{
    dmn_msg_t m;
    dmn_report_t rep;
    send_pending(b, 2, ws_b);
    read_until(b, DMN_MSG_GRANT, 0, &m, NULL);
    assert_int_equal(m.u.grant.grant_seq, 4);
    assert_true(nothing_for(x, &rep));
    assert_int_equal(rep.evict_waits, holds);
}

/* Makes the socket's directory and the shared memory; 0 on success. */
static int thold_open(void)
{
    if (!mkdtemp(dir))
        return -1;
    shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED)
        return -1;
    unsent_log = &shm->unsent;
    snprintf(path, sizeof(path), "%s/gmuxd.sock", dir);
    return 0;
}

static void thold_close(void)
{
    char lock[160];
    snprintf(lock, sizeof(lock), "%s.lock", path);
    unlink(path);
    unlink(lock);
    rmdir(dir);
    munmap(shm, sizeof(*shm));
}

static int group_rec(void **state)
{
    (void)state;
    thold_place = THOLD_REC;
    return 0;
}

static int group_opt(void **state)
{
    (void)state;
    thold_place = THOLD_OPT;
    thold_capacity = 2 * THOLD_CHUNK;
    return 0;
}

static int group_chunk(void **state)
{
    (void)state;
    thold_place = THOLD_CHUNK;
    thold_capacity = 2 * THOLD_CHUNK;
    return 0;
}

int thold_main(const struct CMUnitTest *tests, size_t n, const struct CMUnitTest *real,
               size_t n_real)
{
    signal(SIGPIPE, SIG_IGN);
    if (thold_open() != 0)
        return 1;
    int rc = n ? _cmocka_run_group_tests("recording", tests, n, group_rec, NULL) : 0;
    if (n_real) {
        rc |= _cmocka_run_group_tests("opt", real, n_real, group_opt, NULL);
        rc |= _cmocka_run_group_tests("chunk", real, n_real, group_chunk, NULL);
    }
    thold_close();
    return rc;
}

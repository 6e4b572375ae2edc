/*
 * The failure paths of gmuxd's connections (src/daemon/server_conn.c) that
 * a real system gives rarely and no other test reached (llvm-cov,
 * 2026-12-03): an allocation that fails (a connection's input buffer at
 * accept, its output queue's growth), a message that does not encode,
 * EINTR from accept4, recv and send, a peer whose credentials cannot be read
 * or whose pid the kernel gives as 0 (another pid namespace), a pid
 * check that kill(pid, 0) answers EPERM (a process of another uid), and
 * accept4 failing for want of descriptors (EMFILE), and a REFUSED the
 * socket takes only part of.
 *
 * The server runs in a forked child (tsrv.h); this binary is linked with
 * -Wl,--wrap for malloc, realloc, accept4, recv, send, getsockopt, kill,
 * dmn_arb_add and dmn_proto_encode_status, and the wrappers inject a fault only in that
 * child and only while a test arms it in a page shared with it (MAP_SHARED),
 * counting what they injected there so each test checks its path was taken.
 * The test's own calls pass through. Each test asserts that the daemon
 * drops only the connection concerned, says why once in its log, and serves
 * the next peer; no timing is asserted (waits are hang guards).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/arbiter.h"
#include "daemon/client.h"
#include "daemon/endpoint.h"
#include "daemon/report.h"
#include "daemon/server.h"
#include "dtest.h"
#include "tfault.h"
#include "tproc.h"
#include "tsrv.h"

/* The faults armed and what was injected; shared with the server child. */
typedef struct ctl {
    pid_t server;        /* first (tfault.h): the wrappers act in this process only */
    int fail_buf_allocs; /* mallocs of DMN_PROTO_MAX_MSG bytes to fail */
    int fail_reallocs;   /* reallocs to fail */
    int eintr;           /* 1: every other accept4, recv and send fails with EINTR */
    int fail_accepts;    /* accept4 calls to fail with EMFILE */
    int peer_pid_zero;   /* SO_PEERCRED reads to answer with pid 0 */
    int peer_fail;       /* SO_PEERCRED reads to fail (EPERM) */
    int fail_status;     /* STATUS encodings to fail (0 bytes) */
    pid_t kill_eperm;    /* kill(this pid, 0) fails with EPERM */
    pid_t kill_watch;    /* kill(this pid, 0) is counted */
    int short_sends;     /* sends of 2 bytes or more to take only their first half */
    int fail_arb_adds;   /* dmn_arb_add calls to fail (as with every task slot taken) */
    /* what happened */
    int bufs_failed, reallocs_failed, status_failed, peers_zeroed, peers_failed;
    int eintr_accept, eintr_recv, eintr_send, accepts, accepts_failed;
    int kills_watched, kills_nonpositive;
    int sends_shortened, arb_adds_failed;
} ctl_t;
_Static_assert(offsetof(ctl_t, server) == 0, "tfault.h: the page starts with the server's pid");

static ctl_t *ctl;

/* Every other call of one function in the server fails with EINTR while
 * ctl->eintr is set; *count counts them. */
static int interrupt(int *toggle, int *count)
{
    if (!ctl || !tfault_get(&ctl->eintr) || !tfault_in_server() || (*toggle ^= 1) == 0)
        return 0;
    tfault_bump(count);
    errno = EINTR;
    return 1;
}

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    if (n == DMN_PROTO_MAX_MSG && tfault_take(&ctl->fail_buf_allocs)) {
        tfault_bump(&ctl->bufs_failed);
        errno = ENOMEM;
        return NULL;
    }
    return __real_malloc(n);
}

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    if (ctl && tfault_take(&ctl->fail_reallocs)) {
        tfault_bump(&ctl->reallocs_failed);
        errno = ENOMEM;
        return NULL;
    }
    return __real_realloc(p, n);
}

int __real_accept4(int fd, struct sockaddr *a, socklen_t *len, int flags);
int __wrap_accept4(int fd, struct sockaddr *a, socklen_t *len, int flags);
int __wrap_accept4(int fd, struct sockaddr *a, socklen_t *len, int flags)
{
    static int toggle;
    if (ctl && tfault_in_server())
        tfault_bump(&ctl->accepts);
    if (ctl && interrupt(&toggle, &ctl->eintr_accept))
        return -1;
    if (ctl && tfault_take(&ctl->fail_accepts)) {
        tfault_bump(&ctl->accepts_failed);
        errno = EMFILE;
        return -1;
    }
    return __real_accept4(fd, a, len, flags);
}

ssize_t __real_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags);
ssize_t __wrap_recv(int fd, void *b, size_t n, int flags)
{
    static int toggle;
    if (ctl && interrupt(&toggle, &ctl->eintr_recv))
        return -1;
    return __real_recv(fd, b, n, flags);
}

ssize_t __real_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags);
ssize_t __wrap_send(int fd, const void *b, size_t n, int flags)
{
    static int toggle;
    if (ctl && interrupt(&toggle, &ctl->eintr_send))
        return -1;
    if (n >= 2 && ctl && tfault_take(&ctl->short_sends)) {
        tfault_bump(&ctl->sends_shortened);
        n /= 2;
    }
    return __real_send(fd, b, n, flags);
}

int __real_getsockopt(int fd, int level, int name, void *v, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *v, socklen_t *len);
int __wrap_getsockopt(int fd, int level, int name, void *v, socklen_t *len)
{
    int peercred = level == SOL_SOCKET && name == SO_PEERCRED;
    if (peercred && ctl && tfault_take(&ctl->peer_fail)) {
        tfault_bump(&ctl->peers_failed);
        errno = EPERM;
        return -1;
    }
    int r = __real_getsockopt(fd, level, name, v, len);
    if (r == 0 && peercred && ctl && tfault_take(&ctl->peer_pid_zero)) {
        ((struct ucred *)v)->pid = 0;
        tfault_bump(&ctl->peers_zeroed);
    }
    return r;
}

int __real_kill(pid_t pid, int sig);
int __wrap_kill(pid_t pid, int sig);
int __wrap_kill(pid_t pid, int sig)
{
    if (sig == 0 && tfault_in_server()) {
        if (pid <= 0)
            tfault_bump(&ctl->kills_nonpositive);
        if (pid == __atomic_load_n(&ctl->kill_watch, __ATOMIC_SEQ_CST))
            tfault_bump(&ctl->kills_watched);
        if (pid == __atomic_load_n(&ctl->kill_eperm, __ATOMIC_SEQ_CST)) {
            errno = EPERM;
            return -1;
        }
    }
    return __real_kill(pid, sig);
}

int __real_dmn_arb_add(dmn_arbiter_t *arb, const dmn_msg_register_t *reg, uint64_t now);
int __wrap_dmn_arb_add(dmn_arbiter_t *arb, const dmn_msg_register_t *reg, uint64_t now);
int __wrap_dmn_arb_add(dmn_arbiter_t *arb, const dmn_msg_register_t *reg, uint64_t now)
{
    if (ctl && tfault_take(&ctl->fail_arb_adds)) {
        tfault_bump(&ctl->arb_adds_failed);
        return -1;
    }
    return __real_dmn_arb_add(arb, reg, now);
}

size_t __real_dmn_proto_encode_status(uint8_t *out, size_t cap, uint32_t seq,
                                      const dmn_msg_status_t *head, const dmn_status_task_t *tasks,
                                      uint32_t n_tasks);
size_t __wrap_dmn_proto_encode_status(uint8_t *out, size_t cap, uint32_t seq,
                                      const dmn_msg_status_t *head, const dmn_status_task_t *tasks,
                                      uint32_t n_tasks);
size_t __wrap_dmn_proto_encode_status(uint8_t *out, size_t cap, uint32_t seq,
                                      const dmn_msg_status_t *head, const dmn_status_task_t *tasks,
                                      uint32_t n_tasks)
{
    if (ctl && tfault_take(&ctl->fail_status)) {
        tfault_bump(&ctl->status_failed);
        return 0;
    }
    return __real_dmn_proto_encode_status(out, cap, seq, head, tasks, n_tasks);
}

static const char *const path = tfault_fix.path; /* the server's socket */
static uint8_t buf[DMN_PROTO_MAX_MSG];
static dmn_report_t rep;

/* Waits (20 s at most, a hang guard) until *v >= want. */
static int reaches(const int *v, int want)
{
    uint64_t until = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (tfault_get(v) < want && !com_deadline_passed(until))
        com_clock_sleep_ns(5 * COM_NS_PER_MS);
    return tfault_get(v) >= want;
}

static int fetch(void)
{
    return dmn_report_fetch(path, &rep, 10000) == GMUX_OK;
}

/* Sends QUERY messages on fd until a send fails (the daemon closed it) or
 * max were sent; reads nothing. Returns how many went. */
static long flood_queries(int fd, long max)
{
    uint8_t q[DMN_PROTO_HDR_SIZE];
    dmn_proto_encode_empty(q, sizeof(q), 1, DMN_MSG_QUERY);
    long n = 0;
    while (n < max) {
        ssize_t w = send(fd, q, sizeof(q), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w != (ssize_t)sizeof(q))
            break;
        n++;
    }
    return n;
}

/* A registered task asks for far more answers than its socket holds and
 * reads none, while every realloc of the daemon fails: its output queue
 * cannot grow, so it is dropped and its task reclaimed, with one warning
 * naming it; the other task and the daemon go on. Until 2026-12-03 the drop
 * was logged at info level only ("leaves: out of memory"), so a daemon at
 * its default level dropped tasks for want of memory without a word. */
static void test_queue_nomem_drops_that_peer(void **state)
{
    (void)state;
    int a = dtest_register(path, "hungry", buf);
    int b = dtest_register(path, "bystander", buf);
    tfault_set(&ctl->fail_reallocs, 1000000);
    long sent = flood_queries(a, 200000);
    assert_true(dtest_closed_by_peer(a, 20.0));
    tfault_set(&ctl->fail_reallocs, 0);
    assert_true(tfault_get(&ctl->reallocs_failed) >= 1);
    assert_true(sent < 200000);
    assert_true(fetch());
    assert_int_equal(rep.n_tasks, 1);
    assert_string_equal(rep.tasks[0].name, "bystander");
    assert_int_equal(rep.reclaimed, 1);
    assert_int_equal(dtest_query_answered(b), 1);
    int said = tfault_log_count("no memory for its output queue");
    if (said != 1)
        fprintf(stderr, "%d warnings of the queue that could not grow\n", said);
    assert_int_equal(said, 1);
    assert_int_equal(tfault_log_count("task 1 (pid"), 1); /* the warning names the task */
    close(a);
    close(b);
    tfault_stop();
}

/* The input buffer of an accepted connection cannot be allocated: that
 * connection is closed, the reason said is memory (until 2026-12-03 it was
 * logged as "too many connections (544)", with one connection open), and
 * the next connection is served. */
/* Arms one fault of *armed for the next connection, which must be closed
 * unanswered (*injected counts 1), the log saying said once and never
 * unsaid; the next connection is served. Stops the server. */
static void refused_then_served(int *armed, const int *injected, const char *said,
                                const char *unsaid)
{
    tfault_set(armed, 1);
    int fd = dtest_connect(path);
    assert_true(dtest_closed_by_peer(fd, 20.0));
    close(fd);
    assert_int_equal(tfault_get(injected), 1);
    int b = dtest_register(path, "next", buf);
    assert_int_equal(dtest_query_answered(b), 1);
    assert_int_equal(tfault_log_count(unsaid), 0);
    assert_int_equal(tfault_log_count(said), 1);
    close(b);
    tfault_stop();
}

static void test_accept_nomem_refuses_that_peer(void **state)
{
    (void)state;
    refused_then_served(&ctl->fail_buf_allocs, &ctl->bufs_failed,
                        "no memory for a connection's buffer", "too many connections");
}

/* A STATUS that does not encode (an internal error): that connection is
 * dropped, the error logged once; a registered task keeps its place. */
static void test_encode_failure_drops_that_peer(void **state)
{
    (void)state;
    int a = dtest_register(path, "keeps", buf);
    tfault_set(&ctl->fail_status, 1);
    int q = dtest_connect(path);
    assert_int_equal(dtest_query_answered(q), 0);
    close(q);
    assert_int_equal(tfault_get(&ctl->status_failed), 1);
    assert_true(fetch());
    assert_int_equal(rep.n_tasks, 1);
    assert_int_equal(rep.reclaimed, 0);
    assert_int_equal(dtest_query_answered(a), 1);
    assert_int_equal(tfault_log_count("did not encode"), 1);
    close(a);
    tfault_stop();
}

/* Opens a client task on the server. */
static dmn_client_t *open_client(const char *name)
{
    dmn_client_opts_t o = {path, name, DMN_CLASS_BATCH, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    dmn_client_t *c = NULL;
    assert_int_equal(dmn_client_open(&o, &c), GMUX_OK);
    assert_false(dmn_client_is_local(c));
    return c;
}

/* Reads STATUS answers on fd until want have come; each whole, in order. */
static void read_statuses(int fd, long want, uint32_t *last_seq)
{
    for (long i = 0; i < want; i++) {
        dmn_msg_t m;
        int type = dtest_read(fd, buf, &m, 60.0);
        if (type != DMN_MSG_STATUS)
            fail_msg("answer %ld: type %d, not STATUS", i, type);
        if (m.hdr.seq <= *last_seq)
            fail_msg("answer %ld: seq %u after %u", i, m.hdr.seq, *last_seq);
        *last_seq = m.hdr.seq;
    }
}

/* Every other accept4, recv and send of the daemon fails with EINTR: each is
 * tried again (the listening socket and the peers' stay ready, so the next
 * poll returns at once), nothing is lost or sent twice, nobody is dropped:
 * two tasks take turns, and a queue of answers that the socket does not
 * take at once arrives whole and in order. */
static void test_eintr_retried(void **state)
{
    (void)state;
    tfault_set(&ctl->eintr, 1);
    dmn_client_t *a = open_client("a"), *b = open_client("b");
    dmn_range_t r = {1 << 20, 1 << 20};
    for (int turn = 0; turn < 4; turn++) {
        dmn_client_t *c = turn % 2 ? b : a;
        assert_int_equal(dmn_client_pending(c, 1, &r, 1), GMUX_OK);
        assert_int_equal(dmn_client_wait_turn(c, 20 * COM_NS_PER_S), GMUX_OK);
        assert_true(dmn_client_holds_turn(c));
        assert_int_equal(dmn_client_idle(c), GMUX_OK);
    }
    int q = dtest_register(path, "reader", buf);
    uint32_t seq = 0;
    for (int round = 0; round < 3; round++) {
        assert_int_equal(flood_queries(q, 3000), 3000); /* ~700 KiB of answers */
        read_statuses(q, 3000, &seq);
    }
    tfault_set(&ctl->eintr, 0);
    assert_true(tfault_get(&ctl->eintr_accept) >= 1);
    assert_true(tfault_get(&ctl->eintr_recv) >= 1);
    assert_true(tfault_get(&ctl->eintr_send) >= 1);
    assert_true(fetch());
    assert_int_equal(rep.n_tasks, 3);
    assert_int_equal(rep.reclaimed, 0);
    assert_false(dmn_client_is_local(a));
    assert_false(dmn_client_is_local(b));
    dmn_client_close(a);
    dmn_client_close(b);
    close(q);
    tfault_stop();
}

/* accept4 fails for want of descriptors (EMFILE) while a connection waits
 * in the listen queue: the daemon says so, serves its tasks meanwhile, and
 * does not call accept4 again and again while it fails: the calls made while
 * its pid check (every 200 ms) runs three times are counted. Until 2026-12-03
 * it polled the listening socket again at once and said nothing: it spun,
 * thousands of calls per pid check. Once accept4 works again the waiting
 * connection is served. */
static void test_accept_failure_paused(void **state)
{
    (void)state;
    int b = dtest_register(path, "seen", buf);
    __atomic_store_n(&ctl->kill_watch, getpid(), __ATOMIC_SEQ_CST);
    tfault_set(&ctl->fail_accepts, 1000000000);
    int fd = dtest_connect(path); /* into the listen queue */
    assert_true(reaches(&ctl->accepts_failed, 1));
    int k = tfault_get(&ctl->kills_watched);
    assert_true(reaches(&ctl->kills_watched, k + 1));
    int before = tfault_get(&ctl->accepts);
    assert_true(reaches(&ctl->kills_watched, k + 4));
    int calls = tfault_get(&ctl->accepts) - before;
    fprintf(stderr, "%d accept4 calls in 3 pid checks while it failed\n", calls);
    assert_true(calls <= 30); /* a 100 ms pause: about 6 */
    assert_int_equal(dtest_query_answered(b), 1);
    tfault_set(&ctl->fail_accepts, 0);
    assert_int_equal(dtest_query_answered(fd), 1);
    assert_true(tfault_log_count("cannot accept a connection") >= 1);
    close(fd);
    close(b);
    tfault_stop();
}

/* A peer whose SO_PEERCRED cannot be read is refused (its uid cannot be
 * checked), and the log says so: until 2026-12-03 it read "refused a
 * connection from uid 4294967295 pid -1", as if such a uid had connected. */
static void test_peer_cred_unreadable_refused(void **state)
{
    (void)state;
    refused_then_served(&ctl->peer_fail, &ctl->peers_failed, "credentials could not be read",
                        "uid 4294967295");
}

/* A task whose pid the kernel gives as 0 (its process in a pid namespace
 * the daemon cannot see) is served; the pid check never asks about pid 0
 * (kill(0, 0) would ask about the daemon's own process group) while it
 * checks the others; its hang-up reclaims it. */
static void test_peer_pid_zero_kept_until_hangup(void **state)
{
    (void)state;
    tfault_set(&ctl->peer_pid_zero, 1);
    int a = dtest_register(path, "unseen", buf);
    assert_int_equal(tfault_get(&ctl->peers_zeroed), 1);
    __atomic_store_n(&ctl->kill_watch, getpid(), __ATOMIC_SEQ_CST);
    int b = dtest_register(path, "seen", buf);    /* this process's pid */
    assert_true(reaches(&ctl->kills_watched, 3)); /* three pid checks */
    assert_true(fetch());
    assert_int_equal(rep.n_tasks, 2);
    for (uint32_t i = 0; i < rep.n_tasks; i++)
        assert_int_equal(rep.tasks[i].pid,
                         strcmp(rep.tasks[i].name, "unseen") == 0 ? 0 : (uint32_t)getpid());
    assert_int_equal(tfault_get(&ctl->kills_nonpositive), 0);
    close(a);
    uint64_t until = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (fetch() && rep.n_tasks != 1 && !com_deadline_passed(until))
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    assert_int_equal(rep.n_tasks, 1);
    assert_string_equal(rep.tasks[0].name, "seen");
    assert_int_equal(rep.reclaimed, 1);
    close(b);
    tfault_stop();
}

/* A task's process exits while its socket lives on elsewhere (made before a
 * fork, as in test_daemon_conn), and kill(pid, 0) answers EPERM: the process
 * exists as far as the daemon can tell (another uid's), so the task is
 * kept; once kill says ESRCH it is dropped and reclaimed. */
static void test_pid_check_eperm_keeps_task(void **state)
{
    (void)state;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* no cmocka here */
        char go;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        memcpy(sa.sun_path, path, strlen(path) + 1);
        dmn_msg_register_t reg = {0, DMN_CLASS_BATCH, 0, 0, 0, "gone"};
        size_t n = dmn_proto_encode_register(buf, sizeof(buf), 1, &reg);
        dmn_msg_t m;
        if (read(p[0], &go, 1) != 1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n ||
            dtest_read(fd, buf, &m, 20.0) != DMN_MSG_REGISTERED)
            _exit(2);
        _exit(0);
    }
    __atomic_store_n(&ctl->kill_eperm, child, __ATOMIC_SEQ_CST);
    __atomic_store_n(&ctl->kill_watch, child, __ATOMIC_SEQ_CST);
    assert_int_equal(write(p[1], "g", 1), 1);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    int seen = tfault_get(&ctl->kills_watched);
    assert_true(reaches(&ctl->kills_watched, seen + 3)); /* three checks since it exited */
    assert_true(fetch());
    assert_int_equal(rep.n_tasks, 1);
    assert_int_equal(rep.reclaimed, 0);
    __atomic_store_n(&ctl->kill_eperm, 0, __ATOMIC_SEQ_CST);
    assert_true(dtest_closed_by_peer(fd, 20.0));
    assert_true(fetch());
    assert_int_equal(rep.n_tasks, 0);
    assert_int_equal(rep.reclaimed, 1);
    close(fd);
    close(p[0]);
    close(p[1]);
    tfault_stop();
}

/* Sends a REGISTER on a new connection (of protocol version 10 when
 * other_version) and returns the connection. */
static int send_register(int other_version)
{
    int fd = dtest_connect(path);
    dmn_msg_register_t reg = {0, DMN_CLASS_BATCH, 0, 0, 0, "refused"};
    size_t n = dmn_proto_encode_register(buf, sizeof(buf), 1, &reg);
    if (other_version)
        buf[4] = 10;
    assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    return fd;
}

/* A REGISTER refused (of another version; or no task slot free) whose
 * REFUSED the socket takes only half of: the peer reads it whole, reason
 * included, then the close. Until 2026-12-03 the connection was closed with
 * the rest still queued: the peer read 42 of 84 bytes, then end of file,
 * and went local without the reason (`bad message from the daemon`). */
static void expect_refused_whole(int other_version, int status, const char *reason)
{
    tfault_set(&ctl->short_sends, 1);
    int fd = send_register(other_version);
    dmn_msg_t m;
    assert_int_equal(dtest_read(fd, buf, &m, 20.0), DMN_MSG_REFUSED);
    assert_int_equal(tfault_get(&ctl->sends_shortened), 1);
    assert_int_equal(tfault_get(&ctl->arb_adds_failed), !other_version);
    assert_int_equal(m.u.refused.status, status);
    assert_string_equal(m.u.refused.reason, reason);
    assert_true(dtest_closed_by_peer(fd, 20.0));
    close(fd);
    int b = dtest_register(path, "next", buf);
    assert_int_equal(dtest_query_answered(b), 1);
    close(b);
    tfault_stop();
}

static void test_refused_version_sent_whole(void **state)
{
    (void)state;
    char why[DMN_REASON_MAX];
    snprintf(why, sizeof(why), "protocol version 10; gmuxd speaks %u", DMN_PROTO_VERSION);
    expect_refused_whole(1, GMUX_ERR_VERSION, why);
}

static void test_refused_full_sent_whole(void **state)
{
    (void)state;
    tfault_set(&ctl->fail_arb_adds, 1);
    expect_refused_whole(0, GMUX_ERR_CAPACITY, "too many tasks");
}

/* A peer asks for far more answers than its socket holds, then sends a
 * REGISTER of another version, and reads nothing: its REFUSED waits behind
 * the answers, and the connection is closed once GMUX_DAEMON_MSG_MS (the
 * bound on a message's arrival) has passed since, said once; another peer
 * is served meanwhile. (The wait below is a hang guard, not a timing.) */
static void test_refused_unread_closed(void **state)
{
    (void)state;
    int fd = dtest_connect(path);
    assert_int_equal(flood_queries(fd, 3000), 3000); /* ~700 KiB of answers */
    dmn_msg_register_t reg = {0, DMN_CLASS_BATCH, 0, 0, 0, "unread"};
    size_t n = dmn_proto_encode_register(buf, sizeof(buf), 1, &reg);
    buf[4] = 10;
    assert_int_equal(send(fd, buf, n, MSG_NOSIGNAL), (ssize_t)n);
    int b = dtest_register(path, "served", buf);
    assert_int_equal(dtest_query_answered(b), 1);
    struct pollfd p = {fd, 0, 0}; /* POLLHUP: the daemon's close, nothing read */
    assert_int_equal(poll(&p, 1, 30000), 1);
    assert_true(p.revents & POLLHUP);
    assert_int_equal(tfault_log_count("did not read its REFUSED"), 1);
    close(fd);
    close(b);
    tfault_stop();
}

int main(void)
{
    ctl = tfault_init(sizeof(*ctl), "/tmp/gmux-sc-XXXXXX");
    if (!ctl)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_queue_nomem_drops_that_peer, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_accept_nomem_refuses_that_peer, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_encode_failure_drops_that_peer, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_eintr_retried, tfault_setup, tfault_teardown),
        cmocka_unit_test_setup_teardown(test_accept_failure_paused, tfault_setup, tfault_teardown),
        cmocka_unit_test_setup_teardown(test_peer_cred_unreadable_refused, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_peer_pid_zero_kept_until_hangup, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_pid_check_eperm_keeps_task, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_refused_version_sent_whole, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_refused_full_sent_whole, tfault_setup,
                                        tfault_teardown),
        cmocka_unit_test_setup_teardown(test_refused_unread_closed, tfault_setup, tfault_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tfault_fini();
    return rc;
}

/* Tests of the rendezvous server's write side (rdv.c): its sockets send at
 * once (TCP_NODELAY), a rank announced as left that then fails is announced
 * again as died, the launcher's hook runs before a death notice leaves, and
 * a rank that stops reading its socket gets its frames
 * from a bounded queue as the socket takes them, the other ranks are served
 * meanwhile, and the stuck rank is dropped and announced dead when its queue
 * is full or its oldest frame is past its send deadline. The server used to
 * write each frame with a blocking write bounded by 5 s, so one such rank
 * held every other, and was then closed without being announced: the next
 * collective never ended.
 *
 * No verdict here depends on how the host schedules the test's threads:
 * the server's clock stands unless a test moves it, the test steps the
 * server until what it waits for has happened (a rank joined, a notice
 * sent and acknowledged) instead of for a while, and the one real-time
 * limit, HANG_NS, only ends a hang. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "net/boot.h"
#include "net/boot_proto.h"
#include "net/rdv.h"
#include "trdv.h"

#define MAX_RANKS  4
#define MAX_ROUNDS 16
/* The one real-time limit of these tests, a hang guard: whatever the host
 * does, only a hang runs past it (the whole file took 35 s at most under
 * TSan with two `yes` per core). The ranks and the server wait for each
 * other, never for a time. */
#define HANG_NS (100 * COM_NS_PER_S)

static char hostport[64];

/* Rank 0, the one that never reads: a plain socket with a small receive
 * buffer, so little of what the server sends fits in it. It contributes to
 * `rounds` allgathers, each one once every client finished the one before
 * (a rank does not start a collective before the previous one ended). */
typedef struct stuck {
    int fd;
    int rounds;
    uint32_t blob;
    atomic_bool stop;
} stuck_t;

/* Ranks 1.. : ordinary clients doing allgathers of `blob` bytes until one
 * fails or max_rounds are done. */
typedef struct client {
    int rank, size;
    uint32_t blob;
    int max_rounds;
    atomic_int ok_rounds; /* allgathers that returned GMUX_OK with the right data */
    gmux_status_t last;   /* the status of the last allgather */
    bool bad_data, dead0;
    atomic_bool done;
} client_t;

static client_t clients[MAX_RANKS];
static int nclients;

static int clients_min_rounds(void)
{
    int m = MAX_ROUNDS;
    for (int i = 0; i < nclients; i++) {
        int k = atomic_load(&clients[i].ok_rounds);
        m = k < m ? k : m;
    }
    return m;
}

static bool clients_done(void)
{
    for (int i = 0; i < nclients; i++)
        if (!atomic_load(&clients[i].done))
            return false;
    return true;
}

/* Writes all of buf, or gives up when the server has closed the socket or
 * the test stops. */
static bool stuck_write(stuck_t *s, const char *buf, size_t len)
{
    for (size_t off = 0; off < len;) {
        if (atomic_load(&s->stop))
            return false;
        ssize_t n = send(s->fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return false; /* dropped by the server */
        struct pollfd p = {.fd = s->fd, .events = POLLOUT};
        poll(&p, 1, 10);
    }
    return true;
}

static void *stuck_main(void *arg)
{
    stuck_t *s = arg;
    size_t len = sizeof(net_boot_hdr_t) + s->blob;
    char *frame = calloc(1, len); /* rank 0's blob is all zeros */
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_ALLGATHER, 0, s->blob};
    memcpy(frame, &h, sizeof(h));
    for (int round = 0; frame && round < s->rounds; round++) {
        while (clients_min_rounds() < round && !atomic_load(&s->stop))
            com_clock_sleep_ns(COM_NS_PER_MS);
        if (clients_min_rounds() < round || !stuck_write(s, frame, len))
            break;
    }
    free(frame);
    return NULL;
}

static uint8_t pattern(int rank, int round)
{
    return (uint8_t)(rank * 16 + round + 1);
}

static void *client_main(void *arg)
{
    client_t *c = arg;
    uint64_t dl = UINT64_MAX; /* a hang: the test closes the server (run_job) */
    net_boot_t *b = NULL;
    c->last = net_boot_open(c->rank, c->size, hostport, dl, &b);
    char *mine = malloc(c->blob);
    for (int round = 0; c->last == GMUX_OK && mine && round < c->max_rounds; round++) {
        memset(mine, pattern(c->rank, round), c->blob);
        uint8_t *all = NULL;
        c->last = net_boot_allgather(b, mine, c->blob, (void **)&all, dl);
        if (c->last != GMUX_OK)
            break;
        for (int r = 0; r < c->size; r++) {
            const uint8_t *q = all + (size_t)r * c->blob;
            uint8_t want = r == 0 ? 0 : pattern(r, round);
            c->bad_data |= q[0] != want || q[c->blob / 2] != want || q[c->blob - 1] != want;
        }
        free(all);
        atomic_fetch_add(&c->ok_rounds, 1);
    }
    free(mine);
    if (b) {
        c->dead0 = net_boot_dead(b, 0);
        net_boot_close(b, true);
    }
    atomic_store(&c->done, true);
    return NULL;
}

/* a rank's plain socket with a small receive buffer: little of what the
 * server sends fits in it */
static int stuck_connect(int port, int rank, int size)
{
    return rank_connect(port, rank, size, 4096);
}

/* The server's clock (net_rdv_set_clock): moved by this thread alone,
 * which steps the server; it stands unless a test moves it. */
static uint64_t server_ns;

static uint64_t server_now(void *arg)
{
    (void)arg;
    return server_ns;
}

/* A server for size ranks on the standing clock; hostport names it. No
 * deadline of the server passes unless the test moves the clock. */
static net_rdv_t *server(int size)
{
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", size, &rdv, NULL, 0), GMUX_OK);
    server_ns = 1000 * COM_NS_PER_S;
    net_rdv_set_clock(rdv, server_now, NULL);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", net_rdv_port(rdv));
    return rdv;
}

/* Steps the server until cond holds; past the hang guard the test fails. */
#define STEP_UNTIL(rdv, cond)                                                                      \
    do {                                                                                           \
        uint64_t guard_ = com_deadline_after_ns(HANG_NS);                                          \
        while (!(cond) && !com_deadline_passed(guard_))                                            \
            net_rdv_step(rdv, 10);                                                                 \
        assert_true(cond);                                                                         \
    } while (0)

static bool all_joined(const net_rdv_t *rdv, int size)
{
    for (int r = 0; r < size; r++)
        if (!net_rdv_joined(rdv, r))
            return false;
    return true;
}

/* Waits until fd's peer has taken every byte written into fd (none left
 * unacknowledged, SIOCOUTQ): on loopback they are in its receive queue. */
static void wait_taken(int fd)
{
    uint64_t guard = com_deadline_after_ns(HANG_NS);
    for (;;) {
        int unacked = -1;
        assert_int_equal(ioctl(fd, SIOCOUTQ, &unacked), 0);
        if (unacked == 0)
            return;
        assert_false(com_deadline_passed(guard));
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
}

/* The server's clock when rank 0 was announced gone (0: it was not). */
static uint64_t gone0_ns;

static void note_gone(void *arg, int rank)
{
    (void)arg;
    if (rank == 0 && !gone0_ns)
        gone0_ns = server_ns;
}

/* Runs a job of size ranks: rank 0 stuck (contributing stuck_rounds times),
 * the others clients of max_rounds allgathers of blob bytes; the server is
 * stepped by this thread until every client is done. Its clock stands
 * until every client has its first result, then moves tick_ns a step until
 * rank 0 is gone (0: it stands throughout): a client thread the host leaves
 * waiting is never taken for a rank that stopped reading, nor its frame
 * for one that stalled. Past the hang guard the server is closed, which
 * ends every client's wait, and the test fails. */
static void run_job(int size, uint32_t blob, int stuck_rounds, int max_rounds, uint64_t send_ns,
                    size_t queue_max, uint64_t tick_ns)
{
    net_rdv_t *rdv = server(size);
    net_rdv_set_limits(rdv, send_ns, queue_max);
    gone0_ns = 0;
    net_rdv_on_gone(rdv, note_gone, NULL);
    stuck_t s = {
        .fd = stuck_connect(net_rdv_port(rdv), 0, size), .rounds = stuck_rounds, .blob = blob};
    nclients = size - 1;
    pthread_t th[MAX_RANKS], st;
    for (int i = 0; i < nclients; i++) {
        clients[i] =
            (client_t){.rank = i + 1, .size = size, .blob = blob, .max_rounds = max_rounds};
        pthread_create(&th[i], NULL, client_main, &clients[i]);
    }
    pthread_create(&st, NULL, stuck_main, &s);
    uint64_t guard = com_deadline_after_ns(HANG_NS);
    bool hung = false;
    while (!clients_done() && !(hung = com_deadline_passed(guard))) {
        if (clients_min_rounds() >= 1 && !gone0_ns)
            server_ns += tick_ns;
        net_rdv_step(rdv, 10);
    }
    atomic_store(&s.stop, true);
    net_rdv_destroy(rdv);
    pthread_join(st, NULL);
    for (int i = 0; i < nclients; i++)
        pthread_join(th[i], NULL);
    close(s.fd);
    assert_false(hung);
}

/* A rank that never reads, the server's clock standing (only its queue
 * can get it dropped): the others' allgathers go on while its results pile up (about 3 MiB
 * each, little of which its socket takes), until its queue passes 8 MiB.
 * Then it is dropped and announced dead, and the round that filled the
 * queue is still delivered to the others before the notice. Rounds 1 to 3
 * always fit: at most 6 MiB is queued when the third result is added; and
 * 16 rounds (48 MiB) are far more than the socket buffers take. */
static void test_stuck_reader_holds_nobody(void **state)
{
    (void)state;
    run_job(3, 1u << 20, MAX_ROUNDS, MAX_ROUNDS, 60 * COM_NS_PER_S, 8u << 20, 0);
    assert_int_equal(gone0_ns, 1000 * COM_NS_PER_S); /* dropped, the clock standing */
    for (int i = 0; i < nclients; i++) {
        client_t *c = &clients[i];
        assert_false(c->bad_data);
        assert_true(atomic_load(&c->ok_rounds) >= 3);
        assert_true(atomic_load(&c->ok_rounds) < MAX_ROUNDS);
        assert_int_equal(c->last, GMUX_ERR_PEER);
        assert_true(c->dead0);
    }
}

/* A rank that never reads is dropped once it has taken nothing for the send
 * deadline (1 s here, on the server's clock, which moves once the client
 * has its result), and announced dead: the collective the others start
 * next fails with GMUX_ERR_PEER instead of waiting for it. Its one
 * contribution makes a 16 MiB result, four times what a socket's send
 * buffer grows to by default (tcp_wmem). On the real clock the client, a
 * thread of this test, was dropped in its first round under load (two
 * `yes` per core, the test at nice 19); its clients waited 30 s of real
 * time, and the clock moved on after rank 0 was gone, so that a client
 * the host kept waiting could be dropped in the middle of its next frame. */
static void test_stuck_reader_expires(void **state)
{
    (void)state;
    run_job(2, 8u << 20, 1, 2, COM_NS_PER_S, 0, 100 * COM_NS_PER_MS);
    /* not before a whole send deadline of the clock moving */
    assert_true(gone0_ns >= 1000 * COM_NS_PER_S + COM_NS_PER_S);
    client_t *c = &clients[0];
    assert_false(c->bad_data);
    assert_int_equal(atomic_load(&c->ok_rounds), 1);
    assert_int_equal(c->last, GMUX_ERR_PEER);
    assert_true(c->dead0);
}

/* A round whose result would pass NET_BOOT_MAX_LEN (two 40 MiB blobs) fails
 * on every rank with GMUX_ERR_CAPACITY, and the next round works. */
typedef struct big {
    int rank;
    gmux_status_t first, second;
    bool second_right;
} big_t;

static atomic_int big_done;

static void *big_main(void *arg)
{
    big_t *g = arg;
    uint64_t dl = UINT64_MAX; /* a hang: the test closes the server */
    net_boot_t *b = NULL;
    g->first = g->second = net_boot_open(g->rank, 2, hostport, dl, &b);
    if (g->first != GMUX_OK) {
        atomic_fetch_add(&big_done, 1);
        return NULL;
    }
    uint32_t len = 40u << 20;
    char *mine = calloc(1, len);
    void *all = NULL;
    g->first = mine ? net_boot_allgather(b, mine, len, &all, dl) : GMUX_ERR_NOMEM;
    free(all);
    free(mine);
    uint32_t small = (uint32_t)g->rank + 10, *both = NULL;
    g->second = net_boot_allgather(b, &small, sizeof(small), (void **)&both, dl);
    g->second_right = g->second == GMUX_OK && both[0] == 10 && both[1] == 11;
    free(both);
    net_boot_close(b, true);
    atomic_fetch_add(&big_done, 1);
    return NULL;
}

static void test_result_too_large(void **state)
{
    (void)state;
    /* the server's clock stands: a 40 MiB contribution the host lets a
     * thread write slowly is not late (under load it was, past 5 s) */
    net_rdv_t *rdv = server(2);
    big_t g[2] = {{.rank = 0}, {.rank = 1}};
    pthread_t th[2];
    atomic_store(&big_done, 0);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, big_main, &g[i]);
    uint64_t guard = com_deadline_after_ns(HANG_NS);
    bool hung = false;
    while (atomic_load(&big_done) < 2 && !(hung = com_deadline_passed(guard)))
        net_rdv_step(rdv, 10);
    net_rdv_destroy(rdv); /* a hang: this ends the ranks' waits */
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_false(hung);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(g[i].first, GMUX_ERR_CAPACITY);
        assert_int_equal(g[i].second, GMUX_OK);
        assert_true(g[i].second_right);
    }
}

/* A rank dropped because a frame for it could not be queued or sent still
 * has its last words read first: a rank that said BYE and closed its
 * socket while notices for it were unread (so sending it the next one
 * fails) finalized in order. The server used to drop such a rank at its
 * next step without reading the socket, so the launcher, reaping it later,
 * found no BYE and counted a survivor of a death as a failure of its own
 * (test_net_multi test_peer_killed, once in a loaded run). A queue limit of
 * one byte makes the failure certain: the death notice for rank 1 cannot
 * be queued for rank 0. */
static void test_bye_read_before_drop(void **state)
{
    (void)state;
    net_rdv_t *rdv = server(2);
    net_rdv_set_limits(rdv, 0, 1);
    int fd[2];
    for (int r = 0; r < 2; r++)
        fd[r] = stuck_connect(net_rdv_port(rdv), r, 2);
    STEP_UNTIL(rdv, all_joined(rdv, 2));
    net_boot_hdr_t bye = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_BYE, 0, 0};
    assert_int_equal(write(fd[0], &bye, sizeof(bye)), (ssize_t)sizeof(bye));
    wait_taken(fd[0]); /* the BYE is in the server's socket */
    close(fd[0]);
    net_rdv_rank_exited(rdv, 1, true); /* rank 1 died: rank 0 must be told */
    net_rdv_step(rdv, 10);
    net_rdv_drain(rdv, 0);
    assert_true(net_rdv_said_bye(rdv, 0));
    close(fd[1]);
    net_rdv_destroy(rdv);
}

/* The server writes a frame's header and payload with two sends; with
 * Nagle's algorithm on its sockets the payload waited for the ACK of the
 * header, which the rank delays (about 40 ms on Linux), in every round: a
 * job's start (an allgather and two barriers) and its end (a barrier)
 * each took that long per collective. The accepted sockets must have
 * TCP_NODELAY, as the ranks' own ends do (sock.c). */
static void test_server_sockets_nodelay(void **state)
{
    (void)state;
    net_rdv_t *rdv = server(2);
    int port = net_rdv_port(rdv);
    int fd[2];
    for (int r = 0; r < 2; r++)
        fd[r] = stuck_connect(port, r, 2);
    STEP_UNTIL(rdv, all_joined(rdv, 2));
    for (int r = 0; r < 2; r++) {
        int sfd = server_end(port, fd[r]);
        assert_true(sfd >= 0);
        int nodelay = 0;
        socklen_t len = sizeof(nodelay);
        assert_int_equal(getsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
        assert_int_not_equal(nodelay, 0);
    }
    for (int r = 0; r < 2; r++)
        close(fd[r]);
    net_rdv_destroy(rdv);
}

/* What on_gone saw: how often each rank was announced gone, and whether
 * rank 0 could already read a frame then. */
static int gone_calls[3];
static bool gone_told_first;
static int gone_watch_fd;

static void on_gone(void *arg, int rank)
{
    (void)arg;
    gone_calls[rank]++;
    struct pollfd p = {.fd = gone_watch_fd, .events = POLLIN};
    gone_told_first |= poll(&p, 1, 0) > 0;
}

/* A server (standing clock) with 3 ranks joined, fd their plain sockets,
 * on_gone watching rank 0's; *sfd0_p: the server's end of rank 0's. */
static net_rdv_t *start3(int fd[3], int *sfd0_p)
{
    net_rdv_t *rdv = server(3);
    net_rdv_on_gone(rdv, on_gone, NULL);
    memset(gone_calls, 0, sizeof(gone_calls));
    gone_told_first = false;
    for (int r = 0; r < 3; r++)
        fd[r] = stuck_connect(net_rdv_port(rdv), r, 3);
    gone_watch_fd = fd[0];
    STEP_UNTIL(rdv, all_joined(rdv, 3));
    *sfd0_p = server_end(net_rdv_port(rdv), fd[0]);
    assert_true(*sfd0_p >= 0);
    return rdv;
}

/* Reads every frame the server has sent rank 0 so far: a step writes what
 * it queued (small notices, which its socket takes whole), and once the
 * server's end sfd0 holds nothing unacknowledged all of it is in fd. *why_p:
 * the payload of the last DEAD frame about `about` (0 for none: it died;
 * NET_BOOT_GONE_LEFT), -1 if there was none. */
static void last_word_about(net_rdv_t *rdv, int sfd0, int fd, uint32_t about, long *why_p)
{
    net_rdv_step(rdv, 0);
    wait_taken(sfd0);
    *why_p = -1;
    for (;;) {
        int avail = 0;
        assert_int_equal(ioctl(fd, FIONREAD, &avail), 0);
        if (avail == 0)
            return;
        net_boot_hdr_t h;
        uint32_t why = 0;
        assert_int_equal(recv(fd, &h, sizeof(h), MSG_WAITALL), (ssize_t)sizeof(h));
        assert_true(h.len <= sizeof(why));
        if (h.len)
            assert_int_equal(recv(fd, &why, h.len, MSG_WAITALL), (ssize_t)h.len);
        if (h.type == NET_BOOT_DEAD && h.rank == about)
            *why_p = h.len ? (long)why : 0;
    }
}

/* A rank that finalized after a death (BYE, then its socket closes, which
 * the server announces as "left after a death") and then exits with a
 * failure must reach the others as failed: the launcher's report of its
 * exit comes after the announcement, which used to stand. */
static void test_failed_exit_after_bye_not_left(void **state)
{
    (void)state;
    int fd[3], sfd0;
    net_rdv_t *rdv = start3(fd, &sfd0);
    close(fd[2]);
    net_rdv_rank_exited(rdv, 2, true); /* rank 2 died */
    net_boot_hdr_t bye = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_BYE, 1, 0};
    assert_int_equal(write(fd[1], &bye, sizeof(bye)), (ssize_t)sizeof(bye));
    close(fd[1]);
    STEP_UNTIL(rdv, gone_calls[1] == 1); /* its closed socket seen */
    long why;
    last_word_about(rdv, sfd0, fd[0], 1, &why);
    assert_int_equal(why, NET_BOOT_GONE_LEFT); /* so far it left in order */
    net_rdv_drain(rdv, 1);
    assert_true(net_rdv_said_bye(rdv, 1));
    net_rdv_rank_exited(rdv, 1, true); /* then exited with a failure */
    last_word_about(rdv, sfd0, fd[0], 1, &why);
    assert_int_equal(why, 0);
    close(fd[0]);
    net_rdv_destroy(rdv);
}

/* The launcher's hook (it removes a dead rank's files in /dev/shm) runs
 * once per rank gone, before the others are told: for a rank whose
 * connection closed without BYE (seen by the server first) and for one
 * whose failed exit the launcher reports first. */
static void test_on_gone_before_notice(void **state)
{
    (void)state;
    int fd[3], sfd0;
    net_rdv_t *rdv = start3(fd, &sfd0);
    close(fd[2]);
    STEP_UNTIL(rdv, gone_calls[2] == 1);
    net_rdv_rank_exited(rdv, 2, true);
    long why;
    last_word_about(rdv, sfd0, fd[0], 2, &why); /* read: rank 0's socket is empty again */
    assert_int_equal(why, 0);
    net_rdv_rank_exited(rdv, 1, true);
    last_word_about(rdv, sfd0, fd[0], 1, &why);
    assert_int_equal(why, 0);
    assert_int_equal(gone_calls[0], 0);
    assert_int_equal(gone_calls[1], 1);
    assert_int_equal(gone_calls[2], 1);
    assert_false(gone_told_first);
    close(fd[0]);
    close(fd[1]);
    net_rdv_destroy(rdv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_reader_holds_nobody),
        cmocka_unit_test(test_stuck_reader_expires),
        cmocka_unit_test(test_result_too_large),
        cmocka_unit_test(test_bye_read_before_drop),
        cmocka_unit_test(test_server_sockets_nodelay),
        cmocka_unit_test(test_failed_exit_after_bye_not_left),
        cmocka_unit_test(test_on_gone_before_notice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of the bootstrap: the rendezvous server (rdv) with client threads
 * (boot): allgather, barrier, death notices, and a client that cannot connect. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "net/boot.h"
#include "net/boot_proto.h"
#include "net/rdv.h"

#define N 4

static char hostport[64];
static atomic_int phase_done;
static gmux_status_t after_death[N];

static void *client(void *arg)
{
    int rank = (int)(intptr_t)arg;
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(20 * COM_NS_PER_S);
    assert_int_equal(net_boot_open(rank, N, hostport, dl, &b), GMUX_OK);
    for (int round = 0; round < 3; round++) {
        uint64_t mine[2] = {(uint64_t)rank * 100 + (uint64_t)round, 7};
        uint64_t *all = NULL;
        assert_int_equal(net_boot_allgather(b, mine, sizeof(mine), (void **)&all, dl), GMUX_OK);
        for (int r = 0; r < N; r++) {
            assert_true(all[2 * r] == (uint64_t)r * 100 + (uint64_t)round);
            assert_true(all[2 * r + 1] == 7);
        }
        free(all);
    }
    assert_int_equal(net_boot_barrier(b, dl), GMUX_OK);
    atomic_fetch_add(&phase_done, 1);
    if (rank == N - 1) {
        net_boot_close(b, false); /* dies without BYE */
        return NULL;
    }
    /* the others enter a barrier the dead rank never joins */
    after_death[rank] = net_boot_barrier(b, dl);
    if (after_death[rank] == GMUX_ERR_PEER)
        assert_true(net_boot_dead(b, N - 1) && !net_boot_dead(b, 0) && net_boot_any_dead(b));
    net_boot_close(b, true);
    return NULL;
}

static void test_collectives_and_death(void **state)
{
    (void)state;
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", N, &rdv), GMUX_OK);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", net_rdv_port(rdv));
    pthread_t th[N];
    for (intptr_t r = 0; r < N; r++)
        pthread_create(&th[r], NULL, client, (void *)r);
    uint64_t dl = com_deadline_after_ns(30 * COM_NS_PER_S);
    while (atomic_load(&phase_done) < N && !com_deadline_passed(dl))
        net_rdv_step(rdv, 10);
    pthread_join(th[N - 1], NULL);
    /* the launcher notices the exit (as waitpid would) */
    for (int i = 0; i < 20; i++)
        net_rdv_step(rdv, 10);
    net_rdv_rank_exited(rdv, N - 1, true);
    for (int i = 0; i < 50; i++)
        net_rdv_step(rdv, 10);
    for (int r = 0; r < N - 1; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < N - 1; r++)
        assert_int_equal(after_death[r], GMUX_ERR_PEER);
    for (int r = 0; r < N - 1; r++)
        assert_true(net_rdv_said_bye(rdv, r));
    assert_false(net_rdv_said_bye(rdv, N - 1));
    net_rdv_destroy(rdv);
}

static void test_connect_times_out(void **state)
{
    (void)state;
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", 1, &rdv), GMUX_OK);
    char hp[64];
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", net_rdv_port(rdv));
    net_rdv_destroy(rdv); /* nobody listens there any more */
    net_boot_t *b;
    uint64_t t0 = com_clock_ns();
    gmux_status_t st = net_boot_open(0, 1, hp, com_deadline_after_ns(200 * COM_NS_PER_MS), &b);
    assert_true(st == GMUX_ERR_TIMEOUT || st == GMUX_ERR_PEER);
    assert_true(com_clock_ns() - t0 < 10 * COM_NS_PER_S);
    assert_int_equal(net_boot_open(0, 1, "not-an-address", 0, &b), GMUX_ERR_INVALID);
}

/* A rank's BYE may still sit in its socket when the launcher sees it exit:
 * net_rdv_drain reads it, so a clean exit is not announced as a death. */
static atomic_int bye_opened, bye_go, bye_closed;

static void *bye_client(void *arg)
{
    int rank = (int)(intptr_t)arg;
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(20 * COM_NS_PER_S);
    assert_int_equal(net_boot_open(rank, 2, hostport, dl, &b), GMUX_OK);
    atomic_fetch_add(&bye_opened, 1);
    while (!atomic_load(&bye_go) && !com_deadline_passed(dl))
        com_clock_sleep_ns(COM_NS_PER_MS);
    if (rank == 1) {
        net_boot_close(b, true);
        atomic_store(&bye_closed, 1);
        return NULL;
    }
    while (atomic_load(&bye_go) < 2 && !com_deadline_passed(dl))
        com_clock_sleep_ns(COM_NS_PER_MS);
    net_boot_close(b, true);
    return NULL;
}

static void test_bye_read_at_exit(void **state)
{
    (void)state;
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", 2, &rdv), GMUX_OK);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", net_rdv_port(rdv));
    pthread_t th[2];
    for (intptr_t r = 0; r < 2; r++)
        pthread_create(&th[r], NULL, bye_client, (void *)r);
    uint64_t dl = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (atomic_load(&bye_opened) < 2 && !com_deadline_passed(dl))
        net_rdv_step(rdv, 10);
    for (int i = 0; i < 20; i++) /* both connections taken in */
        net_rdv_step(rdv, 10);
    atomic_store(&bye_go, 1);
    pthread_join(th[1], NULL); /* rank 1 said BYE and exited; nothing read since */
    assert_int_equal(atomic_load(&bye_closed), 1);
    net_rdv_drain(rdv, 1);
    assert_true(net_rdv_said_bye(rdv, 1));
    assert_false(net_rdv_said_bye(rdv, 0));
    atomic_store(&bye_go, 2);
    pthread_join(th[0], NULL);
    net_rdv_destroy(rdv);
}

/* A connection to the rendezvous port that is not a rank (a port scanner, a
 * stale client), by a plain socket. */
static int stray_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static atomic_int solo_done;
static gmux_status_t solo_st;
static uint64_t solo_ns;

/* Rank 0 of a one-rank job: joins and passes a barrier. */
static void *solo_client(void *arg)
{
    (void)arg;
    uint64_t t0 = com_clock_ns();
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(15 * COM_NS_PER_S);
    solo_st = net_boot_open(0, 1, hostport, dl, &b);
    if (solo_st == GMUX_OK) {
        solo_st = net_boot_barrier(b, dl);
        net_boot_close(b, true);
    }
    solo_ns = com_clock_ns() - t0;
    atomic_store(&solo_done, 1);
    return NULL;
}

static void run_solo(net_rdv_t *rdv)
{
    atomic_store(&solo_done, 0);
    pthread_t th;
    pthread_create(&th, NULL, solo_client, NULL);
    while (!atomic_load(&solo_done))
        net_rdv_step(rdv, 10);
    pthread_join(th, NULL);
}

/* Connections that never say HELLO must not keep ranks out: the server
 * takes in at most 256 connections without HELLO, and those used to stay
 * forever, so once that many were open no rank was accepted any more and
 * the job timed out. */
static void test_silent_connections_expire(void **state)
{
    (void)state;
    enum { STRAYS = 256 };
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", 1, &rdv), GMUX_OK);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", net_rdv_port(rdv));
    int fds[STRAYS];
    for (int i = 0; i < STRAYS; i++) {
        fds[i] = stray_connect(net_rdv_port(rdv));
        net_rdv_step(rdv, 10); /* takes it in */
    }
    run_solo(rdv);
    assert_int_equal(solo_st, GMUX_OK);
    for (int i = 0; i < STRAYS; i++)
        close(fds[i]);
    net_rdv_destroy(rdv);
}

/* A connection whose first frame announces a large payload (no HELLO is
 * that long) is dropped at its header: the server used to allocate the
 * announced bytes and wait for them, its one thread stalled for 5 s. */
static void test_oversized_hello_rejected(void **state)
{
    (void)state;
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", 1, &rdv), GMUX_OK);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", net_rdv_port(rdv));
    int fd = stray_connect(net_rdv_port(rdv));
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_HELLO, 0, NET_BOOT_MAX_LEN};
    assert_int_equal(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
    net_rdv_step(rdv, 10); /* takes it in */
    run_solo(rdv);
    assert_int_equal(solo_st, GMUX_OK);
    assert_true(solo_ns < 2 * COM_NS_PER_S);
    close(fd);
    net_rdv_destroy(rdv);
}

/* Says HELLO as `rank` of a `size`-rank job on a plain socket. */
static void raw_hello(int fd, uint32_t rank, uint32_t size)
{
    struct {
        net_boot_hdr_t h;
        uint32_t size;
    } m = {{NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_HELLO, rank, 4}, size};
    assert_int_equal(write(fd, &m, sizeof(m)), (ssize_t)sizeof(m));
}

/* Whether the server closed fd (read gives end of file) within a few steps. */
static bool closed_by_server(net_rdv_t *rdv, int fd)
{
    for (int i = 0; i < 50; i++) {
        net_rdv_step(rdv, 10);
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 0)
            return true;
        if (n > 0)
            fail_msg("the server sent a byte to a connection it should not talk to");
    }
    return false;
}

/* A rank joins once: after its connection closed (it died), a new HELLO with
 * its number is refused, else a stranger would take a dead rank's place in
 * the collectives that follow. */
static void test_dead_rank_cannot_rejoin(void **state)
{
    (void)state;
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", 2, &rdv), GMUX_OK);
    int first = stray_connect(net_rdv_port(rdv));
    raw_hello(first, 1, 2);
    assert_false(closed_by_server(rdv, first)); /* taken in as rank 1 */
    close(first);                               /* rank 1 dies */
    for (int i = 0; i < 5; i++)
        net_rdv_step(rdv, 10);
    int second = stray_connect(net_rdv_port(rdv));
    raw_hello(second, 1, 2);
    assert_true(closed_by_server(rdv, second));
    close(second);
    net_rdv_destroy(rdv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_and_death),
        cmocka_unit_test(test_connect_times_out),
        cmocka_unit_test(test_bye_read_at_exit),
        cmocka_unit_test(test_silent_connections_expire),
        cmocka_unit_test(test_oversized_hello_rejected),
        cmocka_unit_test(test_dead_rank_cannot_rejoin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

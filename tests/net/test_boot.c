/* Tests of the bootstrap: the rendezvous server (rdv) with client threads
 * (boot): allgather, barrier, death notices, BYE, and a client that cannot
 * connect (strays and broken frames: test_boot_stray.c). */
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
#include "net/sock.h"
#include "tboot.h"
#include "tproc.h"

#define N 4

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
    net_rdv_t *rdv = rdv_start(N);
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

/* Child of test_connect_times_out: net_boot_open to hostport, where every
 * connection is refused, under a 200 ms deadline. Exits 0 when it said
 * TIMEOUT once the deadline had passed; 1 when it connected, 2 for any other
 * status, 3 for a TIMEOUT said before the deadline. */
static int open_refused(int index, void *arg)
{
    (void)index;
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(200 * COM_NS_PER_MS);
    gmux_status_t st = net_boot_open(0, 1, arg, dl, &b);
    if (st == GMUX_OK)
        return 1;
    if (st != GMUX_ERR_TIMEOUT) {
        fprintf(stderr, "net_boot_open of a refused address: %s\n", gmux_status_name(st));
        return 2;
    }
    return com_deadline_passed(dl) ? 0 : 3;
}

/* A rank whose launcher does not listen (yet) retries until its deadline and
 * then says TIMEOUT: the deadline is its only way out. The port is held by a
 * socket bound but not listening, so every connect is refused and no other
 * process takes the port meanwhile. The call runs in a child given 60 s, a
 * hang guard only: one that ignored its deadline would be killed then
 * (TPROC_TIMED_OUT), one that gave up early would say so (3, or 2 for another
 * error), however loaded the machine. */
static void test_connect_times_out(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    char hp[64];
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", ntohs(sa.sin_port));
    int st = TPROC_NOT_RUN;
    tproc_fork_all(1, open_refused, hp, 60.0, &st);
    close(fd);
    if (st != 0)
        fail_msg("net_boot_open under a 200 ms deadline: %s (status %d)",
                 st == TPROC_TIMED_OUT ? "still running after 60 s"
                 : st == 3             ? "TIMEOUT before its deadline"
                                       : "connected or failed otherwise",
                 st);
    net_boot_t *b;
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
    net_rdv_t *rdv = rdv_start(2);
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

/* A rank that says BYE after another died (a survivor's finalize, which no
 * longer waits for the others in a barrier) is announced to the ranks still
 * running, which may be addressing it, and yet counted as finalized. Before,
 * the survivors still running were never told: on tcp they reconnected to
 * the closed endpoint until the timeout (net_rank kill, 4 ranks). */
static atomic_int left_done, left_saw;

static void *left_client(void *arg)
{
    int rank = (int)(intptr_t)arg;
    net_boot_t *b;
    uint64_t dl = com_deadline_after_ns(10 * COM_NS_PER_S);
    assert_int_equal(net_boot_open(rank, 3, hostport, dl, &b), GMUX_OK);
    assert_int_equal(net_boot_barrier(b, dl), GMUX_OK);
    if (rank == 2) {
        net_boot_close(b, false); /* dies */
    } else {
        int other = rank == 0 ? 1 : 0;
        while (!net_boot_dead(b, 2) && !com_deadline_passed(dl))
            net_boot_poll(b);
        if (rank == 1) /* waits to hear that rank 0 left */
            while (!net_boot_dead(b, other) && !com_deadline_passed(dl))
                net_boot_poll(b);
        if (rank == 1 && net_boot_dead(b, other))
            atomic_store(&left_saw, 1);
        net_boot_close(b, true);
    }
    atomic_fetch_add(&left_done, 1);
    return NULL;
}

static void test_bye_after_death_announced(void **state)
{
    (void)state;
    net_rdv_t *rdv = rdv_start(3);
    pthread_t th[3];
    for (intptr_t r = 0; r < 3; r++)
        pthread_create(&th[r], NULL, left_client, (void *)r);
    bool exited[3] = {false, false, false};
    uint64_t dl = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (atomic_load(&left_done) < 3 && !com_deadline_passed(dl)) {
        net_rdv_step(rdv, 10);
        if (!exited[2] && atomic_load(&left_done) >= 1) { /* rank 2 is first to end */
            net_rdv_rank_exited(rdv, 2, true);
            exited[2] = true;
        }
    }
    for (int r = 0; r < 3; r++)
        pthread_join(th[r], NULL);
    assert_int_equal(atomic_load(&left_saw), 1);
    assert_true(net_rdv_said_bye(rdv, 0)); /* finalized: not a failure of its own */
    net_rdv_destroy(rdv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_and_death),
        cmocka_unit_test(test_connect_times_out),
        cmocka_unit_test(test_bye_read_at_exit),
        cmocka_unit_test(test_bye_after_death_announced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The rendezvous server (rdv.c, compiled into this test with
 * NET_RDV_TEST_ALLOC) when its allocations fail: the ranks waiting in the
 * collective are answered with GMUX_ERR_NOMEM, and the next collective
 * works. The server used to return from completing an allgather whose
 * result it could not allocate, leaving every rank waiting until its own
 * deadline, and to drop a rank (announced dead) whose frame it could not
 * allocate. */
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

#include <cmocka.h>

#include "common/clock.h"
#include "net/boot.h"
#include "net/rdv.h"

#define N      3
#define BLOB   64
#define ROUNDS 4

/* The seam rdv.c calls before each of its allocations (test builds only):
 * allocations of at least fail_min bytes fail, fail_count of them (-1:
 * all). Called from this test's main thread, which steps the server. */
static atomic_size_t fail_min = SIZE_MAX;
static atomic_int fail_count;

bool net_rdv_test_alloc_fails(size_t n);
bool net_rdv_test_alloc_fails(size_t n)
{
    if (n < atomic_load(&fail_min) || atomic_load(&fail_count) == 0)
        return false;
    if (atomic_load(&fail_count) > 0)
        atomic_fetch_sub(&fail_count, 1);
    return true;
}

static void fail_allocs(size_t min, int count)
{
    atomic_store(&fail_min, min);
    atomic_store(&fail_count, count);
}

static char hostport[64];
static atomic_int phase;            /* rounds the clients may start */
static atomic_int finished;         /* allgathers returned, all clients */
static gmux_status_t st[N][ROUNDS]; /* each rank's status per round */
static bool bad_data[N];

static void *client(void *arg)
{
    int rank = (int)(intptr_t)arg;
    uint64_t dl = com_deadline_after_ns(30 * COM_NS_PER_S);
    net_boot_t *b;
    gmux_status_t s = net_boot_open(rank, N, hostport, dl, &b);
    for (int round = 0; round < ROUNDS; round++) {
        while (atomic_load(&phase) <= round && !com_deadline_passed(dl))
            com_clock_sleep_ns(COM_NS_PER_MS);
        st[rank][round] = s;
        if (s != GMUX_OK) {
            atomic_fetch_add(&finished, 1);
            continue;
        }
        uint8_t mine[BLOB], *all = NULL;
        memset(mine, rank * 16 + round, sizeof(mine));
        /* a round that hangs fails here, well before the main loop gives up */
        st[rank][round] = net_boot_allgather(b, mine, BLOB, (void **)&all,
                                             com_deadline_after_ns(8 * COM_NS_PER_S));
        for (int r = 0; all && r < N; r++)
            bad_data[rank] |=
                all[r * BLOB] != r * 16 + round || all[r * BLOB + BLOB - 1] != r * 16 + round;
        free(all);
        atomic_fetch_add(&finished, 1);
    }
    if (s == GMUX_OK)
        net_boot_close(b, true);
    return NULL;
}

/* Each round: how the server's allocations fail while the ranks' frames
 * arrive and the round completes. */
typedef struct round_fault {
    size_t min;
    int count;
} round_fault_t;

static void run_rounds(const round_fault_t *faults)
{
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", N, &rdv, NULL, 0), GMUX_OK);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", net_rdv_port(rdv));
    atomic_store(&phase, 0);
    atomic_store(&finished, 0);
    memset(bad_data, 0, sizeof(bad_data));
    pthread_t th[N];
    for (intptr_t r = 0; r < N; r++)
        pthread_create(&th[r], NULL, client, (void *)r);
    uint64_t dl = com_deadline_after_ns(60 * COM_NS_PER_S);
    for (int i = 0; i < 50; i++) /* the HELLOs taken in */
        net_rdv_step(rdv, 10);
    for (int round = 0; round < ROUNDS; round++) {
        fail_allocs(faults[round].min, faults[round].count);
        atomic_store(&phase, round + 1);
        while (atomic_load(&finished) < N * (round + 1) && !com_deadline_passed(dl))
            net_rdv_step(rdv, 10);
        fail_allocs(SIZE_MAX, 0);
    }
    for (int r = 0; r < N; r++)
        pthread_join(th[r], NULL);
    net_rdv_destroy(rdv);
}

/* The allgather's result (3 * (4 + 64) bytes and up) cannot be allocated:
 * every rank gets GMUX_ERR_NOMEM, then the next rounds work. */
static void test_result_alloc_fails(void **state)
{
    (void)state;
    const round_fault_t faults[ROUNDS] = {
        {SIZE_MAX, 0}, {3 * (4 + BLOB), -1}, {SIZE_MAX, 0}, {3 * (4 + BLOB), 1}};
    run_rounds(faults);
    for (int r = 0; r < N; r++) {
        assert_int_equal(st[r][0], GMUX_OK);
        assert_int_equal(st[r][1], GMUX_ERR_NOMEM);
        assert_int_equal(st[r][2], GMUX_OK);
        assert_int_equal(st[r][3], GMUX_ERR_NOMEM);
        assert_false(bad_data[r]);
    }
}

/* One rank's frame (64 bytes of payload) cannot be allocated: the server
 * reads past it and fails the round on every rank with GMUX_ERR_NOMEM; the
 * rank is not dropped, nor announced dead. Then every allocation fails for
 * a round: the same answer. The last round works. */
static void test_frame_alloc_fails(void **state)
{
    (void)state;
    const round_fault_t faults[ROUNDS] = {{SIZE_MAX, 0}, {BLOB, 1}, {0, -1}, {SIZE_MAX, 0}};
    run_rounds(faults);
    for (int r = 0; r < N; r++) {
        assert_int_equal(st[r][0], GMUX_OK);
        assert_int_equal(st[r][1], GMUX_ERR_NOMEM);
        assert_int_equal(st[r][2], GMUX_ERR_NOMEM);
        assert_int_equal(st[r][3], GMUX_OK);
        assert_false(bad_data[r]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_alloc_fails),
        cmocka_unit_test(test_frame_alloc_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of how OpenSHMEM contexts take net contexts (src/shmem/team.c),
 * in one process with no job: net context 0 is SHMEM_CTX_DEFAULT's, the
 * others are taken one per context while free and then shared; a net
 * context stays taken while any context still uses it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "shmem/internal.h"

/* The pieces of init.c and rma.c that team.c uses. */
shm_state_t shm_state = {.lock = PTHREAD_MUTEX_INITIALIZER};
struct shmem_team_s shmem_team_world_obj_ = {.predefined = true};
struct shmem_team_s shmem_team_shared_obj_ = {.predefined = true};
struct shmem_ctx_s shmem_ctx_default_obj_ = {.team = &shmem_team_world_obj_, .used = true};
void shm_die(const char *call, const char *fmt, ...)
{
    (void)fmt;
    fail_msg("shm_die from %s", call);
    abort();
}
void shm_check(gmux_status_t st, const char *call)
{
    (void)st; /* no job: the quiet of a destroy has nothing to complete */
    (void)call;
}
void shm_need_init(const char *call)
{
    (void)call;
}
uint32_t shm_ctx_net(shmem_ctx_t ctx, const char *call)
{
    if (!ctx || !ctx->used)
        shm_die(call, "invalid or destroyed context");
    return ctx->netctx;
}

#define NPRIV (SHM_NET_CONTEXTS - 1) /* net contexts 1.. */

/* Destroying one of two contexts that share a net context leaves it taken:
 * the next context must get a free one, not the one still in use. */
static void test_shared_stays_taken(void **state)
{
    (void)state;
    shmem_ctx_t c[NPRIV], extra;
    for (int i = 0; i < NPRIV; i++) {
        assert_int_equal(shmem_ctx_create(0, &c[i]), 0);
        assert_int_equal(c[i]->netctx, (uint32_t)i + 1);
    }
    assert_int_equal(shmem_ctx_create(0, &extra), 0); /* all taken: shares one */
    uint32_t shared = extra->netctx;
    assert_true(shared >= 1 && shared <= NPRIV);
    shmem_ctx_t owner = c[shared - 1];
    shmem_ctx_destroy(extra);
    /* free every other net context: only `owner` is left */
    for (int i = 0; i < NPRIV; i++)
        if (c[i] != owner)
            shmem_ctx_destroy(c[i]);
    shmem_ctx_t again[NPRIV - 1];
    for (int i = 0; i < NPRIV - 1; i++) {
        assert_int_equal(shmem_ctx_create(0, &again[i]), 0);
        assert_int_not_equal(again[i]->netctx, shared); /* owner still uses it */
        assert_int_not_equal(again[i]->netctx, 0);
    }
    for (int i = 0; i < NPRIV - 1; i++)
        shmem_ctx_destroy(again[i]);
    shmem_ctx_destroy(owner);
}

/* Destroying the default context does nothing: net context 0 stays its. */
static void test_default_untouched(void **state)
{
    (void)state;
    shmem_ctx_destroy(SHMEM_CTX_DEFAULT);
    assert_true(SHMEM_CTX_DEFAULT->used);
    shmem_ctx_t c;
    assert_int_equal(shmem_ctx_create(0, &c), 0);
    assert_int_not_equal(c->netctx, 0);
    shmem_ctx_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_stays_taken),
        cmocka_unit_test(test_default_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

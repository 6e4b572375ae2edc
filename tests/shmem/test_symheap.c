/*
 * Unit tests of the symmetric heap allocator and of finding the program's
 * data segment (src/shmem/symheap.c), in one process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "shmem/internal.h"

/* The pieces of init.c the allocator uses. */
shm_state_t shm_state = {.lock = PTHREAD_MUTEX_INITIALIZER};
void shm_die(const char *call, const char *fmt, ...)
{
    (void)fmt;
    fail_msg("shm_die from %s", call);
    abort();
}
static int nchecks;         /* collective steps (barriers) the calls made */
static bool barriers_alone; /* one PE: a barrier (failing without a comm) passes */
void shm_check(gmux_status_t st, const char *call)
{
    nchecks++;
    if (st != GMUX_OK && !barriers_alone)
        shm_die(call, "%d", st);
}
void shm_need_init(const char *call)
{
    (void)call;
}

long global_counter = 5;
static char in_bss[1000];

static size_t off(const void *p)
{
    return (size_t)((const char *)p - shm_state.heap);
}

/* A fixed sequence of calls; returns the offsets it got. */
static void sequence(size_t out[6])
{
    assert_int_equal(shm_heap_init(1 << 20), GMUX_OK);
    void *a = shm_heap_alloc(100, SHM_ALIGN);
    void *b = shm_heap_alloc(5000, 4096);
    void *c = shm_heap_alloc(1, SHM_ALIGN);
    shm_heap_free(a);
    void *d = shm_heap_alloc(64, SHM_ALIGN);
    void *e = shm_heap_alloc(200000, SHM_ALIGN);
    shm_heap_free(c);
    void *f = shm_heap_alloc(10, SHM_ALIGN);
    size_t o[6] = {off(a), off(b), off(c), off(d), off(e), off(f)};
    for (int i = 0; i < 6; i++)
        out[i] = o[i];
    shm_heap_fini();
}

static void test_deterministic(void **state)
{
    (void)state;
    size_t x[6], y[6];
    sequence(x);
    sequence(y);
    for (int i = 0; i < 6; i++)
        assert_int_equal(x[i], y[i]);
    assert_int_equal(x[0], 0);
    assert_int_equal(x[1] % 4096, 0);
    assert_int_equal(x[3], 0);  /* first fit reuses a's block */
    assert_int_equal(x[5], 64); /* c freed and merged with the hole after d */
}

static void test_align_and_limits(void **state)
{
    (void)state;
    assert_int_equal(shm_heap_init(1 << 16), GMUX_OK);
    char *a = shm_heap_alloc(1, SHM_ALIGN);
    char *b = shm_heap_alloc(1, 1024);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(off(b) % 1024, 0);
    assert_true(b >= a + SHM_ALIGN);
    assert_int_equal(shm_heap_block_size(a), SHM_ALIGN);
    assert_int_equal(shm_heap_block_size(a + 1), 0);
    assert_null(shm_heap_alloc(1 << 17, SHM_ALIGN)); /* larger than the heap */
    shm_heap_free(a);
    shm_heap_free(b);
    /* everything coalesced: the whole heap is one free block again */
    char *all = shm_heap_alloc(1 << 16, SHM_ALIGN);
    assert_ptr_equal(all, shm_state.heap);
    assert_null(shm_heap_alloc(1, SHM_ALIGN));
    shm_heap_fini();
}

/* shmem_align promises an address that is a multiple of the alignment:
 * offsets are aligned, so the heap's base must be too (it used to be only
 * page aligned, so large alignments came out misaligned). */
static void test_align_address(void **state)
{
    (void)state;
    assert_int_equal(shm_heap_init(1 << 16), GMUX_OK);
    char *a = shm_heap_alloc(1, (size_t)1 << 29);
    assert_non_null(a);
    assert_int_equal((uintptr_t)a % ((size_t)1 << 29), 0);
    assert_int_equal((uintptr_t)shm_state.heap % SHM_ALIGN_MAX, 0);
    assert_null(shm_heap_alloc(1, SHM_ALIGN_MAX << 1)); /* more than the base's alignment */
    shm_heap_fini();
}

static void test_many_blocks(void **state)
{
    (void)state;
    assert_int_equal(shm_heap_init(1 << 20), GMUX_OK);
    void *p[500];
    for (int i = 0; i < 500; i++) {
        p[i] = shm_heap_alloc(64, SHM_ALIGN);
        assert_int_equal(off(p[i]), (size_t)i * 64);
    }
    for (int i = 0; i < 500; i += 2)
        shm_heap_free(p[i]);
    assert_int_equal(off(shm_heap_alloc(64, SHM_ALIGN)), 0);
    assert_int_equal(off(shm_heap_alloc(100, SHM_ALIGN)), 500 * 64); /* no 64-byte hole fits */
    shm_heap_fini();
}

/* A size whose rounding up to SHM_ALIGN wraps past SIZE_MAX must fail, not
 * come back as a block of a few bytes. */
static void test_size_wraps(void **state)
{
    (void)state;
    assert_int_equal(shm_heap_init(1 << 16), GMUX_OK);
    assert_null(shm_heap_alloc(SIZE_MAX - 10, SHM_ALIGN));
    assert_null(shm_heap_alloc(SIZE_MAX, SHM_ALIGN));
    assert_null(shm_heap_alloc(SIZE_MAX - SHM_ALIGN + 2, 4096));
    /* the heap is untouched: all of it is still one free block */
    char *all = shm_heap_alloc(1 << 16, SHM_ALIGN);
    assert_ptr_equal(all, shm_state.heap);
    shm_heap_fini();
}

/* OpenSHMEM 1.5 (9.3.1): a size of 0 returns NULL and performs no action,
 * in particular no barrier (here a barrier would reach shm_check). */
static void test_zero_size_no_barrier(void **state)
{
    (void)state;
    assert_int_equal(shm_heap_init(1 << 16), GMUX_OK);
    nchecks = 0;
    assert_null(shmem_malloc(0));
    assert_null(shmem_malloc_with_hints(0, 0));
    assert_null(shmem_calloc(0, 8));
    assert_null(shmem_calloc(8, 0));
    assert_null(shmem_calloc(0, 0));
    assert_null(shmem_align(64, 0));
    assert_int_equal(nchecks, 0);
    char *all = shm_heap_alloc(1 << 16, SHM_ALIGN); /* nothing was taken */
    assert_ptr_equal(all, shm_state.heap);
    shm_heap_fini();
}

/* OpenSHMEM 1.5 (9.3.1): shmem_realloc(ptr, 0) with ptr not null frees the
 * block (as shmem_free: a barrier on entry first) and returns a null
 * pointer, allocating nothing. */
static void test_realloc_zero_frees(void **state)
{
    (void)state;
    assert_int_equal(shm_heap_init(1 << 16), GMUX_OK);
    barriers_alone = true;
    char *p = shmem_malloc(1 << 15);
    assert_non_null(p);
    nchecks = 0;
    assert_null(shmem_realloc(p, 0));
    assert_true(nchecks >= 1); /* collective: nobody may still use the block */
    assert_int_equal(shm_heap_block_size(p), 0);
    char *all = shm_heap_alloc(1 << 16, SHM_ALIGN); /* all of it free again */
    assert_ptr_equal(all, shm_state.heap);
    barriers_alone = false;
    shm_heap_fini();
}

static void test_data_segment(void **state)
{
    (void)state;
    char *base;
    size_t size;
    long on_stack = 0;
    assert_int_equal(shm_data_find(&base, &size), GMUX_OK);
    assert_true((char *)&global_counter >= base && (char *)&global_counter < base + size);
    assert_true(in_bss >= base && in_bss + sizeof(in_bss) <= base + size);
    assert_false((char *)&on_stack >= base && (char *)&on_stack < base + size);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic), cmocka_unit_test(test_align_and_limits),
        cmocka_unit_test(test_align_address), cmocka_unit_test(test_many_blocks),
        cmocka_unit_test(test_size_wraps),    cmocka_unit_test(test_zero_size_no_barrier),
        cmocka_unit_test(test_data_segment),  cmocka_unit_test(test_realloc_zero_frees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

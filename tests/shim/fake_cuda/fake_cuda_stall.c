/*
 * The driver double's armed stalls (fake_cuda.h): a thread held at a chosen
 * call until a file exists, as a thread of a program could be descheduled
 * there, so that a test can make two threads of the shim meet at a chosen
 * point. Split from fake_cuda_ctx.c; the calls fire them (fake_stall_fire).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda_internal.h"

/* One armed stall per kind (FAKE_STALL_*): the thread that armed it (or,
 * any_thread, the stream whose query stalls), the files; armed 0 when not
 * armed. The fields are written before armed is set and read after. */
typedef struct {
    _Atomic int armed;
    bool any_thread;
    pthread_t thread;
    uintptr_t stream;
    char mark[4096], until[4096];
} fake_stall_t;

static fake_stall_t fake_stalls[FAKE_STALL_N];

static void fake_stall_arm(int at, bool any_thread, uintptr_t stream, const char *mark,
                           const char *until)
{
    fake_stall_t *st = &fake_stalls[at];
    snprintf(st->mark, sizeof(st->mark), "%s", mark);
    snprintf(st->until, sizeof(st->until), "%s", until);
    st->thread = pthread_self();
    st->any_thread = any_thread;
    st->stream = stream;
    atomic_store(&st->armed, 1);
}

FAKE_API void fake_arm_stall(const char *mark, const char *until)
{
    fake_stall_arm(FAKE_STALL_CTX_GET_CURRENT, false, 0, mark, until);
}

FAKE_API void fake_arm_stall_prefetch(const char *mark, const char *until)
{
    fake_stall_arm(FAKE_STALL_PREFETCH, false, 0, mark, until);
}

FAKE_API void fake_arm_stall_param_info(const char *mark, const char *until)
{
    fake_stall_arm(FAKE_STALL_PARAM_INFO, false, 0, mark, until);
}

FAKE_API void fake_arm_stall_query(void *stream, const char *mark, const char *until)
{
    fake_stall_arm(FAKE_STALL_QUERY, true, U(stream), mark, until);
}

void fake_stall_fire_on(int at, uintptr_t stream)
{
    fake_stall_t *st = &fake_stalls[at];
    int armed = 1;
    if (!atomic_load(&st->armed) ||
        (st->any_thread ? st->stream != stream : !pthread_equal(pthread_self(), st->thread)) ||
        !atomic_compare_exchange_strong(&st->armed, &armed, 0))
        return;
    FILE *f = fopen(st->mark, "w");
    if (f)
        fclose(f);
    for (int i = 0; i < 6000 && access(st->until, F_OK) != 0; i++) {
        struct timespec d = {0, 10000000L};
        nanosleep(&d, NULL);
    }
}

void fake_stall_fire(int at)
{
    fake_stall_fire_on(at, 0);
}

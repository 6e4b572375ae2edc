/*
 * The driver double's armed capture (fake_arm_capture, fake_cuda.h): a capture
 * that another thread begins right after the next query of a stream, so a test
 * can make a capture start between the shim's query and its own work. Split
 * from fake_cuda_stream.c, whose fake_is_capturing fires it.
 */
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "fake_cuda_internal.h"

/* fake_arm_capture's state (slot 0; fake_arm_capture_also's: slot 1), under
 * fake_arm_mu. */
typedef struct {
    uintptr_t stream;
    PFN_cuStreamBeginCapture_v10010 begin;
    pthread_t thread;
    int started, done;
    CUresult result;
} fake_arm_slot_t;

static pthread_mutex_t fake_arm_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_arm_cv = PTHREAD_COND_INITIALIZER;
static fake_arm_slot_t fake_arm[2];

static void fake_arm_set(int i, void *stream, void *begin)
{
    pthread_mutex_lock(&fake_arm_mu);
    fake_arm[i].stream = U(stream);
    fake_arm[i].begin = (PFN_cuStreamBeginCapture_v10010)begin;
    fake_arm[i].started = fake_arm[i].done = 0;
    pthread_mutex_unlock(&fake_arm_mu);
}

FAKE_API void fake_arm_capture(void *stream, void *begin)
{
    fake_arm_set(1, NULL, NULL);
    fake_arm_set(0, stream, begin);
}

FAKE_API void fake_arm_capture_also(void *stream, void *begin)
{
    fake_arm_set(1, stream, begin);
}

static void *fake_arm_run(void *arg)
{
    fake_arm_slot_t *a = arg;
    CUresult r = a->begin((CUstream)a->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
    pthread_mutex_lock(&fake_arm_mu);
    a->result = r;
    a->done = 1;
    pthread_cond_broadcast(&fake_arm_cv);
    pthread_mutex_unlock(&fake_arm_mu);
    return NULL;
}

/* After a query of s: the armed capture begins, from another thread. */
void fake_arm_fire(CUstream s)
{
    pthread_mutex_lock(&fake_arm_mu);
    fake_arm_slot_t *a = NULL;
    for (int i = 0; i < 2 && !a; i++)
        if (fake_arm[i].stream && fake_arm[i].stream == U(s) && !fake_arm[i].started)
            a = &fake_arm[i];
    if (!a) {
        pthread_mutex_unlock(&fake_arm_mu);
        return;
    }
    a->started = pthread_create(&a->thread, NULL, fake_arm_run, a) == 0;
    /* The shim's hook may wait for the shim, which waits for this query to
     * return: 200 ms, then the capture begins later. The double's own entry
     * point waits for nothing: the capture has begun when the query returns,
     * however long a loaded machine takes to run the thread (30 s bound). */
    bool unhooked = a->begin == fk_cuStreamBeginCapture_v2;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (unhooked)
        until.tv_sec += 30;
    else
        until.tv_nsec += 200000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (a->started && !a->done &&
           pthread_cond_timedwait(&fake_arm_cv, &fake_arm_mu, &until) == 0) {
    }
    pthread_mutex_unlock(&fake_arm_mu);
}

/* Joins the armed threads: the first failed begin's CUresult, -1 if an armed
 * capture never started, else CUDA_SUCCESS. */
FAKE_API int fake_armed_capture_join(void)
{
    int r = CUDA_SUCCESS;
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&fake_arm_mu);
        int armed = fake_arm[i].stream != 0 || i == 0;
        int started = fake_arm[i].started;
        fake_arm[i].stream = 0;
        pthread_mutex_unlock(&fake_arm_mu);
        if (!started) {
            if (armed && r == CUDA_SUCCESS)
                r = -1;
            continue;
        }
        pthread_join(fake_arm[i].thread, NULL);
        pthread_mutex_lock(&fake_arm_mu);
        fake_arm[i].started = 0;
        if (r == CUDA_SUCCESS)
            r = (int)fake_arm[i].result;
        pthread_mutex_unlock(&fake_arm_mu);
    }
    return r;
}

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

/* fake_arm_capture's state, under fake_arm_mu. */
static pthread_mutex_t fake_arm_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_arm_cv = PTHREAD_COND_INITIALIZER;
static uintptr_t fake_arm_stream;
static PFN_cuStreamBeginCapture_v10010 fake_arm_begin;
static pthread_t fake_arm_thread;
static int fake_arm_started, fake_arm_done;
static CUresult fake_arm_result;

FAKE_API void fake_arm_capture(void *stream, void *begin)
{
    pthread_mutex_lock(&fake_arm_mu);
    fake_arm_stream = U(stream);
    fake_arm_begin = (PFN_cuStreamBeginCapture_v10010)begin;
    fake_arm_started = fake_arm_done = 0;
    pthread_mutex_unlock(&fake_arm_mu);
}

static void *fake_arm_run(void *arg)
{
    CUresult r = fake_arm_begin((CUstream)arg, CU_STREAM_CAPTURE_MODE_RELAXED);
    pthread_mutex_lock(&fake_arm_mu);
    fake_arm_result = r;
    fake_arm_done = 1;
    pthread_cond_broadcast(&fake_arm_cv);
    pthread_mutex_unlock(&fake_arm_mu);
    return NULL;
}

/* After a query of s: the armed capture begins, from another thread. */
void fake_arm_fire(CUstream s)
{
    pthread_mutex_lock(&fake_arm_mu);
    if (!fake_arm_stream || fake_arm_stream != U(s) || fake_arm_started) {
        pthread_mutex_unlock(&fake_arm_mu);
        return;
    }
    fake_arm_started = pthread_create(&fake_arm_thread, NULL, fake_arm_run, s) == 0;
    /* The shim's hook may wait for the shim, which waits for this query to
     * return: 200 ms, then the capture begins later. The double's own entry
     * point waits for nothing: the capture has begun when the query returns,
     * however long a loaded machine takes to run the thread (30 s bound). */
    bool unhooked = fake_arm_begin == fk_cuStreamBeginCapture_v2;
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
    while (fake_arm_started && !fake_arm_done &&
           pthread_cond_timedwait(&fake_arm_cv, &fake_arm_mu, &until) == 0) {
    }
    pthread_mutex_unlock(&fake_arm_mu);
}

FAKE_API int fake_armed_capture_join(void)
{
    pthread_mutex_lock(&fake_arm_mu);
    int started = fake_arm_started;
    fake_arm_stream = 0;
    pthread_mutex_unlock(&fake_arm_mu);
    if (!started)
        return -1;
    pthread_join(fake_arm_thread, NULL);
    pthread_mutex_lock(&fake_arm_mu);
    fake_arm_started = 0;
    int r = (int)fake_arm_result;
    pthread_mutex_unlock(&fake_arm_mu);
    return r;
}

/* gate_prog's waits, entry points and capturing thread; see gate_prog.h. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "gate_prog.h"

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits ms, or until the file arg names (it begins with '/') exists: 0, or
 * -1 after two minutes without it. */
int wait_for(const char *arg)
{
    if (arg[0] != '/') {
        long ms = strtol(arg, NULL, 10);
        struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
        if (ms > 0)
            nanosleep(&d, NULL);
        return 0;
    }
    for (int i = 0; i < 12000; i++) {
        if (access(arg, F_OK) == 0)
            return 0;
        struct timespec d = {0, 10000000L};
        nanosleep(&d, NULL);
    }
    return -1;
}

void *get_at(PFN_cuGetProcAddress_v12000 gpa, const char *base, int version)
{
    void *p = NULL;
    return gpa(base, &p, version, 0, NULL) == CUDA_SUCCESS ? p : NULL;
}

void *get(PFN_cuGetProcAddress_v12000 gpa, const char *base)
{
    return get_at(gpa, base, 12000);
}

/* The per-thread default stream's entry point of base (_ptsz). */
void *get_pt(PFN_cuGetProcAddress_v12000 gpa, const char *base)
{
    void *p = NULL;
    cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    return gpa(base, &p, 12000, pt, NULL) == CUDA_SUCCESS ? p : NULL;
}

/* CAPTURE 16 and 17: the second pause, OUTFILE.paused2 until PAUSE_MS's
 * file with "2" appended exists. 0, or -1. */
int pause_again(const char *outfile, const char *pause)
{
    char mark[4096], until[4096];
    snprintf(mark, sizeof(mark), "%s.paused2", outfile);
    snprintf(until, sizeof(until), "%s2", pause);
    FILE *m = fopen(mark, "w");
    if (!m || fclose(m) != 0)
        return -1;
    return wait_for(until);
}

int launch_meets_ordering(const char *outfile, void *drv, PFN_cuLaunchKernel_v4000 launch,
                          CUfunction pf, CUstream s, CUdeviceptr *p)
{
    fake_arm_stall_param_info_fn arm_launch =
        (fake_arm_stall_param_info_fn)dlsym(drv, "fake_arm_stall_param_info");
    fake_arm_stall_query_fn arm_query = (fake_arm_stall_query_fn)dlsym(drv, "fake_arm_stall_query");
    char go_on[4096], stalled[4096], ordering[4096], launched[4096];
    snprintf(go_on, sizeof(go_on), "%s.launch", outfile);
    snprintf(stalled, sizeof(stalled), "%s.stalled", outfile);
    snprintf(ordering, sizeof(ordering), "%s.ordering", outfile);
    snprintf(launched, sizeof(launched), "%s.launched", outfile);
    if (!arm_launch || !arm_query || wait_for(go_on) != 0)
        return -1;
    arm_query(s, ordering, launched);
    arm_launch(stalled, ordering);
    void *args[] = {p};
    if (launch(pf, 1, 1, 1, 1, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS)
        return -1;
    FILE *m = fopen(launched, "w");
    return m && fclose(m) == 0 ? 0 : -1;
}

static void *capture_thread(void *arg)
{
    capturer_t *c = arg;
    CUresult r = c->begin(c->s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    pthread_mutex_lock(&c->mu);
    c->begin_r = r;
    c->begun = 1;
    pthread_cond_broadcast(&c->cv);
    while (!c->done)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    CUgraph g = NULL;
    c->end_r = r == CUDA_SUCCESS ? c->end(c->s, &g) : r;
    return NULL;
}

/* Starts the capturing thread and waits until its capture began; 0 or -1. */
int capture_start(PFN_cuGetProcAddress_v12000 gpa, capturer_t *c, pthread_t *th)
{
    PFN_cuStreamCreate_v2000 create = (PFN_cuStreamCreate_v2000)get(gpa, "cuStreamCreate");
    c->begin = (PFN_cuStreamBeginCapture_v10010)get(gpa, "cuStreamBeginCapture");
    c->end = (PFN_cuStreamEndCapture_v10000)get(gpa, "cuStreamEndCapture");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->begun = c->done = 0;
    if (!create || !c->begin || !c->end || create(&c->s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        pthread_create(th, NULL, capture_thread, c) != 0)
        return -1;
    pthread_mutex_lock(&c->mu);
    while (!c->begun)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    return c->begin_r == CUDA_SUCCESS ? 0 : -1;
}

/* Ends the capture; whether it held (the driver made a graph of it). */
int capture_finish(capturer_t *c, pthread_t th)
{
    pthread_mutex_lock(&c->mu);
    c->done = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(th, NULL);
    return c->end_r == CUDA_SUCCESS;
}

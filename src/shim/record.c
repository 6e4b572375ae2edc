/*
 * Recording mode: writes what the program does to a trace file through the
 * simulator's trace writer. See record.h.
 */
#include "shim/record.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "common/settings.h"
#include "shim/backend_cuda.h"
#include "shim/cupti.h"
#include "shim/kname.h"
#include "shim/params.h"
#include "shim/record_ranges.h"
#include "shim/shim.h"
#include "shim/stats.h"
#include "sim/trace_io.h"

#define REC_MAX_KERNELS 4096
#define REC_MAX_RANGES  1024
#define REC_MAX_FAULTS  65536
#define REC_FAULT_GRAN  4096 /* a fault is recorded as the 4 KiB page it hit */

/* The test double's fake CUPTI (see tests/shim/fake_cuda/fake_cuda.h). */
typedef size_t (*rec_touched_fn)(uint64_t *addr, uint64_t *len, uint8_t *mode, size_t max);
typedef uint64_t (*rec_kernel_ns_fn)(void);

atomic_int shim_record_state_;

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_trace_writer_t *rec_writer;
static bool rec_probe;
static bool rec_cold; /* probes start from data on the host (GMUX_SHIM_TRACE_COLD) */
static rec_touched_fn rec_touched;
static rec_kernel_ns_fn rec_kernel_ns; /* the double's kernel times */
static atomic_bool rec_cupti;          /* CUPTI fault addresses are the range source */
static atomic_bool rec_cupti_kernels;  /* CUPTI kernel records give compute times */
static uint64_t rec_next_id;
static shim_rec_alloc_t *rec_live; /* live allocations, unordered */
static size_t rec_nlive, rec_cap;
static CUfunction rec_kfunc[REC_MAX_KERNELS];
static char *rec_kname[REC_MAX_KERNELS];
static uint32_t rec_kid[REC_MAX_KERNELS]; /* kernel id of each function slot */
static size_t rec_nfuncs;
static uint32_t rec_nkernels;
static bool rec_pending; /* a launch waits for its touched ranges */
static sim_launch_ev_t rec_pend;
static sim_arg_t rec_pend_args[SHIM_MAX_CANDIDATES];
static eng_range_t rec_raw[REC_MAX_RANGES], rec_ranges[REC_MAX_RANGES];
static bool rec_failed; /* a write failed: stop recording, keep the program going */
static char rec_path[4096];

/*
 * The trace format declares every kernel before the first event, and kernels
 * are only known as the program launches them: events are kept in memory
 * (args and ranges in shared arrays, referred to by index) and written at
 * exit.
 */
typedef struct rec_ev {
    sim_event_t ev;      /* launch: args/ranges pointers unset */
    size_t args, ranges; /* launch: first index in rec_args / rec_rngs */
} rec_ev_t;

static rec_ev_t *rec_evs;
static size_t rec_nevs, rec_evcap;
static sim_arg_t *rec_args;
static size_t rec_nargs, rec_argcap;
static eng_range_t *rec_rngs;
static size_t rec_nrngs, rec_rngcap;

static void rec_fail(const char *what, gmux_status_t st)
{
    if (!rec_failed)
        COM_ERROR(SHIM, "trace recording stopped: %s failed (%s)", what, gmux_status_str(st));
    rec_failed = true;
}

/* Makes room for more items in *arr (size each); false when out of memory. */
static bool rec_grow(void **arr, size_t *cap, size_t used, size_t more, size_t size)
{
    return more <= SIZE_MAX - used &&
           com_array_grow(arr, cap, used + more, size, 256, SIZE_MAX) == GMUX_OK;
}

static void rec_event(const sim_event_t *ev)
{
    if (rec_failed)
        return;
    size_t na = ev->kind == SIM_EV_LAUNCH ? ev->u.launch.nargs : 0;
    size_t nr = ev->kind == SIM_EV_LAUNCH ? ev->u.launch.nranges : 0;
    if (!rec_grow((void **)&rec_evs, &rec_evcap, rec_nevs, 1, sizeof(*rec_evs)) ||
        !rec_grow((void **)&rec_args, &rec_argcap, rec_nargs, na, sizeof(*rec_args)) ||
        !rec_grow((void **)&rec_rngs, &rec_rngcap, rec_nrngs, nr, sizeof(*rec_rngs))) {
        rec_fail("keeping an event", GMUX_ERR_NOMEM);
        return;
    }
    rec_ev_t *e = &rec_evs[rec_nevs++];
    e->ev = *ev;
    e->args = rec_nargs;
    e->ranges = rec_nrngs;
    if (na)
        memcpy(rec_args + rec_nargs, ev->u.launch.args, na * sizeof(*rec_args));
    if (nr)
        memcpy(rec_rngs + rec_nrngs, ev->u.launch.ranges, nr * sizeof(*rec_rngs));
    rec_nargs += na;
    rec_nrngs += nr;
}

static void rec_task_name(char *out, size_t len);

/* Launch shape whose fault-free time stands in for its launches that faulted. */
typedef struct rec_shape {
    sim_launch_ev_t *key; /* the first fault-free launch of the shape; NULL: empty slot */
    uint64_t min_ns;
} rec_shape_t;

static uint64_t rec_shape_hash(const sim_launch_ev_t *l)
{
    uint64_t h = l->kernel * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 3; i++)
        h = (h ^ l->grid[i] ^ ((uint64_t)l->block[i] << 32)) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static bool rec_same_shape(const sim_launch_ev_t *a, const sim_launch_ev_t *b)
{
    return a->kernel == b->kernel && memcmp(a->grid, b->grid, sizeof(a->grid)) == 0 &&
           memcmp(a->block, b->block, sizeof(a->block)) == 0;
}

static rec_shape_t *rec_shape_slot(rec_shape_t *t, size_t cap, const sim_launch_ev_t *l)
{
    for (size_t i = rec_shape_hash(l) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!t[i].key || rec_same_shape(t[i].key, l))
            return &t[i];
}

/*
 * A launch whose ranges were recorded faulted its pages in, and its kernel
 * time includes the fault service. Where the same kernel ran with the same
 * grid and block without faulting, that launch's time (the least such) is
 * the compute time the trace format asks for; it replaces the faulted one.
 * Lock held.
 */
static void rec_unfault_times(void)
{
    size_t cap = 16;
    while (cap < 2 * rec_nevs)
        cap *= 2;
    rec_shape_t *t = calloc(cap, sizeof(*t));
    if (!t) {
        COM_WARN(SHIM, "no memory to correct the compute times of faulted launches");
        return;
    }
    for (size_t i = 0; i < rec_nevs; i++) {
        sim_launch_ev_t *l = &rec_evs[i].ev.u.launch;
        if (rec_evs[i].ev.kind != SIM_EV_LAUNCH || l->nranges || !l->time_ns)
            continue;
        rec_shape_t *s = rec_shape_slot(t, cap, l);
        if (!s->key || l->time_ns < s->min_ns)
            s->min_ns = l->time_ns;
        s->key = l;
    }
    size_t fixed = 0, kept = 0;
    for (size_t i = 0; i < rec_nevs; i++) {
        sim_launch_ev_t *l = &rec_evs[i].ev.u.launch;
        if (rec_evs[i].ev.kind != SIM_EV_LAUNCH || !l->nranges || !l->time_ns)
            continue;
        rec_shape_t *s = rec_shape_slot(t, cap, l);
        if (s->key) {
            l->time_ns = s->min_ns;
            fixed++;
        } else {
            kept++;
        }
    }
    free(t);
    if (fixed || kept)
        COM_INFO(SHIM,
                 "compute times: %zu launches that faulted took the time of the same launch "
                 "without faults; %zu had no such twin and keep their time, faults included",
                 fixed, kept);
}

/*
 * Takes the compute times of the timing pass (GMUX_SHIM_TRACE_TIMES: the same
 * program recorded on plain device memory, nothing faulting), launch by
 * launch, when it launched the same kernels with the same shapes in the same
 * order; true when it did. Lock held.
 */
static bool rec_times_from(const char *path)
{
    char err[512];
    sim_source_t *src = NULL;
    if (sim_trace_open(path, &src, err, sizeof(err)) != GMUX_OK) {
        COM_WARN(SHIM, "timing pass unreadable (%s): compute times from this pass", err);
        return false;
    }
    uint64_t *ns = malloc((rec_nevs ? rec_nevs : 1) * sizeof(*ns));
    size_t i = 0, n = 0, at = 0;
    bool same = ns && src->ntasks == 1;
    sim_event_t ev;
    gmux_status_t st = GMUX_OK;
    while (same && (st = sim_source_next(src, 0, &ev)) == GMUX_OK) {
        if (ev.kind != SIM_EV_LAUNCH)
            continue;
        while (i < rec_nevs && rec_evs[i].ev.kind != SIM_EV_LAUNCH)
            i++;
        const sim_launch_ev_t *mine = i < rec_nevs ? &rec_evs[i].ev.u.launch : NULL;
        same = mine && ev.u.launch.kernel < src->nkernels &&
               strcmp(src->kernel_names[ev.u.launch.kernel], rec_kname[mine->kernel]) == 0 &&
               memcmp(ev.u.launch.grid, mine->grid, sizeof(mine->grid)) == 0 &&
               memcmp(ev.u.launch.block, mine->block, sizeof(mine->block)) == 0;
        if (same)
            ns[n++] = ev.u.launch.time_ns;
        at++;
        i++;
    }
    while (same && i < rec_nevs && rec_evs[i].ev.kind != SIM_EV_LAUNCH)
        i++;
    same = same && st == GMUX_ERR_NOT_FOUND && i == rec_nevs;
    if (same) {
        size_t k = 0;
        for (size_t j = 0; j < rec_nevs; j++)
            if (rec_evs[j].ev.kind == SIM_EV_LAUNCH)
                rec_evs[j].ev.u.launch.time_ns = ns[k++];
        COM_INFO(SHIM, "compute times of %zu launches from the timing pass", n);
    } else {
        COM_WARN(SHIM,
                 "the timing pass launched differently (at its launch %zu): compute times from "
                 "this pass, faults included",
                 at);
    }
    free(ns);
    sim_source_close(src);
    return same;
}

/* Writes the task, the kernel table and every kept event. Lock held. */
static gmux_status_t rec_write_all(void)
{
    const char *times = COM_SETTING_STRING(SHIM_TRACE_TIMES);
    if (!(rec_probe && times && times[0] && rec_times_from(times)))
        rec_unfault_times();
    char name[96];
    rec_task_name(name, sizeof(name));
    gmux_status_t st = sim_trace_writer_task(rec_writer, 0, name);
    for (uint32_t k = 0; k < rec_nkernels && st == GMUX_OK; k++)
        st = sim_trace_writer_kernel(rec_writer, k, rec_kname[k]);
    for (size_t i = 0; i < rec_nevs && st == GMUX_OK; i++) {
        sim_event_t ev = rec_evs[i].ev;
        if (ev.kind == SIM_EV_LAUNCH) {
            ev.u.launch.args = rec_args + rec_evs[i].args;
            ev.u.launch.ranges = rec_rngs + rec_evs[i].ranges;
        }
        st = sim_trace_writer_event(rec_writer, 0, &ev);
    }
    return st;
}

/* Waits for everything the context did, in RELAXED capture mode: made in
 * the thread's default GLOBAL mode while another thread captures a graph,
 * the synchronization would invalidate that capture (test_shim_trace
 * test_trace_capture_survives). */
static void rec_sync(void)
{
    CUstreamCaptureMode mode;
    bool relaxed = shim_backend_relax(&mode);
    (void)SHIM_CALL(cuCtxSynchronize);
    shim_backend_unrelax(relaxed, mode);
}

/* Collects the pending launch's touched ranges and keeps it. Lock held. */
static void rec_flush(void)
{
    if (!rec_pending)
        return;
    rec_pending = false;
    size_t n = 0;
    if (rec_probe && (rec_touched || atomic_load(&rec_cupti))) {
        /* the probe: everything the launch did is finished and reported */
        rec_sync();
        size_t raw = 0;
        if (rec_touched) {
            uint64_t addr[REC_MAX_RANGES], len[REC_MAX_RANGES];
            uint8_t mode[REC_MAX_RANGES];
            raw = rec_touched(addr, len, mode, REC_MAX_RANGES);
            for (size_t i = 0; i < raw; i++) {
                uint8_t m = mode[i] >= ENG_ACCESS_READ && mode[i] <= ENG_ACCESS_RW ? mode[i]
                                                                                   : ENG_ACCESS_RW;
                rec_raw[i] = (eng_range_t){.addr = addr[i], .len = len[i], .mode = m};
            }
        } else {
            static uint64_t faults[REC_MAX_FAULTS]; /* lock held */
            uint64_t lost = 0;
            size_t nf = shim_cupti_take_faults(faults, REC_MAX_FAULTS, &lost);
            if (lost)
                COM_WARN(SHIM, "%llu fault records of one launch dropped: its ranges are partial",
                         (unsigned long long)lost);
            raw = shim_rec_ranges_from_faults(faults, nf, REC_FAULT_GRAN, rec_raw, REC_MAX_RANGES);
        }
        raw = shim_rec_ranges_merge(rec_raw, raw);
        n = shim_rec_ranges_clip(rec_raw, raw, rec_live, rec_nlive, rec_ranges, REC_MAX_RANGES);
        n = shim_rec_ranges_merge(rec_ranges, n);
        /* the launch ran alone (synchronized before and after): what the
         * kernel records say it took is its compute time, faults included */
        if (rec_kernel_ns)
            rec_pend.time_ns = rec_kernel_ns();
        else if (atomic_load(&rec_cupti_kernels))
            rec_pend.time_ns = shim_cupti_take_kernel_ns(NULL);
    }
    rec_pend.nranges = (uint32_t)n;
    rec_pend.ranges = rec_ranges;
    sim_event_t ev = {.kind = SIM_EV_LAUNCH, .u.launch = rec_pend};
    rec_event(&ev);
}

/* The program's name; "~noranges" appended when no touched ranges were recorded. */
static void rec_task_name(char *out, size_t len)
{
    char comm[64] = "program";
    FILE *f = fopen("/proc/self/comm", "r");
    if (f) {
        if (fgets(comm, sizeof(comm), f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
    }
    for (char *p = comm; *p; p++)
        if (*p <= ' ' || *p == 127)
            *p = '_';
    if (!comm[0])
        snprintf(comm, sizeof(comm), "program");
    bool ranges = rec_probe && (rec_touched || atomic_load(&rec_cupti));
    snprintf(out, len, "%s%s", comm, ranges ? "" : "~noranges");
}

/* Around a fork of a recording process: the trace's stdio buffer goes to
 * the file first, so that a child's exit, which flushes its copy, writes
 * nothing twice; and no other thread holds rec_lock in the child. */
static void rec_atfork_prepare(void)
{
    pthread_mutex_lock(&rec_lock);
    sim_trace_writer_sync(rec_writer);
}

static void rec_atfork_done(void)
{
    pthread_mutex_unlock(&rec_lock);
}

void shim_record_init_slow(void)
{
    pthread_mutex_lock(&rec_lock);
    if (atomic_load(&shim_record_state_) != 0) {
        pthread_mutex_unlock(&rec_lock);
        return;
    }
    const char *path = COM_SETTING_STRING(SHIM_TRACE);
    int state = 1;
    if (path && path[0]) {
        const char *fmt = COM_SETTING_STRING(SHIM_TRACE_FORMAT);
        sim_trace_format_t format = SIM_TRACE_BINARY;
        if (fmt && strcmp(fmt, "text") == 0)
            format = SIM_TRACE_TEXT;
        else if (fmt && strcmp(fmt, "binary") != 0)
            COM_WARN(SHIM, "GMUX_SHIM_TRACE_FORMAT='%s' is not text or binary: binary used", fmt);
        rec_probe = COM_SETTING_BOOL(SHIM_TRACE_PROBE);
        rec_cold = rec_probe && COM_SETTING_BOOL(SHIM_TRACE_COLD);
        void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (drv) {
            rec_touched = (rec_touched_fn)dlsym(drv, "gmux_test_cupti_touched");
            *(void **)&rec_kernel_ns = dlsym(drv, "gmux_test_cupti_kernel_ns");
            dlclose(drv);
        }
        char err[512];
        snprintf(rec_path, sizeof(rec_path), "%s", path);
        gmux_status_t st = sim_trace_writer_open(path, format, &rec_writer, err, sizeof(err));
        if (st == GMUX_OK) {
            state = 2;
            if (pthread_atfork(rec_atfork_prepare, rec_atfork_done, rec_atfork_done) != 0)
                COM_WARN(SHIM, "no fork handler: a forked child may write part of the trace twice");
        } else {
            COM_ERROR(SHIM, "cannot record to %s: %s", path, err);
            rec_writer = NULL;
        }
    }
    atomic_store_explicit(&shim_record_state_, state, memory_order_release);
    pthread_mutex_unlock(&rec_lock);
    /* outside the lock: CUPTI's start-up calls the driver, whose hooks record */
    bool probe_cupti = state == 2 && rec_probe && !rec_touched;
    if (probe_cupti || COM_SETTING_BOOL(SHIM_CUPTI)) {
        bool on = shim_cupti_start();
        if (probe_cupti)
            atomic_store(&rec_cupti, on);
        if (probe_cupti && on)
            atomic_store(&rec_cupti_kernels, shim_cupti_enable_kernels());
        if (probe_cupti && !on)
            COM_WARN(SHIM, "no source of touched ranges: the trace records none");
    }
}

static void rec_drop_live(size_t i)
{
    sim_event_t ev = {.kind = SIM_EV_FREE, .u.free.id = rec_live[i].id};
    rec_event(&ev);
    rec_live[i] = rec_live[--rec_nlive];
}

void shim_record_alloc(uint64_t base, uint64_t size)
{
    if (!size || !shim_recording())
        return;
    pthread_mutex_lock(&rec_lock);
    rec_flush();
    /* a region freed through a path the shim does not see: retire it first */
    for (size_t i = 0; i < rec_nlive;)
        if (rec_live[i].base < base + size && base < rec_live[i].base + rec_live[i].size)
            rec_drop_live(i);
        else
            i++;
    if (rec_nlive == rec_cap) {
        gmux_status_t st = com_array_grow((void **)&rec_live, &rec_cap, rec_nlive + 1,
                                          sizeof(*rec_live), 256, SIZE_MAX);
        if (st != GMUX_OK) {
            rec_fail("growing the allocation table", st);
            goto unlock;
        }
    }
    uint64_t id = rec_next_id++;
    rec_live[rec_nlive++] = (shim_rec_alloc_t){.id = id, .base = base, .size = size};
    sim_event_t ev = {.kind = SIM_EV_ALLOC, .u.alloc = {.id = id, .base = base, .size = size}};
    rec_event(&ev);
unlock:
    pthread_mutex_unlock(&rec_lock);
}

void shim_record_free_range(uint64_t base, uint64_t size)
{
    if (!size || !shim_recording())
        return;
    uint64_t end = base + size < base ? UINT64_MAX : base + size;
    pthread_mutex_lock(&rec_lock);
    rec_flush();
    for (size_t i = 0; i < rec_nlive;)
        if (rec_live[i].base < end && base < rec_live[i].base + rec_live[i].size)
            rec_drop_live(i);
        else
            i++;
    pthread_mutex_unlock(&rec_lock);
}

void shim_record_free(uint64_t base)
{
    if (!shim_recording())
        return;
    pthread_mutex_lock(&rec_lock);
    rec_flush();
    for (size_t i = 0; i < rec_nlive; i++)
        if (rec_live[i].base == base) {
            rec_drop_live(i);
            break;
        }
    pthread_mutex_unlock(&rec_lock);
}

/* Kernel id of f, declaring its name on first use; false when the table is full. Lock held. */
static bool rec_kernel(CUfunction f, uint32_t *id_p)
{
    for (size_t i = 0; i < rec_nfuncs; i++)
        if (rec_kfunc[i] == f) {
            *id_p = rec_kid[i];
            return true;
        }
    if (rec_nfuncs == REC_MAX_KERNELS)
        return false;
    char name[SHIM_KNAME_MAX + 1];
    shim_func_name(f, name); /* the name the predictor looks it up by */
    if (!name[0])
        snprintf(name, sizeof(name), "kernel_%u", rec_nkernels); /* a name of its own */
    uint32_t id = rec_nkernels;
    for (uint32_t k = 0; k < rec_nkernels && id == rec_nkernels; k++)
        if (strcmp(rec_kname[k], name) == 0)
            id = k; /* the same kernel loaded twice (or again after an unload): one identity */
    if (id == rec_nkernels) {
        if (rec_nkernels == REC_MAX_KERNELS)
            return false;
        char *copy = strdup(name);
        if (!copy)
            return false;
        rec_kname[rec_nkernels++] = copy;
    }
    rec_kfunc[rec_nfuncs] = f;
    rec_kid[rec_nfuncs++] = id;
    *id_p = id;
    return true;
}

void shim_record_forget_functions(void)
{
    if (!shim_recording())
        return;
    pthread_mutex_lock(&rec_lock);
    rec_nfuncs = 0; /* kernels keep their ids: recorded launches refer to them */
    pthread_mutex_unlock(&rec_lock);
}

/*
 * Before a probed launch: the managed regions its pointer values point into go
 * back to the host, so that the launch faults on every page it touches there
 * (CUPTI sees faults only; a page left on the GPU by an earlier launch would be
 * touched unseen). Lock held; the previous launch has been synchronized.
 */
static void rec_make_cold(const uint64_t *vals, size_t n)
{
    uint64_t done[SHIM_MAX_CANDIDATES];
    size_t ndone = 0, moved = 0;
    CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
    for (size_t i = 0; i < n; i++) {
        shim_region_t r;
        if (!shim_regions_find(&shim_state.regions, vals[i], &r) || r.kind != SHIM_REGION_MANAGED)
            continue;
        bool seen = false;
        for (size_t j = 0; j < ndone && !seen; j++)
            seen = done[j] == r.base;
        if (seen)
            continue;
        done[ndone++] = r.base;
        if (SHIM_CALL(cuMemPrefetchAsync_v2, (CUdeviceptr)r.base, (size_t)r.size, host, 0, NULL) ==
            CUDA_SUCCESS)
            moved++;
    }
    if (moved) {
        rec_sync();
        SHIM_STAT_ADD(trace_evictions, moved);
    }
}

void shim_record_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                        void **params, void **extra)
{
    if (!shim_recording())
        return;
    uint64_t vals[SHIM_MAX_CANDIDATES];
    size_t n = shim_params_values(f, params, extra, vals, SHIM_MAX_CANDIDATES);
    pthread_mutex_lock(&rec_lock);
    rec_flush();
    uint32_t kernel;
    if (rec_failed || !rec_kernel(f, &kernel)) {
        if (!rec_failed)
            COM_WARN(SHIM, "kernel table full: launch not recorded");
        goto unlock;
    }
    for (size_t i = 0; i < n; i++) {
        bool ptr = false;
        for (size_t j = 0; j < rec_nlive && !ptr; j++)
            ptr = vals[i] >= rec_live[j].base && vals[i] - rec_live[j].base < rec_live[j].size;
        rec_pend_args[i] = (sim_arg_t){.kind = ptr ? ENG_ARG_PTR : ENG_ARG_VAL, .value = vals[i]};
    }
    rec_pend = (sim_launch_ev_t){.kernel = kernel,
                                 .grid = {grid[0], grid[1], grid[2]},
                                 .block = {block[0], block[1], block[2]},
                                 .time_ns = 0,
                                 .nargs = (uint32_t)n,
                                 .args = rec_pend_args};
    rec_pending = true;
    if (rec_cold && (rec_touched || atomic_load(&rec_cupti)))
        rec_make_cold(vals, n);
unlock:
    pthread_mutex_unlock(&rec_lock);
}

__attribute__((destructor)) static void shim_record_fini(void)
{
    if (atomic_load(&shim_record_state_) != 2 || shim_forked_child())
        return;
    pthread_mutex_lock(&rec_lock);
    rec_flush();
    char err[512];
    gmux_status_t wst = rec_failed ? GMUX_ERR_STATE : rec_write_all();
    gmux_status_t st = sim_trace_writer_close(rec_writer, err, sizeof(err));
    if (wst != GMUX_OK && st == GMUX_OK)
        snprintf(err, sizeof(err), "writing the events failed (%s)", gmux_status_str(wst));
    if (st != GMUX_OK || wst != GMUX_OK) {
        COM_ERROR(SHIM, "no trace written: %s", err);
        remove(rec_path); /* a partial trace would look complete */
    }
    rec_writer = NULL;
    atomic_store(&shim_record_state_, 1);
    for (uint32_t i = 0; i < rec_nkernels; i++)
        free(rec_kname[i]);
    free(rec_live);
    free(rec_evs);
    free(rec_args);
    free(rec_rngs);
    rec_evs = NULL;
    rec_args = NULL;
    rec_rngs = NULL;
    rec_live = NULL;
    rec_nlive = rec_cap = 0;
    pthread_mutex_unlock(&rec_lock);
}

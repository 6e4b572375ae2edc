/*
 * The shim's recording mode (`gmux trace -- CMD`, `gmux profile -- CMD`):
 * with GMUX_SHIM_TRACE=path, every tracked allocation, free and kernel
 * launch of the program is written to path in the simulator's trace format
 * (sim/trace_io.h), as one task. A launch carries its kernel (named with
 * cuFuncGetName where the driver has it), grid, block and the decoded
 * parameter words (a word inside a tracked allocation is a pointer
 * argument, any other a value). Compute time: see below (probe mode). The
 * format declares every kernel before the first event, so events are kept in
 * memory and the file is written at exit (memory grows with the number of
 * events: about 100 bytes per launch plus its arguments and ranges).
 *
 * With GMUX_SHIM_TRACE_PROBE=1 every launch is a probe: before the next
 * event is written the context is synchronized and the ranges the launch
 * touched are collected, clipped to the live allocations and merged. The
 * touched ranges come from a range source: the test double's fake CUPTI
 * (gmux_test_cupti_touched in the driver), else CUPTI page faults (cupti.h).
 * Without a source the trace has no ranges and
 * its task name ends in "~noranges".
 * In probe mode each launch's compute time is its kernel duration from the
 * same source (CUPTI kernel records; the double's gmux_test_cupti_kernel_ns);
 * at exit a launch that faulted takes the least time of a fault-free launch of
 * the same kernel, grid and block, where there is one.
 *
 * Calls come from the hooks after shim_ensure_init(). Nothing is done, and
 * nothing allocated, when recording is off (one relaxed load per call).
 *
 * Thread-safety: any thread. LOCKING: one mutex serialises the writer and
 * the recorder's tables (recording mode is not a fast path).
 */
#ifndef SHIM_RECORD_H
#define SHIM_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

extern atomic_int shim_record_state_; /* 0 not decided, 1 off, 2 on */

void shim_record_init_slow(void);

static inline bool shim_recording(void)
{
    int s = atomic_load_explicit(&shim_record_state_, memory_order_acquire);
    if (s == 0) {
        shim_record_init_slow();
        s = atomic_load_explicit(&shim_record_state_, memory_order_acquire);
    }
    return s == 2;
}

/* An allocation [base, base+size) appeared / the one at base went away. */
void shim_record_alloc(uint64_t base, uint64_t size);
void shim_record_free(uint64_t base);
/* Frees every recorded allocation overlapping [base, base + size): a VMM
 * unmap, which names a range, not an allocation's base. */
void shim_record_free_range(uint64_t base, uint64_t size);

/* A module or library was unloaded: the handles of its functions may come
 * back for other functions of a module loaded later, so every function is
 * looked up (named) again at its next launch. Kernels known by name keep
 * their identity. */
void shim_record_forget_functions(void);

/* A launch about to be issued (its touched ranges are collected before the next event). */
void shim_record_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                        void **params, void **extra);

#endif /* SHIM_RECORD_H */

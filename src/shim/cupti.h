/*
 * CUPTI unified-memory activity for the shim, loaded at run time with
 * dlopen (libgmux.so never links CUPTI; without it the shim says so once
 * and goes on). Enables the unified-memory counters (GPU page faults with
 * their addresses, bytes moved host to device and device to host), adds
 * them to the shim's stats (um_faults, um_bytes_htod, um_bytes_dtoh) and
 * keeps the fault addresses so the recorder can attribute them to a probed
 * launch (record.c).
 *
 * Started by the recorder in probe mode, or with GMUX_SHIM_CUPTI=1 for the
 * stats alone. Records arrive in CUPTI's buffers; shim_cupti_flush() asks
 * CUPTI to hand over everything pending.
 *
 * Thread-safety: any thread. LOCKING: one mutex guards the fault addresses.
 */
#ifndef SHIM_CUPTI_H
#define SHIM_CUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Loads CUPTI and enables the counters (once); whether they are on. */
bool shim_cupti_start(void);

/* Also records every kernel's execution (the recorder's compute times);
 * whether that is on. Starts CUPTI if needed. */
bool shim_cupti_enable_kernels(void);

/* Sum of the durations (end - start, ns) of the kernel records received since
 * the last call, and how many (*kernels_p, may be NULL). Does not flush: call
 * after shim_cupti_flush() or shim_cupti_take_faults(). */
uint64_t shim_cupti_take_kernel_ns(uint64_t *kernels_p);

/* Hands over every pending record (no-op when CUPTI is off). */
void shim_cupti_flush(void);

/*
 * Flushes, then moves the fault addresses gathered since the last call to
 * addrs (at most max; the rest are dropped and *lost_p, if given, says how
 * many). Returns how many were written.
 */
size_t shim_cupti_take_faults(uint64_t *addrs, size_t max, uint64_t *lost_p);

/*
 * Counts one CUPTI activity record (a CUpti_Activity; unified-memory counter
 * records of kind HtoD bytes, DtoH bytes and GPU page fault count, and kernel
 * records) into the stats, the fault addresses and the kernel time. Called from CUPTI's buffer
 * callback; tests feed it synthetic records. Only built with cupti.h.
 */
void shim_cupti_account(const void *record);

#endif /* SHIM_CUPTI_H */

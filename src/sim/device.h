/*
 * The simulated device: a virtual clock, one compute engine and two copy
 * engines (host to device, device to host) that run concurrently with
 * compute and with each other, each in issue order at its bandwidth plus a
 * fixed cost per transfer call. It implements the engine's backend
 * (engine/backend.h); tickets are completion times in virtual nanoseconds,
 * so waits and fences are exact without any table. A partial transfer (the
 * backend's partial op: chunks a demand fault brought in part of) costs its
 * call and the bytes that move.
 *
 * Thread-safety: one simulation thread.
 */
#ifndef SIM_DEVICE_H
#define SIM_DEVICE_H

#include <stdint.h>

#include "engine/backend.h"
#include "sim/params.h"

typedef struct sim_device {
    sim_params_t params;
    uint64_t now_ns;     /* compute engine: end of the last launch */
    uint64_t free_ns[2]; /* per direction (eng_dir_t): end of the last transfer */
    uint64_t wait_ns[2]; /* per direction: the next transfer starts after this */
    uint64_t bytes[2];   /* moved per direction */
    uint64_t calls[2];   /* transfer calls per direction */
    uint64_t busy_ns[2]; /* per direction: time spent moving data, call costs included */
} sim_device_t;

/* Clock arithmetic saturates at UINT64_MAX instead of wrapping; a run whose
 * clock passes SIM_MAX_TIME_NS (sim/run.h) is refused. */
static inline uint64_t sim_ns_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The wait for faults faults served batch (>= 1) at a time, latency_ns per
 * batch; UINT64_MAX where it would pass it. */
static inline uint64_t sim_fault_wait_ns(uint64_t faults, uint64_t batch, uint64_t latency_ns)
{
    uint64_t batches = faults / batch + (faults % batch != 0), ns;
    return __builtin_mul_overflow(batches, latency_ns, &ns) ? UINT64_MAX : ns;
}

/* ns rounded up to whole nanoseconds, UINT64_MAX beyond them. */
uint64_t sim_ns_ceil(double ns);

void sim_device_init(sim_device_t *d, const sim_params_t *p);

/* The backend view of the device (ctx = d). */
eng_backend_t sim_device_backend(sim_device_t *d);

/* Time to move len bytes in direction dir, the call cost included. */
uint64_t sim_device_xfer_ns(const sim_device_t *d, eng_dir_t dir, uint64_t len);

#endif /* SIM_DEVICE_H */

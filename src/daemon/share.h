/*
 * The share mode of gmuxd: whether the registered tasks' memory fits on the
 * device, so that they may all hold the GPU at once instead of taking turns.
 *
 * Time slicing only pays when memory is oversubscribed: when every task's
 * memory fits, the GPU runs their kernels concurrently and slicing halves
 * each one's throughput for nothing. So the arbiter (arbiter.h) runs in one
 * of two modes, decided here:
 *
 * - footprint of a task: the most device memory it has said it may use,
 *   max(declared budget, bytes allocated (last STATS total), bytes of its
 *   announced working set (last PENDING ranges)). Idle tasks count too:
 *   their memory stays allocated.
 * - capacity: GMUX_DAEMON_CAPACITY when set, else the smallest device memory
 *   any task reported (STATS device, v2); 0 when neither is known, and then
 *   the mode is always sliced.
 * - shared while the sum of the footprints stays within (100 - headroom)% of
 *   the capacity (GMUX_DAEMON_SHARE_HEADROOM, 10 by default: room for CUDA
 *   contexts, allocator slack and other processes); sliced as soon as it goes
 *   above; shared again only once the sum is at or below
 *   (100 - headroom - DMN_SHARE_BAND_PCT)% (hysteresis: a task allocating and
 *   freeing around the line does not make the mode flap).
 * - GMUX_DAEMON_SHARE=0: always sliced.
 *
 * Ownership: plain values. Thread-safety: none (the daemon is single-threaded).
 */
#ifndef DMN_SHARE_H
#define DMN_SHARE_H

#include <stdint.h>

#include <gmux/status.h>

#include "daemon/proto.h"

#define DMN_SHARE_BAND_PCT     5u /* hysteresis, percentage points below the leave line */
#define DMN_SHARE_HEADROOM_MAX 90u

typedef struct dmn_share_params {
    int enabled;           /* 0: always sliced */
    uint64_t capacity;     /* device bytes; 0: the smallest the tasks report */
    uint32_t headroom_pct; /* 0..DMN_SHARE_HEADROOM_MAX */
} dmn_share_params_t;

typedef struct dmn_share {
    dmn_share_params_t p;
    uint32_t mode;      /* dmn_mode_t */
    uint64_t capacity;  /* what the last update decided against, 0: unknown */
    uint64_t footprint; /* the last update's sum */
    uint64_t changes;   /* mode switches so far */
} dmn_share_t;

/* Enabled, capacity from the tasks' reports, headroom 10%: mode sliced. */
void dmn_share_init(dmn_share_t *s, const dmn_share_params_t *p);

/* GMUX_DAEMON_SHARE, GMUX_DAEMON_CAPACITY, GMUX_DAEMON_SHARE_HEADROOM.
 * GMUX_ERR_RANGE (logged) for a headroom above DMN_SHARE_HEADROOM_MAX. */
gmux_status_t dmn_share_params_from_settings(dmn_share_params_t *p);

/* A task's footprint (see above). */
uint64_t dmn_share_footprint(uint64_t budget, uint64_t total, uint64_t working_set);

/* The capacity the mode is decided against: the setting, else the smallest
 * device memory the tasks reported (0: none). */
uint64_t dmn_share_capacity(const dmn_share_t *s, uint64_t reported_device);

/* Decides the mode for footprint bytes in all and the smallest device memory
 * the tasks reported (0: none). Returns 1 when the mode changed. */
int dmn_share_update(dmn_share_t *s, uint64_t footprint, uint64_t reported_device);

/* The lines: shared is left above leave_bytes, entered at or below enter_bytes. */
uint64_t dmn_share_leave_bytes(const dmn_share_t *s);
uint64_t dmn_share_enter_bytes(const dmn_share_t *s);

#endif /* DMN_SHARE_H */

/*
 * Simulated device memory that carries data, for the trace-driven test
 * client (gmux_trace_client): what lets an integration test tell a correct
 * schedule from one that loses or corrupts data.
 *
 * Every allocation gets two byte arrays, a host copy and a device copy, of
 * one byte per `granule` bytes of the allocation (a scaled image: a 64 MiB
 * allocation with a granule of 64 carries 1 MiB of data). Each chunk is
 * absent, resident (its device copy is the truth) or displaced (resident in
 * the engine's view, but moved to the host by a daemon EVICT order). A fill
 * copies the chunk's host bytes to the device, an eviction writes the device
 * bytes back, a discard drops them (a write since the fill is lost: when the
 * bytes are read again, the checksum differs). A launch first checks that every chunk its
 * recorded ranges touch is resident (an error otherwise), then hashes the
 * device bytes of its read ranges and writes a function of that hash (and,
 * for read-write ranges, of the old bytes) into its write ranges.
 *
 * Capacity: resident bytes (whole chunks) never exceed the budget, and,
 * with a shared counter (a file mapped by every client of one test), the sum
 * over the clients never exceeds the device capacity; a fill that would
 * break either is refused and recorded as an error.
 *
 * The checksum chains the hash of what each launch read, in program order,
 * and at the end the contents of the allocations still live: whatever a
 * launch reads wrong, or whatever is left wrong, changes it. Freed data is
 * dead and not counted (the engine may drop it without a write-back).
 *
 * tmem_backend() is the engine's backend: the simulated device's clock and
 * costs (sim/device.h) with the data moves above.
 *
 * Ownership: tmem owns its regions and arrays. Thread-safety: one thread;
 * the shared counter is atomic across processes.
 */
#ifndef TMEM_H
#define TMEM_H

#include <stdatomic.h>
#include <stdint.h>

#include <gmux/status.h>

#include "daemon/proto.h"
#include "engine/backend.h"
#include "engine/launch.h"
#include "sim/device.h"

/* A page shared by the clients of one test: resident bytes of all, their peak. */
typedef struct tmem_shared {
    _Atomic uint64_t resident;
    _Atomic uint64_t peak;
} tmem_shared_t;

typedef struct tmem_params {
    uint64_t chunk;        /* residency unit: the engine's chunk size */
    uint64_t budget;       /* device bytes this task may hold */
    uint64_t granule;      /* allocation bytes per data byte; a power of two <= chunk */
    tmem_shared_t *shared; /* NULL: no cross-task counter */
    uint64_t device;       /* capacity of the shared device (with shared) */
    const sim_params_t *sim;
} tmem_params_t;

typedef struct tmem_stats {
    uint64_t resident, peak;  /* bytes (whole chunks) */
    uint64_t filled, evicted; /* bytes moved by the engine */
    uint64_t plan_evicted;    /* bytes moved out by daemon EVICT orders */
    uint64_t plan_filled;     /* bytes brought back by daemon FILL orders */
    uint64_t restored;        /* displaced bytes brought back before a launch */
    uint64_t discarded;       /* bytes dropped without a write-back (engine) */
    uint64_t launches;
} tmem_stats_t;

typedef struct tmem tmem_t;

gmux_status_t tmem_create(const tmem_params_t *p, tmem_t **out);
void tmem_destroy(tmem_t *m);

/* The engine's backend (ctx = m). */
eng_backend_t tmem_backend(tmem_t *m);
sim_device_t *tmem_device(tmem_t *m);

/* A new allocation with deterministic initial contents (from id). */
gmux_status_t tmem_alloc(tmem_t *m, uint64_t id, uint64_t base, uint64_t size);

/* Runs one launch over its recorded ranges. GMUX_ERR_STATE: a touched chunk
 * is not resident; GMUX_ERR_NOT_FOUND: a range outside every allocation. */
gmux_status_t tmem_launch(tmem_t *m, uint32_t kernel, const eng_range_t *r, uint32_t n);

/* A daemon order: EVICT writes back and displaces resident chunks in the
 * ranges; FILL brings displaced ones back (nothing beyond the engine's set). */
void tmem_plan(tmem_t *m, dmn_plan_kind_t kind, const dmn_range_t *r, uint32_t n);

/* Bytes displaced now; tmem_restore brings them all back (before a launch). */
uint64_t tmem_displaced(const tmem_t *m);
void tmem_restore(tmem_t *m);

/* The checksum of what every launch read so far and of what is live now. */
uint64_t tmem_checksum(const tmem_t *m);

const tmem_stats_t *tmem_stats(const tmem_t *m);
/* The first error (overrun, bad range, not resident), "" if none. */
const char *tmem_error(const tmem_t *m);

#endif /* TMEM_H */

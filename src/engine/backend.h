/*
 * The engine's only way to move memory: a backend. The simulated device
 * (src/sim) implements it with a virtual clock and a cost model; the CUDA
 * shim (src/shim) implements it with cuMemPrefetchAsync on a migration stream,
 * events and cuMemAdvise. The placement policy that `gmux sim` evaluates is
 * therefore, line for line, the one that migrates real pages.
 *
 * Transfers are asynchronous: prefetch and evict return a ticket at once and
 * the work completes in issue order per direction; fence(ticket) waits until
 * that transfer (and every earlier one of the same direction) is done.
 * Addresses are the task's device virtual addresses; ranges are whole chunks
 * when the engine calls (it never asks for a partial chunk; where only part of
 * a range has to move, it says how much through the optional partial op).
 *
 * Thread-safety: a backend instance is driven by one engine thread.
 */
#ifndef ENG_BACKEND_H
#define ENG_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

typedef uint64_t eng_ticket_t;

/* Transfer directions (for the optional wait op). */
typedef enum eng_dir {
    ENG_DIR_H2D = 0,
    ENG_DIR_D2H = 1,
} eng_dir_t;

/* What a partial transfer stands for (the partial op). */
typedef enum eng_xfer_kind {
    ENG_XFER_PREFETCH = 0,
    ENG_XFER_EVICT = 1,
    ENG_XFER_CLEAN = 2,
    /* Simulator only (eng_migrate_set_fault): the bytes a demand fault moves to
     * the device, or its victim's write-back, which the driver moves with no
     * API call (a GPU backend never sees them: the kernel faults). */
    ENG_XFER_FAULT_IN = 3,
    ENG_XFER_FAULT_OUT = 4,
} eng_xfer_kind_t;

typedef struct eng_backend_ops {
    /* Host-to-device migration of [addr, addr+len) of task. */
    gmux_status_t (*prefetch)(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                              eng_ticket_t *ticket_p);
    /* Device-to-host migration (eviction) of [addr, addr+len) of task. */
    gmux_status_t (*evict)(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                           eng_ticket_t *ticket_p);
    /* Waits until the transfer with this ticket has completed. */
    gmux_status_t (*fence)(void *ctx, eng_ticket_t ticket);
    /* The backend's clock in nanoseconds (virtual in the simulator). */
    uint64_t (*now)(void *ctx);
    /* Added for migration plans (may be NULL when the backend orders
     * everything itself): the next transfer issued in direction dir starts
     * only after ticket has completed. The ticket may come from the other
     * direction (a fill waits for the write-back that frees its slot) or from
     * the compute stream (an eviction waits for the last launch that used the
     * chunk; the caller that runs launches hands these to the engine). CUDA:
     * cuStreamWaitEvent. Tickets of one kind increase in issue order. */
    gmux_status_t (*wait)(void *ctx, eng_dir_t dir, eng_ticket_t ticket);
    /* Added, may be NULL: drops the device copy of [addr, addr+len) without a
     * transfer, the host copy being valid (a clean chunk) or the data dead;
     * ordered after the D2H stream's earlier work and the compute ticket given
     * to the last wait. CUDA: cuMemDiscardBatchAsync, or prefetch to host when
     * absent. */
    gmux_status_t (*discard)(void *ctx, uint32_t task, uint64_t addr, uint64_t len);
    /* Added, may be NULL: the task freed [addr, addr+len); the backend forgets
     * whatever it knew about it (the program's own free releases the memory). */
    void (*release)(void *ctx, uint32_t task, uint64_t addr, uint64_t len);
    /* Added, may be NULL (then the engine never cleans): copies [addr,
     * addr+len) to the host and keeps the device copy, so that a later
     * eviction of it is a drop; device to host, in issue order with evict,
     * after the compute ticket given to the last wait. CUDA: read-duplicate
     * (cuMemAdvise SetReadMostly, then a prefetch to the CPU). */
    gmux_status_t (*clean)(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                           eng_ticket_t *ticket_p);
    /* Added, may be NULL (never idle): whether every transfer issued in
     * direction dir has completed. CUDA: cuEventQuery on the last one. */
    bool (*idle)(void *ctx, eng_dir_t dir);
    /* Added, may be NULL (then the plain op moves the whole range): a prefetch,
     * evict or clean (kind) of [addr, addr+len) of which only `bytes` move, the
     * rest being already where it goes: a chunk a demand fault brought in part
     * of (engine.h, fault_blocks) is filled up, or written back, by its missing
     * or resident blocks; a fault moves its blocks only. Tickets and ordering
     * as the op of that kind. A GPU backend makes the plain call on the whole
     * range (the driver skips pages already in place); the simulated device
     * charges `bytes`. */
    gmux_status_t (*partial)(void *ctx, eng_xfer_kind_t kind, uint32_t task, uint64_t addr,
                             uint64_t len, uint64_t bytes, eng_ticket_t *ticket_p);
} eng_backend_ops_t;

typedef struct eng_backend {
    const eng_backend_ops_t *ops;
    void *ctx;
} eng_backend_t;

#endif /* ENG_BACKEND_H */

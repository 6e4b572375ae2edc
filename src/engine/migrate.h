/*
 * Migration plans: the fills and evictions placement decided, turned into as
 * few backend transfers as possible.
 *
 * Decisions are queued (eng_migrate_add) and issued in batches of at most
 * `batch_chunks` fills. Within a batch: the victims that are dirty are written
 * back (device to host) after the last launch that used them, runs of
 * adjacent chunks merged into one transfer; the fills (host to device) wait
 * only for their own batch's write-backs and slot releases, so evictions of
 * the next batch overlap with fills of this one. Clean victims are dropped
 * (the host copy is still valid, or the data is dead) through the backend's
 * discard when it has one. Each filled chunk gets the ticket of its
 * transfer in eng_chunk_t.fill_ticket, which its launch waits for (valid
 * after eng_migrate_flush). See eng_migrate_set_slot_order for the order
 * fills take freed slots in.
 *
 * Thread-safety: one engine thread.
 */
#ifndef ENG_MIGRATE_H
#define ENG_MIGRATE_H

#include <stdint.h>

#include <gmux/status.h>

#include "engine/backend.h"
#include "engine/placement.h"
#include "engine/regions.h"

typedef struct eng_migrate_stats {
    uint64_t bytes_h2d;
    uint64_t bytes_d2h;
    uint64_t fills;      /* chunks filled */
    uint64_t writebacks; /* dirty chunks written back */
    uint64_t drops;      /* clean chunks evicted without a transfer */
    uint64_t calls_h2d;  /* backend prefetch calls */
    uint64_t calls_d2h;  /* backend evict calls */
    uint64_t cleans;     /* dirty chunks written back ahead and kept (counted in bytes_d2h) */
    /* Cleaning's bytes (of bytes_d2h), and what became of them
     * (eng_migrate_clean_end): written again, or freed (its data dead),
     * before an eviction (the copy was wasted), or evicted clean (the copy
     * saved a write-back). The rest is on the device still. */
    uint64_t bytes_clean;
    uint64_t clean_rewritten, clean_freed, clean_dropped;
} eng_migrate_stats_t;

/* What became of a cleaned chunk (eng_migrate_clean_end). */
typedef enum eng_clean_end {
    ENG_CLEAN_REWRITTEN = 0, /* a launch wrote it */
    ENG_CLEAN_FREED = 1,     /* its region's free ran, or it was evicted dead */
    ENG_CLEAN_DROPPED = 2,   /* evicted with its host copy valid */
} eng_clean_end_t;

typedef struct eng_migrate eng_migrate_t;

gmux_status_t eng_migrate_create(eng_regions_t *regs, const eng_backend_t *be,
                                 uint32_t batch_chunks, eng_migrate_t **m_p);
void eng_migrate_destroy(eng_migrate_t *m);

/* Queues the fill of chunk (ENG_NONE: none, an eviction only) into the slot of
 * victim (ENG_NONE: a free slot).
 * victim_dirty says whether the victim must be written back; victim_last is
 * the compute ticket of the slot's last use (0: none), which the fill waits
 * for. Issues a batch when one is full. */
gmux_status_t eng_migrate_add(eng_migrate_t *m, uint32_t chunk, uint32_t victim, bool victim_dirty,
                              eng_ticket_t victim_last);

/* The same, for chunks on the device in part (eng_chunk_t.blocks): the fill
 * moves fill_bytes of its chunk, the victim's write-back wb_bytes (each the
 * chunk size for a whole chunk, which eng_migrate_add passes). A run of
 * chunks whose bytes fall short of its length goes through the backend's
 * partial op. */
gmux_status_t eng_migrate_add_bytes(eng_migrate_t *m, uint32_t chunk, uint64_t fill_bytes,
                                    uint32_t victim, bool victim_dirty, uint64_t wb_bytes,
                                    eng_ticket_t victim_last);

/* Block size of eng_chunk_t.blocks (0: chunks are never partial), for the
 * bytes cleaning moves. */
void eng_migrate_set_block(eng_migrate_t *m, uint64_t block);

/* Fault mode (on): what is issued until it is turned off serves a demand
 * fault, which the kernel takes on a GPU with no API call (the engine, which
 * knows the touched bytes only in the simulator, moves them for it): its
 * fills and write-backs go through the backend's partial op as
 * ENG_XFER_FAULT_IN / _OUT, so that the simulated device charges no call
 * cost. Without a partial op the plain ops are used. Queue nothing else
 * while it is on. */
void eng_migrate_set_fault(eng_migrate_t *m, bool on);

/* Slot order (on): a full batch only issues its evictions; at
 * eng_migrate_flush (the end of a round of replacements) the round's fills go
 * in plan order, in batches, the i-th taking the i-th slot the round frees:
 * free slots and dropped victims first (their last use has run), then the
 * write-backs in issue order. Off (the default): each batch's fills wait for
 * all of its slots, write-backs included. */
void eng_migrate_set_slot_order(eng_migrate_t *m, bool on);

/*
 * Cleaning: while the backend says its device-to-host engine is idle (asked
 * before the first chunk and after each one cleaned: cleaning never queues
 * ahead of a later write-back for long), writes back up to max dirty chunks
 * of the placement, in the order of the dirty heap (eng_place_dirty_at:
 * farthest next use first, roughly), and keeps them on the device (backend
 * clean), so that their later eviction is a drop. Only chunks whose planned
 * uses have all run (shadow_last below exec_next), whose last launch has
 * completed and whose next planned use does not write them (ENG_CHUNK_NEXTW:
 * that use would make them dirty again) and whose data is not dead
 * (eng_regions_chunk_dead: the planned free drops it) are cleaned; a later
 * write makes them dirty again. Nothing happens without the backend's clean
 * and idle ops. Call after eng_migrate_flush.
 */
gmux_status_t eng_migrate_clean_idle(eng_migrate_t *m, eng_placement_t *place, uint64_t exec_next,
                                     uint32_t max);

/* Counts what became of the bytes cleaning moved of a chunk cleaned since its
 * last write (flag ENG_CHUNK_CLEANED, which it clears; no-op without it): the
 * engine calls it when a launch writes the chunk, when an eviction takes it
 * and when its region's free runs. */
void eng_migrate_clean_end(eng_migrate_t *m, uint32_t chunk, eng_clean_end_t how);

/* Issues everything queued. */
gmux_status_t eng_migrate_flush(eng_migrate_t *m);

/* Tells the backend a region was freed (before its chunk ids are reused). */
void eng_migrate_release(eng_migrate_t *m, uint32_t region);

const eng_migrate_stats_t *eng_migrate_stats(const eng_migrate_t *m);

#endif /* ENG_MIGRATE_H */

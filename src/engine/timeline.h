/*
 * The timeline: the future reference string of chunks across all tasks.
 *
 * Each task's pending launches (pulled in program order from a feed: the
 * simulator's trace reader, later the shim's launch queues) are laid out in
 * the order the time-slice scheduler (sched.h) will run them, as a window of
 * planned entries: launches (with the chunks they will touch) and frees.
 * Every entry has a global position; every chunk keeps the queue of its
 * future positions inside the window, so "next use of chunk c after the
 * current position" is O(1) (eng_chunk_t.next_use, ENG_POS_INF when c is not
 * referenced in the window) and stays exact as the window moves; the
 * chunk's ENG_CHUNK_NEXTW flag says whether that next use writes it.
 *
 * The window holds at least `lookahead` launches (unless the feeds run dry);
 * memory grows with the window and the chunks, never with the trace length.
 *
 * Working sets come from a pluggable predictor (predict(launch) -> ranges);
 * without one the recorded ranges are used. The recorded ranges are kept too
 * (the "truth" references), so a simulator can charge what really happens.
 *
 * Ownership: entry pointers stay valid until the next fill or pop.
 * Thread-safety: one engine thread.
 */
#ifndef ENG_TIMELINE_H
#define ENG_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/launch.h"
#include "engine/regions.h"
#include "engine/sched.h"

typedef enum eng_item_kind {
    ENG_ITEM_ALLOC = 1,
    ENG_ITEM_FREE = 2,
    ENG_ITEM_LAUNCH = 3,
} eng_item_kind_t;

/* One event of a task's program-ordered stream. */
typedef struct eng_item {
    eng_item_kind_t kind;
    uint64_t id;   /* ALLOC, FREE */
    uint64_t base; /* ALLOC */
    uint64_t size; /* ALLOC */
    eng_launch_t launch;
    uint64_t time_ns; /* LAUNCH: compute time on an unloaded GPU */
    uint32_t nranges;
    const eng_range_t *ranges; /* LAUNCH: recorded touched ranges */
} eng_item_t;

typedef struct eng_feed {
    /* Next item of task; GMUX_ERR_NOT_FOUND at the end of its stream. The item
     * stays valid until the next call for the same task. */
    gmux_status_t (*next)(void *ctx, uint32_t task, eng_item_t *item);
    void *ctx;
} eng_feed_t;

/* A working-set predictor: the ranges a launch will touch (it may read the
 * recorded ones only while no learned predictor exists). The returned array
 * stays valid until the next call. GMUX_ERR_BUSY asks to plan this launch
 * later, once the launches already planned have run (a predictor still
 * learning the kernel): the window stops there and the same launch is asked
 * for again at the next fill. Only valid while some planned launch has not
 * run (GMUX_ERR_STATE otherwise). */
typedef gmux_status_t (*eng_predict_fn)(void *ctx, uint32_t task, const eng_launch_t *launch,
                                        const eng_range_t *recorded, uint32_t nrecorded,
                                        const eng_range_t **ranges_p, uint32_t *n_p);

#define ENG_REF_WRITE    (1u << 31)
#define ENG_REF_CHUNK(r) ((r) & ~ENG_REF_WRITE)

typedef struct eng_entry {
    uint64_t pos;      /* global position in the plan (consecutive, from 0) */
    uint64_t slice;    /* time slice number (consecutive, from 1) */
    uint64_t time_ns;  /* LAUNCH */
    uint64_t ref_off;  /* predicted references (drive placement) */
    uint64_t tref_off; /* recorded references (what the launch really touches) */
    uint32_t nrefs;
    uint32_t ntrefs;
    uint32_t task;
    uint32_t kernel;
    uint32_t region; /* FREE: region to release once executed */
    uint8_t kind;    /* ENG_ITEM_LAUNCH or ENG_ITEM_FREE */
} eng_entry_t;

typedef struct eng_timeline_params {
    uint32_t lookahead; /* launches kept planned ahead (>= 1) */
    eng_feed_t feed;
    eng_predict_fn predict; /* NULL: recorded ranges */
    void *predict_ctx;
    /* Called when a chunk's next_use changes (may be NULL). */
    void (*next_use_changed)(void *ctx, uint32_t chunk);
    /* Called for every use planned, with its position (may be NULL). */
    void (*use_added)(void *ctx, uint32_t chunk, uint64_t pos);
    void *cb_ctx;
    /* Added: with a block size (a power of two dividing the chunk size, at
     * most 32 blocks per chunk), every reference also carries the mask of the
     * chunk's blocks its launch touches (eng_timeline_blocks), so that a
     * simulator can charge a fault for what the launch touches rather than
     * for the whole chunk. 0: no masks. */
    uint64_t block_size;
} eng_timeline_params_t;

typedef struct eng_timeline eng_timeline_t;

gmux_status_t eng_timeline_create(const eng_timeline_params_t *p, eng_regions_t *regs,
                                  eng_sched_t *sched, eng_timeline_t **tl_p);
void eng_timeline_destroy(eng_timeline_t *tl);

/* Plans ahead until the window holds `lookahead` launches, every feed has
 * ended, or the predictor deferred a launch (GMUX_ERR_BUSY, planned first at
 * the next fill). Feed errors are returned as they are. */
gmux_status_t eng_timeline_fill(eng_timeline_t *tl);

/* Entries planned and not yet popped; the i-th from the front, or NULL. */
uint64_t eng_timeline_count(const eng_timeline_t *tl);
const eng_entry_t *eng_timeline_peek(const eng_timeline_t *tl, uint64_t i);

/* References of an entry (ENG_REF_CHUNK / ENG_REF_WRITE). */
const uint32_t *eng_timeline_refs(const eng_timeline_t *tl, const eng_entry_t *e);
const uint32_t *eng_timeline_truth(const eng_timeline_t *tl, const eng_entry_t *e);
/* Beside the truth references (same index), the blocks of each chunk the
 * launch's recorded ranges touch: bit k is the chunk's k-th block of
 * block_size bytes. NULL when the timeline has no block size. */
const uint32_t *eng_timeline_blocks(const eng_timeline_t *tl, const eng_entry_t *e);

/* Removes the front entry once executed: its chunks' next uses move on. A
 * FREE entry's region must have been released by the caller already. */
void eng_timeline_pop(eng_timeline_t *tl);

/* The first planned use of chunk strictly after position q. Successive calls
 * for one chunk must not decrease q (a shadow pass moving forward), and q
 * must not lie before the front entry; O(1) amortised. ENG_POS_INF if none. */
uint64_t eng_timeline_next_after(eng_timeline_t *tl, uint32_t chunk, uint64_t q);

/* Whether every feed has ended and the window is empty. */
bool eng_timeline_done(const eng_timeline_t *tl);

/* Largest number of distinct chunks of any launch planned so far. */
uint32_t eng_timeline_max_ws(const eng_timeline_t *tl);

#endif /* ENG_TIMELINE_H */

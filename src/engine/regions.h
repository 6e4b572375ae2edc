/*
 * Regions and chunks: the engine's map of every task's memory.
 *
 * Each allocation of a task is a region [base, base+size) split into chunks
 * of one size (2 MiB by default, 64 KiB as an option). Chunks are numbered
 * globally (0..) so that every other engine module (timeline, placement, the
 * migration plans) can keep per-chunk state in flat arrays indexed by chunk
 * id. A chunk id is reused only after its region has been released, which
 * happens when execution (not planning) reaches the region's free: launches
 * planned before the free may still name its chunks.
 *
 * Memory grows with the number of live regions and chunks only.
 *
 * Ownership: the regions object owns the chunk array; pointers returned by
 * eng_regions_chunk() stay valid until the next eng_regions_alloc().
 * Thread-safety: one engine thread.
 */
#ifndef ENG_REGIONS_H
#define ENG_REGIONS_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

#define ENG_NONE    UINT32_MAX
#define ENG_POS_INF UINT64_MAX

enum {
    ENG_CHUNK_RESIDENT = 1u << 0, /* placed in device memory (by plan: placement's set) */
    ENG_CHUNK_DIRTY = 1u << 1,    /* written since it was last filled: eviction writes back */
    ENG_CHUNK_LIVE = 1u << 2,     /* belongs to a region that has not been released */
    ENG_CHUNK_PRESENT = 1u << 3,  /* its fill has been issued and no eviction since */
    ENG_CHUNK_RESERVE = 1u << 4,  /* present in a fault-reserve slot, outside the plan */
    ENG_CHUNK_WPLAN = 1u << 5,    /* engine: a planned launch writes it after its planned fill */
    ENG_CHUNK_HDIRTY = 1u << 6,   /* placement: kept among the dirty chunks (OPT) */
    ENG_CHUNK_PARTIAL = 1u << 7,  /* engine: on the device in part (eng_chunk_t.blocks) */
    ENG_CHUNK_TOPUP = 1u << 8,    /* engine: a planned fill of its missing blocks is pending */
    ENG_CHUNK_NEXTW = 1u << 9,    /* timeline: its next planned use (next_use) writes it */
    ENG_CHUNK_HDEAD = 1u << 10,   /* placement: kept among the dead chunks (OPT, expired) */
    ENG_CHUNK_CLEANED = 1u << 11, /* migrate: cleaned; eng_migrate_clean_end not yet called */
};

/* Per-chunk state shared by the engine modules; each field has one owner.
 * The fields the shadow pass and the re-plans read for every chunk they
 * visit come first, in 32 bytes: with 104-byte chunks those of 5 in 8 lie in
 * one cache line. */
typedef struct eng_chunk {
    uint64_t key;         /* placement: eviction key (next use as the policy's owner sees it) */
    uint64_t shadow_last; /* engine: last position the shadow pass placed it for */
    uint32_t q_head;      /* timeline: queue of future uses (node index), ENG_NONE if empty */
    uint32_t q_behind;    /* timeline: last queued use at or before the shadow position */
    uint32_t flags;       /* ENG_CHUNK_* */
    uint32_t blocks;      /* engine: with ENG_CHUNK_PARTIAL, its blocks on the device (a demand
                           * fault brought in part of it: eng_engine_params_t.fault_blocks) */
    uint64_t next_use;    /* timeline: position of the next planned use, ENG_POS_INF if none */
    uint64_t plan_pos;    /* timeline: last position that referenced it (dedupe per launch) */
    uint64_t truth_pos;   /* timeline: the same for recorded (true) references */
    uint64_t order;       /* placement: LRU/FIFO order stamp */
    uint64_t last_ticket; /* engine: compute ticket of the last launch that used it */
    uint64_t fill_ticket; /* engine: transfer ticket of its latest fill */
    uint32_t q_tail;
    uint32_t lru_prev; /* placement: LRU/FIFO list links */
    uint32_t lru_next;
    uint32_t plan_ref;  /* timeline: its reference at plan_pos (index from the launch's first) */
    uint32_t truth_ref; /* timeline: the same at truth_pos */
    uint32_t region;    /* owning region index */
} eng_chunk_t;

typedef struct eng_region {
    uint64_t base;
    uint64_t size;
    uint64_t id;        /* the task's own id for it */
    uint64_t alloc_pos; /* plan position of its allocation: nothing moves before it runs */
    uint32_t task;
    uint32_t first_chunk;
    uint32_t nchunks;
    bool mapped; /* still found by address (false once its free has been planned) */
} eng_region_t;

typedef struct eng_regions eng_regions_t;

/* The part of the regions object the inline accessor reads (its first member). */
typedef struct eng_regions_view {
    eng_chunk_t *chunks;
} eng_regions_view_t;

gmux_status_t eng_regions_create(uint32_t ntasks, uint64_t chunk_size, eng_regions_t **r_p);
void eng_regions_destroy(eng_regions_t *r);

uint64_t eng_regions_chunk_size(const eng_regions_t *r);

/* A new region; its chunks start non-resident and clean. GMUX_ERR_EXISTS if it
 * overlaps a mapped region of the same task. */
gmux_status_t eng_regions_alloc(eng_regions_t *r, uint32_t task, uint64_t id, uint64_t base,
                                uint64_t size, uint32_t *region_p);

/* Stops address lookups from finding the region with this task id (its free
 * was planned); GMUX_ERR_NOT_FOUND if no mapped region has that id. */
gmux_status_t eng_regions_unmap(eng_regions_t *r, uint32_t task, uint64_t id, uint32_t *region_p);

/* Returns the region's chunk ids and the region index itself for reuse. The
 * caller has already dropped the chunks from every other structure. */
void eng_regions_release(eng_regions_t *r, uint32_t region);

/* The mapped region of task containing addr, or ENG_NONE. */
uint32_t eng_regions_find(const eng_regions_t *r, uint32_t task, uint64_t addr);
/* The same, trying the region hint first (ENG_NONE, or what a find returned
 * before): one comparison where consecutive addresses fall in one region. */
uint32_t eng_regions_find_near(const eng_regions_t *r, uint32_t task, uint64_t addr, uint32_t hint);

const eng_region_t *eng_regions_get(const eng_regions_t *r, uint32_t region);
/* Whether the chunk's data is dead: its region's free is planned and no
 * planned use is left. The free discards it: never write it back. */
bool eng_regions_chunk_dead(const eng_regions_t *r, uint32_t chunk);
void eng_regions_set_alloc_pos(eng_regions_t *r, uint32_t region, uint64_t pos);
static inline eng_chunk_t *eng_regions_chunk(eng_regions_t *r, uint32_t chunk)
{
    return &((eng_regions_view_t *)(void *)r)->chunks[chunk];
}
/* Whether a region of n chunks would get its ids while at most max ids are
 * handed out in all (max <= 2^30): a free extent of n ids, or room at the end.
 * Lets a caller refuse an allocation before the per-chunk arrays grow. */
bool eng_regions_ids_fit(const eng_regions_t *r, uint64_t n, uint64_t max);
/* One past the highest chunk id ever handed out (size for per-chunk arrays). */
uint32_t eng_regions_chunk_limit(const eng_regions_t *r);
/* Chunks of live regions. */
uint64_t eng_regions_live_chunks(const eng_regions_t *r);

/* Device address of a chunk's first byte and its length (the last chunk of a
 * region may be shorter; transfers still move whole chunks). */
uint64_t eng_regions_chunk_addr(const eng_regions_t *r, uint32_t chunk);

#endif /* ENG_REGIONS_H */

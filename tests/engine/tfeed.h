/*
 * Test helpers for the engine: a feed over fixed per-task item lists, a
 * reference-string builder (one region per task, launches touching chunk
 * sets), a backend that checks the engine's transfers, and the exhaustive
 * minimum number of fetches for a small reference string.
 */
#ifndef TESTS_ENGINE_TFEED_H
#define TESTS_ENGINE_TFEED_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/backend.h"
#include "engine/timeline.h"

#define TF_MAX_ITEMS  512
#define TF_MAX_RANGES 4096

typedef struct tfeed {
    uint32_t ntasks;
    eng_item_t items[8][TF_MAX_ITEMS];
    uint32_t nitems[8];
    uint32_t next[8];
    eng_range_t ranges[TF_MAX_RANGES];
    uint32_t nranges;
} tfeed_t;

void tfeed_init(tfeed_t *f, uint32_t ntasks);
void tfeed_alloc(tfeed_t *f, uint32_t task, uint64_t id, uint64_t base, uint64_t size);
void tfeed_free(tfeed_t *f, uint32_t task, uint64_t id);
/* A launch of task touching chunks (bit i of mask: chunk i of the region at
 * base, chunk bytes each), writing those in wmask. */
void tfeed_launch_mask(tfeed_t *f, uint32_t task, uint64_t base, uint64_t chunk, uint32_t mask,
                       uint32_t wmask, uint64_t time_ns);
eng_feed_t tfeed_feed(tfeed_t *f);
void tfeed_rewind(tfeed_t *f);

/* A backend on a virtual clock that records what moved and checks it:
 * no fill of an address already present, no eviction or cleaning of an
 * absent one. */
typedef struct tback {
    uint64_t chunk;
    uint64_t present[1024]; /* addresses present (task << 48 | addr) */
    uint32_t npresent;
    uint32_t max_present;
    uint64_t fills, evictions, cleans, bytes_h2d, bytes_d2h;
    bool d2h_idle;   /* what the idle op answers for device to host (default false) */
    uint64_t now_ns; /* what now answers (the test's compute clock) */
    uint64_t free_ns[2], wait_ns[2];
    int errors;
    /* Optional (set by the caller): every transfer and discard, in order, as
     * pairs (kind << 60 | task << 48 | addr, len); nlog counts pairs written,
     * beyond log_cap too. */
    uint64_t *log;
    uint32_t nlog, log_cap;
} tback_t;

eng_backend_t tback_backend(tback_t *b, uint64_t chunk);
bool tback_has(const tback_t *b, uint32_t task, uint64_t addr);
/* Forgets the chunks of a freed range (the engine never evicts freed data). */
void tback_forget(tback_t *b, uint32_t task, uint64_t addr, uint64_t len);

/* The fewest fetches any policy needs for masks[0..n) of chunks 0..nchunks-1
 * (nchunks <= 10) under capacity cap, by exhaustive search over resident sets. */
uint64_t tf_exhaustive_min_fetches(const uint32_t *masks, uint32_t n, uint32_t nchunks,
                                   uint32_t cap);

/* Regions of one task with one region of nchunks chunks of one byte each
 * (ids 0..nchunks-1), for placement tests; NULL on failure. */
eng_regions_t *tf_regions_one(uint32_t nchunks);

#endif /* TESTS_ENGINE_TFEED_H */

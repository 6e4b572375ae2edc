/*
 * The engine's private state, shared by engine.c (shadow pass, issuing,
 * execution) and replan.c (faults on mispredicted chunks and the re-plan they
 * cause). Not for use outside src/engine.
 *
 * Thread-safety: one engine thread.
 */
#ifndef ENG_ENGINE_IMPL_H
#define ENG_ENGINE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

/* A replacement decided by the shadow pass, waiting for its victim's last use. */
typedef struct eng_repl {
    uint64_t gate;       /* issuable once every position below gate has run */
    uint32_t chunk;      /* to fill */
    uint32_t victim;     /* to evict, ENG_NONE for a free slot */
    uint64_t freed_last; /* victim released meanwhile: compute ticket of its last use */
} eng_repl_t;

struct eng_engine {
    eng_engine_params_t p;
    eng_regions_t *regs;
    eng_sched_t *sched;
    eng_timeline_t *tl;
    eng_placement_t *place; /* the shadow's resident set (planned residency) */
    eng_migrate_t *mig;
    eng_repl_t *repl; /* ring of pending replacements, in shadow order */
    uint64_t rhead, rtail, rcap;
    uint32_t *resv; /* chunks in fault-reserve slots, oldest first */
    uint32_t nresv;
    uint64_t sh_pos;    /* next position the shadow pass places */
    uint64_t exec_next; /* positions below this have run */
    uint64_t last_slice;
    uint64_t faults;
    /* One bit a chunk id, clear between uses: the chunks a re-plan lists, or
     * the true references of the launch being faulted in. A bit array (not a
     * field of eng_chunk_t) so that listing touches a few KiB, and read out
     * in id order it needs no sort. listed_sum has one bit a word of listed,
     * set while that word is not zero. */
    uint64_t *listed, *listed_sum;
    uint32_t listed_cap, listed_sum_cap; /* in words */
    uint32_t nlisted;                    /* bits set by listed_set since the last drain */
    uint32_t *scratch;                   /* re-plan: chunks to put back into the plan */
    uint32_t nscratch, scratch_cap;
    uint32_t *fault_refs;  /* the last launch's faulted chunks: indices into its truth refs */
    uint32_t *fault_moved; /* beside fault_refs: the blocks each fault moved */
    uint32_t fault_cap;
    uint32_t full_blocks; /* mask of every block of a chunk (1 without fault_block) */
    eng_replan_stats_t rs;
    bool pending; /* a step was handed out and not completed */
};

/* Takes a chunk out of the fault reserve (it joined the plan or was freed). */
void eng_resv_drop(eng_engine_t *e, uint32_t chunk);

/* Bytes of a chunk on the device (its blocks if it is partial), and of mask. */
uint64_t eng_chunk_held(const eng_engine_t *e, const eng_chunk_t *x);
uint64_t eng_blocks_bytes(const eng_engine_t *e, uint32_t mask);

/*
 * Serves the true references of the launch at position p (the front of the
 * timeline) that are not on the device: re-plans if a plan is pending
 * (eng_replan), then faults each missing chunk in (eng_engine.h explains the
 * slot it takes); with fault_blocks, the blocks of each reference (touched,
 * beside truth; NULL: all) that a partial chunk lacks fault in too, without a
 * re-plan (the chunk keeps its slot). *faults_p counts them, e->fault_refs
 * lists their indices into truth and e->fault_moved the blocks each moved.
 * Transfers are added to the migration plan; the caller flushes it.
 */
gmux_status_t eng_fault_launch(eng_engine_t *e, uint64_t p, const uint32_t *truth,
                               const uint32_t *touched, uint32_t ntruth, uint32_t *faults_p);

#endif /* ENG_ENGINE_IMPL_H */

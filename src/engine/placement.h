/*
 * Placement: which chunks are resident under a capacity, and which one to
 * evict when a slot is needed.
 *
 *  ENG_PLACE_OPT   Belady: the resident chunk whose next use is farthest
 *                  (eng_chunk_t.key, kept by the owner: the engine's shadow
 *                  pass or the simulator's demand model).
 *  ENG_PLACE_LRU   the least recently used resident chunk.
 *  ENG_PLACE_FIFO  the chunk filled longest ago (the UVM driver's order:
 *                  it has no access bits, its list moves on migration).
 *
 * Whatever the policy, a victim's key (next use) must lie after `need_pos`
 * (the position the slot is needed for): what the launch being placed needs
 * is never evicted.
 *
 * Ownership: the placement reads and writes the chunks' lru_*,
 * order fields and the RESIDENT, HDIRTY and HDEAD flags, and clears WPLAN
 * when a chunk is inserted (a fresh fill); it reads DIRTY and WPLAN.
 * Memory (OPT): 16 bytes per resident chunk, and 4 per chunk id up to the
 * highest inserted.
 * Thread-safety: one engine thread.
 */
#ifndef ENG_PLACEMENT_H
#define ENG_PLACEMENT_H

#include <stdint.h>

#include <gmux/status.h>

#include "engine/regions.h"

typedef enum eng_place_policy {
    ENG_PLACE_OPT = 1,
    ENG_PLACE_LRU = 2,
    ENG_PLACE_FIFO = 3,
} eng_place_policy_t;

typedef struct eng_placement eng_placement_t;

gmux_status_t eng_place_create(eng_regions_t *regs, eng_place_policy_t policy,
                               uint64_t capacity_chunks, eng_placement_t **p_p);
void eng_place_destroy(eng_placement_t *p);

uint64_t eng_place_capacity(const eng_placement_t *p);
uint64_t eng_place_resident(const eng_placement_t *p);
eng_place_policy_t eng_place_policy(const eng_placement_t *p);

/* Marks a chunk resident (the caller checked there is a free slot). */
gmux_status_t eng_place_insert(eng_placement_t *p, uint32_t chunk);
/* Drops a resident chunk (eviction or free). */
void eng_place_remove(eng_placement_t *p, uint32_t chunk);
/* A use: moves the chunk to the most-recent end for LRU. */
void eng_place_touch(eng_placement_t *p, uint32_t chunk);
/* The chunk's key changed: OPT re-sorts; LRU and FIFO forget what their
 * searches skipped when a resident chunk's key rises. The owner calls it for
 * every key it changes on a resident chunk (raising one unannounced could
 * make LRU/FIFO pass over a victim). */
void eng_place_key_changed(eng_placement_t *p, uint32_t chunk);
/* The chunk's region was freed in the plan (its key is ENG_POS_INF, no use
 * left): it becomes the first victim, before any chunk whose region is still
 * mapped, since at the moment of a later use its free will have run. OPT
 * ranks a mapped chunk with no use in the window just below such a chunk,
 * and keeps the dead ones in heaps of their own, clean and dirty
 * (ENG_CHUNK_HDEAD; the victim among them is chosen as among any chunks of
 * one key), so they are not among the dirty chunks eng_place_dirty_at walks:
 * the free drops them, nothing writes them back. LRU and FIFO move it to the
 * least-recent end. No-op if not resident. */
void eng_place_expire(eng_placement_t *p, uint32_t chunk);

/*
 * Write-back awareness (OPT only; off by default, and with fill_ns or wb_ns
 * 0): the copy time of one chunk each way, and a slack. Resident chunks are
 * kept clean or dirty ("dirty": written since the fill, or a planned launch
 * writes it: ENG_CHUNK_WPLAN, set by the engine's shadow pass). The victim is
 * OPT's, ties going to the clean chunk, while the planned write-backs keep up
 * with the planned fills (eng_place_evict counts them; idle write-back time
 * is banked up to slack_ns). Once they lag, a dirty victim is taken as
 * wb_ns/fill_ns times dearer: the clean chunk used farthest ahead is evicted
 * rather than the dirty one used farthest ahead when its next use is at
 * least fill_ns/wb_ns as far. A dirty chunk with no known next use still goes
 * before a clean one with a known use. With wb_ns <= fill_ns this is OPT
 * with clean-first ties: the fetches stay OPT's.
 */
void eng_place_set_wb_costs(eng_placement_t *p, double fill_ns, double wb_ns, double slack_ns);

/* Chooses a victim as eng_place_victim does and removes it, counting the
 * replacement (one fill, and a write-back if the victim is dirty). */
uint32_t eng_place_evict(eng_placement_t *p, uint64_t need_pos);

/* OPT: the i-th chunk of the dirty heap (0: the dirty chunk used farthest
 * ahead; beyond, heap order, roughly farthest first), ENG_NONE past its end.
 * Dead chunks (eng_place_expire) are not in it. */
uint32_t eng_place_dirty_at(const eng_placement_t *p, uint32_t i);

/* OPT: the first index i >= from of the dirty heap whose chunk has every
 * flag of `flags` set (eng_place_dirty_at(p, i) is the chunk), ENG_NONE if
 * none: one pass over the heap's array, no call per entry. */
uint32_t eng_place_dirty_find(const eng_placement_t *p, uint32_t from, uint32_t flags);

/* A resident chunk to evict whose key lies after need_pos, or ENG_NONE. */
uint32_t eng_place_victim(eng_placement_t *p, uint64_t need_pos);

/* The chunks the LRU/FIFO victim searches have looked at so far: their work,
 * which the tests bound. */
uint64_t eng_place_scanned(const eng_placement_t *p);

#endif /* ENG_PLACEMENT_H */

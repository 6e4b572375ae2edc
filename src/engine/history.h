/*
 * Launch history: what launches with exactly the same launch values (kernel,
 * every argument, grid and block) touched before, as a prediction for data-
 * dependent (indirect) arguments that no template explains.
 *
 * An iterative program repeats its launches: a CSR SpMV over row block b
 * reads the same slices of col_idx and values at every iteration, though
 * where they lie follows from row_ptr's contents, not from any argument. The
 * history remembers, per distinct set of launch values, the bytes the last
 * launch touched, and predicts the bytes the last two such launches both
 * touched (the one launch's bytes after a single observation): what repeats
 * is predicted, what moved (random gathers, a frontier) is not, and is
 * faulted in and charged when the launch runs. A prediction is never taken
 * on trust: the caller uses it only for arguments that have no template, and
 * the history reports, per entry, how much of the last launch it had
 * predicted (eng_history_lookup's recall) and which bytes it missed, so that
 * a caller can keep the whole-region fallback in the allocations where the
 * history keeps missing, and only there.
 *
 * Memory is bounded: a fixed table of entries (a key takes a free slot among
 * the few after the one it hashes to, else replaces that one), each holding at most
 * ENG_HIST_MAX_RANGES ranges (a launch touching more pieces is not remembered).
 *
 * Ownership: the history owns its entries; lookups return pointers into them,
 * valid until the next observe. Thread-safety: one thread at a time; lookup
 * allocates nothing (launch path), observe allocates.
 */
#ifndef ENG_HISTORY_H
#define ENG_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/launch.h"

#define ENG_HIST_MAX_RANGES 4096

typedef struct eng_history eng_history_t;

/* A table of `slots` entries (rounded up to a power of two, at least 16). */
gmux_status_t eng_history_create(uint32_t slots, eng_history_t **h_p);
void eng_history_destroy(eng_history_t *h);

/* Records the ranges launch l touched (any order, may overlap). */
gmux_status_t eng_history_observe(eng_history_t *h, const eng_launch_t *l,
                                  const eng_range_t *touched, size_t n);

/* What the history predicts for a launch with l's values. */
typedef struct eng_hist_pred {
    const eng_range_t *ranges; /* sorted, disjoint, not adjacent */
    size_t n;
    uint32_t seen; /* launches with these values observed (>= 1) */
    double recall; /* share of the last launch's bytes its own prediction held (1 if seen 1) */
    /* Added: the last launch's bytes its own prediction did not hold (sorted, disjoint;
     * none if seen 1), so that a caller can tell in which allocation the history missed. */
    const eng_range_t *missed;
    size_t nmissed;
} eng_hist_pred_t;

/* false if no launch with l's exact values is remembered. */
bool eng_history_lookup(const eng_history_t *h, const eng_launch_t *l, eng_hist_pred_t *pred);

/* Bytes of pred->missed inside [base, base + size). */
uint64_t eng_history_missed_in(const eng_hist_pred_t *pred, uint64_t base, uint64_t size);

/* Entries in use. */
uint32_t eng_history_entries(const eng_history_t *h);

#endif /* ENG_HISTORY_H */

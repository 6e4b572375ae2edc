/*
 * Learned working-set prediction for the simulator's proactive policies:
 * the predictor of src/engine/predictor.h behind the simulator's predictor
 * hooks (sim/run.h), with the launch history (src/engine/history.h) for
 * arguments no template explains, then streams (src/engine/stream.h) where
 * the history knows no launch with the same values, and whole regions left
 * to faults where they would be wasteful (larger than the device /
 * SIM_PRED_WHOLE_DIV, or under opts->chunk_share of the region's fault units
 * were touched: so far, by the kernel's launches through that argument into
 * that region of that task (sim/share.h), else by the kernel's last launch;
 * without opts->chunk_share, a quarter of its bytes by the last launch); a
 * region where the history missed random gathers is prefetched whole unless
 * that would be wasteful. Each engine run gets a fresh
 * predictor, loaded from the template database when one is given, and learns online from every
 * launch once it has run (never from a launch before it runs). Recorded ranges are used only to
 * score the predictions and, in the engine, to charge faults for what the prediction missed.
 *
 * Ownership: opts must outlive the runs. Thread-safety: one run per thread;
 * each run has its own state.
 */
#ifndef SIM_PREDICT_H
#define SIM_PREDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/run.h"

typedef struct sim_predict_opts {
    const char *templates; /* template database (docs/templates.md), or NULL */
    bool no_defer;         /* plan every launch at once, even of kernels still learned */
    bool no_history;       /* ablation: whole regions where no template holds (history.h) */
    bool no_stream;        /* ablation: no continuation prediction (engine/stream.h) */
    /* A whole-region fallback is prefetched once the launches so far touched at least
     * this share of the region's fault units (the demand-paging rate over the prefetch
     * rate: the faults have then cost what the prefetch would have; sim/share.h);
     * 0: once the kernel's last launch touched a quarter of its bytes. */
    double chunk_share;
    /* The fault unit: what a fault moves at least (the simulator's fault block); 0 or
     * more than a chunk: the chunk. */
    uint64_t share_unit;
} sim_predict_opts_t;

/* Fills hooks for runs predicting with learned templates. */
void sim_predict_hooks(const sim_predict_opts_t *opts, sim_predictor_hooks_t *hooks);

#endif /* SIM_PREDICT_H */

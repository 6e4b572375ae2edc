/*
 * Scoring predictions: precision and recall of predicted bytes against the
 * bytes a launch touched, by exact interval arithmetic (both sides are
 * coalesced first, so overlaps are never counted twice).
 *
 *   precision = |predicted and touched| / |predicted|
 *   recall    = |predicted and touched| / |touched|
 *
 * A scorer holds scratch buffers that grow as needed and are reused between
 * launches. Thread-safety: one thread at a time per scorer.
 */
#ifndef ENG_SCORE_H
#define ENG_SCORE_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/launch.h"
#include "engine/template.h"

/* Byte totals; sums of launches are sums of these. */
typedef struct eng_score {
    uint64_t predicted;
    uint64_t touched;
    uint64_t hit; /* predicted and touched */
} eng_score_t;

typedef struct eng_scorer eng_scorer_t;

gmux_status_t eng_scorer_create(eng_scorer_t **s_p);
void eng_scorer_destroy(eng_scorer_t *s);

/* Adds one launch's predicted spans and touched ranges to *acc; a span of more
 * than ENG_SPAN_MAX_PIECES pieces counts as its covering range (template.h). */
gmux_status_t eng_score_launch(eng_scorer_t *s, const eng_span_t *pred, size_t npred,
                               const eng_range_t *touched, size_t ntouched, eng_score_t *acc);

/* 1.0 when nothing was predicted (nothing wasted) / nothing was touched (nothing missed). */
double eng_score_precision(const eng_score_t *sc);
double eng_score_recall(const eng_score_t *sc);

/* Adds b to a. */
void eng_score_add(eng_score_t *a, const eng_score_t *b);

#endif /* ENG_SCORE_H */

/*
 * Streams: continuation prediction, learned online, for pointer arguments
 * that walk a region slice by slice.
 *
 * A blocked kernel often reads, through one argument whose value never
 * changes, consecutive slices of a region, one per launch, in order: CSR
 * SpMV over row block b reads col_idx and values from row_ptr[r0] to
 * row_ptr[r1], so each launch's slice starts where the previous one ended,
 * though no launch value says where (row_ptr's contents do). The template
 * predictor cannot express that, and the launch history (history.h) knows
 * nothing until the same launch repeats. A stream predicts the next slice
 * as starting at the previous end, with the largest of the last
 * ENG_STREAM_LENS slice lengths as its length (the margin over a typical
 * length: its waste shows in the caller's precision).
 *
 * Learning. A stream is keyed by (context, kernel, argument index, pointer
 * value); the context is the caller's task or process. After each launch has
 * run, every pointer argument's slice is taken from the touched ranges: the
 * bytes of the argument's region at or above its pointer and below the next
 * pointer argument into that region. Only one contiguous piece is a slice;
 * anything else (gathers, scattered pieces, nothing) breaks the stream. The
 * first slice starts a stream; a second that starts exactly where the first
 * ended makes it a candidate; it is trusted only after the next launch, held
 * out, also starts exactly at the previous end. A trusted stream whose next
 * slice does not start there misses (it must pass a new held-out check), and
 * after ENG_STREAM_MAX_MISSES misses it is given up for good. A slice that
 * returns to the stream's first slice (the next sweep of an iterative
 * solver) is a restart, not a miss: the end of the sweep is remembered and
 * the slice after it is predicted at the origin. Random access never forms a
 * stream: its pieces are not one contiguous slice, or, if they are, two
 * consecutive ones almost never abut, let alone three.
 *
 * Kernel arguments. Once one stream of a (kernel, argument) is trusted and
 * its first slice started at the pointer, the pair is a stream class: a
 * stream of the same kernel argument on a new pointer (another task's
 * matrix) is predicted from its first launch, [pointer, pointer + length),
 * and continues on trust, each prediction checked when the launch has run;
 * ENG_STREAM_MAX_MISSES misses of such inherited predictions withdraw the
 * class.
 *
 * Ownership: the table owns its entries. Thread-safety: one thread at a
 * time; predict reads only and allocates nothing (launch path); observe
 * allocates scratch.
 */
#ifndef ENG_STREAM_H
#define ENG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/launch.h"
#include "engine/predictor.h"

#define ENG_STREAM_LENS       8 /* recent slice lengths the length estimate takes the max of */
#define ENG_STREAM_MAX_MISSES 3 /* broken continuations before a stream or class is given up */
#define ENG_STREAM_LEARN_LAUNCHES                                                                  \
    3 /* launches after which an untrusted stream is no longer                                     \
         "being learned" (eng_stream_learning) */

typedef enum eng_stream_state {
    ENG_STREAM_LEARNING = 0,  /* one slice, or the last continuation broke */
    ENG_STREAM_CANDIDATE = 1, /* two abutting slices; the next is held out */
    ENG_STREAM_TRUSTED = 2,   /* predicted */
    ENG_STREAM_FALLBACK = 3,  /* given up */
} eng_stream_state_t;

typedef struct eng_stream eng_stream_t;

/* A table of `slots` streams (rounded up to a power of two, at least 64). */
gmux_status_t eng_stream_create(uint32_t slots, eng_stream_t **s_p);
void eng_stream_destroy(eng_stream_t *s);

/*
 * Learns from launch l of context ctx, which has run and touched these
 * ranges (any order, may overlap); rl finds the regions its pointers pointed
 * into when it ran.
 */
gmux_status_t eng_stream_observe(eng_stream_t *s, uint32_t ctx, const eng_launch_t *l,
                                 const eng_range_t *touched, size_t n,
                                 const eng_region_lookup_t *rl);

/*
 * The slice pointer argument arg of l (context ctx) is predicted to touch,
 * clipped to its region: false if no trusted stream (own or inherited from
 * its class) predicts it, or the stream has reached its region's end.
 * Allocates nothing.
 */
bool eng_stream_predict(const eng_stream_t *s, uint32_t ctx, const eng_launch_t *l, uint32_t arg,
                        const eng_region_lookup_t *rl, eng_range_t *out);

/*
 * Whether the stream of argument arg of l is still being learned: no launch
 * of it has been observed, or fewer than ENG_STREAM_LEARN_LAUNCHES and it is
 * neither trusted nor given up. A caller planning launches ahead may wait
 * for the launch of the same stream before this one to run.
 */
bool eng_stream_learning(const eng_stream_t *s, uint32_t ctx, const eng_launch_t *l, uint32_t arg);

/* State of the stream of argument arg of l (LEARNING if none is kept). */
eng_stream_state_t eng_stream_state(const eng_stream_t *s, uint32_t ctx, const eng_launch_t *l,
                                    uint32_t arg);

typedef struct eng_stream_stats {
    uint64_t slices;        /* argument slices observed */
    uint64_t held_out_pass; /* candidates trusted after their held-out launch */
    uint64_t held_out_fail; /* candidates whose held-out launch did not continue them */
    uint64_t hits;          /* trusted predictions whose launch continued the stream */
    uint64_t misses;        /* trusted predictions whose launch did not */
    uint64_t restarts;      /* slices back at a stream's origin */
    uint64_t given_up;      /* streams and classes given up */
    uint64_t pred_bytes;    /* bytes the trusted predictions held (after the fact) */
    uint64_t hit_bytes;     /* of them, touched by their launch's slice */
    uint64_t slice_bytes;   /* bytes of the slices those launches touched */
    uint32_t classes;       /* kernel arguments that are stream classes now */
} eng_stream_stats_t;

void eng_stream_stats(const eng_stream_t *s, eng_stream_stats_t *st);

#endif /* ENG_STREAM_H */

/*
 * The working-set predictor: per kernel and per pointer argument, a template
 * (template.h) learned from samples of (launch values, touched ranges), and
 * the prediction of the bytes a launch will touch before it runs.
 *
 * Learning. Each observed launch is one sample. Its touched ranges are
 * coalesced, split at the pointer values of its arguments and attributed to
 * the argument whose pointer is the nearest at or below them in the same
 * region (or, for bytes before every pointer of a region, the nearest above:
 * halos). Per argument the predictor fits the simplest template to the samples
 * it keeps (the last ENG_PRED_SAMPLES) once it has ENG_PRED_MIN_TRAIN of them,
 * and trusts it only after it has also predicted the next, held-out, sample
 * exactly: a T1 or T2 template is therefore trusted after at most 3 samples
 * whose sizes differ. A trusted template that later misses is refitted;
 * after ENG_PRED_MAX_MISSES misses, or when no template explains
 * ENG_PRED_SAMPLES samples (data-dependent, indirect access), the argument
 * falls back to whole regions for good, and says why.
 *
 * Prediction. Trusted arguments give their template's span; every other
 * pointer argument gives the whole region it points into (the caller's
 * region lookup). eng_predictor_predict reads only and allocates nothing: it
 * sits on the launch path. eng_predictor_prepare (called by observe too) binds
 * a kernel seen for the first time to its database entry, if any.
 *
 * Kernel identity for the database is (name, layout): layout is one letter
 * per argument, 'p' pointer, 'v' value, taken from the first launch.
 *
 * Ownership: the predictor owns its tables; callers own launches, ranges and
 * the output arrays. Thread-safety: one thread at a time per predictor
 * (predict may run concurrently with other predicts, never with
 * observe/prepare/load).
 */
#ifndef ENG_PREDICTOR_H
#define ENG_PREDICTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

#include "engine/launch.h"
#include "engine/template.h"

#define ENG_PRED_SAMPLES    8  /* samples kept per kernel for fitting */
#define ENG_PRED_MIN_TRAIN  2  /* samples fitted before the held-out check */
#define ENG_PRED_MAX_MISSES 3  /* held-out failures before giving up on an argument */
#define ENG_PRED_MAX_ARGS   64 /* kernels with more arguments fall back entirely */

/* The caller's regions: finds the region containing addr. */
typedef struct eng_region_lookup {
    bool (*find)(void *ctx, uint64_t addr, uint64_t *base_p, uint64_t *size_p);
    void *ctx;
} eng_region_lookup_t;

typedef enum eng_pred_state {
    ENG_PRED_LEARNING = 0,  /* too few samples, or the last fit failed: whole region */
    ENG_PRED_CANDIDATE = 1, /* fitted, awaiting its held-out sample: whole region */
    ENG_PRED_TRUSTED = 2,   /* predicted by its template */
    ENG_PRED_FALLBACK = 3,  /* given up: whole region, see reason */
} eng_pred_state_t;

typedef enum eng_pred_reason {
    ENG_PRED_WHY_NONE = 0,
    ENG_PRED_WHY_IRREGULAR = 1, /* touched bytes form no run: data-dependent access */
    ENG_PRED_WHY_NO_FIT = 2,    /* regular shapes, but no template explains them all */
    ENG_PRED_WHY_UNSTABLE = 3,  /* templates kept failing their held-out samples */
    ENG_PRED_WHY_LAYOUT = 4,    /* too many arguments, or the layout changed */
} eng_pred_reason_t;

const char *eng_pred_state_name(eng_pred_state_t state);
const char *eng_pred_reason_name(eng_pred_reason_t reason);
/* Parses a reason name; false if unknown. */
bool eng_pred_reason_parse(const char *name, eng_pred_reason_t *reason);

typedef struct eng_predictor eng_predictor_t;

gmux_status_t eng_predictor_create(eng_predictor_t **p_p);
void eng_predictor_destroy(eng_predictor_t *p);

/* Names kernel id (its identity in the database). Copies name. */
gmux_status_t eng_predictor_name_kernel(eng_predictor_t *p, uint32_t kernel, const char *name);

/* Creates the kernel's entry on its first launch and binds it to the database. */
gmux_status_t eng_predictor_prepare(eng_predictor_t *p, const eng_launch_t *l);

/* Learns from one launch and the ranges it touched (any order, may overlap). */
gmux_status_t eng_predictor_observe(eng_predictor_t *p, const eng_launch_t *l,
                                    const eng_range_t *touched, size_t n,
                                    const eng_region_lookup_t *rl);

/*
 * Predicts the bytes launch l will touch: at most one span per pointer
 * argument (duplicates removed). GMUX_ERR_CAPACITY if cap is too small (then
 * *n_p says how many were needed). Allocates nothing.
 */
gmux_status_t eng_predictor_predict(const eng_predictor_t *p, const eng_launch_t *l,
                                    const eng_region_lookup_t *rl, eng_span_t *out, size_t cap,
                                    size_t *n_p);

/* The whole-region baseline: the region of every pointer argument, once each. */
gmux_status_t eng_predict_whole(const eng_launch_t *l, const eng_region_lookup_t *rl,
                                eng_span_t *out, size_t cap, size_t *n_p);

/* What the predictor knows about one argument of a kernel. */
typedef struct eng_pred_arg_info {
    uint8_t kind;           /* eng_arg_kind_t from the layout */
    uint8_t state;          /* eng_pred_state_t */
    uint8_t reason;         /* eng_pred_reason_t when state is FALLBACK */
    eng_tpl_t tpl;          /* when TRUSTED or CANDIDATE */
    uint32_t trusted_after; /* samples seen when first trusted (0: never, or from a file) */
    uint32_t misses;        /* held-out or later samples its templates failed */
} eng_pred_arg_info_t;

typedef struct eng_pred_kernel_info {
    const char *name;   /* NULL if never named */
    const char *layout; /* "" if never seen */
    uint32_t nargs;
    uint64_t samples;      /* launches observed */
    uint64_t unattributed; /* touched bytes no argument pointed near (indirect) */
    bool from_db;          /* bound to a database entry */
} eng_pred_kernel_info_t;

/* Number of kernel ids with an entry slot (named or seen). */
uint32_t eng_predictor_nkernels(const eng_predictor_t *p);

/* GMUX_ERR_NOT_FOUND if kernel was never named nor seen. */
gmux_status_t eng_predictor_kernel_info(const eng_predictor_t *p, uint32_t kernel,
                                        eng_pred_kernel_info_t *info);
gmux_status_t eng_predictor_arg_info(const eng_predictor_t *p, uint32_t kernel, uint32_t arg,
                                     eng_pred_arg_info_t *info);

/*
 * Short description of a kernel's prediction for reports:
 * "a0:T2 off=0 len=4*a3 mode=r a1:whole(irregular) a2:whole(learning)".
 */
const char *eng_predictor_describe(const eng_predictor_t *p, uint32_t kernel, char *buf,
                                   size_t len);

/*
 * Database entries, keyed by (name, layout), applied to a kernel when it is
 * first seen with that name and layout (or at once if it already was).
 * args[i].state is TRUSTED (with tpl), FALLBACK (with reason) or LEARNING
 * (nothing known); value arguments are ignored. Copies everything.
 */
gmux_status_t eng_predictor_library_add(eng_predictor_t *p, const char *name, const char *layout,
                                        const eng_pred_arg_info_t *args);

#endif /* ENG_PREDICTOR_H */

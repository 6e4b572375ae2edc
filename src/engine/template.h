/*
 * Working-set templates: how one pointer argument of a kernel turns its launch
 * values into the bytes the launch will touch. Three classes, simplest first:
 *
 *   T1  one range of fixed size at a fixed offset from the pointer;
 *   T2  one range at a fixed offset whose size is a*t + b, where t is one
 *       launch value (a scalar argument, a grid or block dimension) or the
 *       product of two (rows x cols, grid.x x block.x) and a, b are constants
 *       (a is typically the element size);
 *   T3  a strided set: count pieces of len bytes, piece k at
 *       ptr + off + k*stride, each of stride, count and len being a constant
 *       or a*t + b as above.
 *
 * A template is fitted to samples: the shape each sample's touched bytes had
 * relative to the pointer (eng_shape_t) and the launch values of that sample.
 * eng_tpl_fit returns the simplest template that reproduces every sample
 * exactly; whether to trust it (held-out check) is the predictor's business.
 *
 * Evaluation (eng_tpl_eval) is a handful of multiplications and never
 * allocates: it sits on the launch path of real programs.
 *
 * Thread-safety: every function here is pure.
 */
#ifndef ENG_TEMPLATE_H
#define ENG_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/launch.h"

/* Launch values a term may name: argument i (0..31) or a dimension. */
#define ENG_VAL_MAX_ARGS 32
#define ENG_VAL_GRID_X   32 /* grid.y = 33, grid.z = 34 */
#define ENG_VAL_BLOCK_X  35 /* block.y = 36, block.z = 37 */
#define ENG_VAL_COUNT    38

/* The value with this id in launch l (0 for an argument the launch lacks). */
static inline uint64_t eng_launch_value(const eng_launch_t *l, unsigned id)
{
    if (id < ENG_VAL_GRID_X)
        return id < l->nargs ? l->args[id].value : 0;
    if (id < ENG_VAL_BLOCK_X)
        return l->grid[id - ENG_VAL_GRID_X];
    return l->block[id - ENG_VAL_BLOCK_X];
}

/* Fills v[ENG_VAL_COUNT] with every launch value of l. */
void eng_launch_values(const eng_launch_t *l, uint64_t *v);

typedef enum eng_term_kind {
    ENG_TERM_CONST = 0, /* value = b */
    ENG_TERM_VAL = 1,   /* value = a * v[v0] + b */
    ENG_TERM_PROD = 2,  /* value = a * v[v0] * v[v1] + b */
} eng_term_kind_t;

typedef struct eng_expr {
    uint8_t kind; /* eng_term_kind_t */
    uint8_t v0, v1;
    int64_t a, b;
} eng_expr_t;

typedef enum eng_tpl_kind {
    ENG_TPL_NONE = 0, /* the argument's memory is not touched */
    ENG_TPL_T1 = 1,
    ENG_TPL_T2 = 2,
    ENG_TPL_T3 = 3,
} eng_tpl_kind_t;

typedef struct eng_tpl {
    uint8_t kind; /* eng_tpl_kind_t */
    uint8_t mode; /* eng_access_t seen in the samples */
    int64_t off;  /* first byte relative to the pointer (may be negative) */
    eng_expr_t len;
    eng_expr_t stride; /* T3 only */
    eng_expr_t count;  /* T3 only */
} eng_tpl_t;

/*
 * A predicted byte set: count pieces of len bytes at addr + k*stride.
 * count == 1 is a plain range (stride then unused).
 */
typedef struct eng_span {
    uint64_t addr;
    uint64_t len;
    uint64_t stride;
    uint64_t count;
    uint8_t mode;
} eng_span_t;

/*
 * The most pieces a predicted span has (eng_predictor_predict): a strided span
 * with more is given as its one covering range, a safe over-approximation that
 * keeps consumers expanding pieces one by one (the simulator, the scorer)
 * bounded. At 2^14 pieces per pointer argument, a launch's prediction expands
 * to at most as many ranges as a trace may record for one launch
 * (SIM_TRACE_MAX_RANGES, 2^20) over ENG_PRED_MAX_ARGS (64) arguments.
 */
#define ENG_SPAN_MAX_PIECES (1u << 14)

/*
 * Makes s its one covering range, from its first byte to the end of its last
 * piece (saturated at the end of the address space); a plain range is left
 * as it is.
 */
void eng_span_cover(eng_span_t *s);

/*
 * Total bytes named by a span: count*len for disjoint pieces, the reach from
 * the first byte to the end of the last for overlapping ones. Saturates at
 * UINT64_MAX: spans come from templates and databases with sizes up to 2^63
 * and counts a launch value sets, whose products pass 2^64.
 */
uint64_t eng_span_bytes(const eng_span_t *s);

/* The shape of one sample's touched bytes for one argument, relative to its pointer. */
typedef enum eng_shape_kind {
    ENG_SHAPE_EMPTY = 0,     /* nothing touched */
    ENG_SHAPE_RUN = 1,       /* count equal pieces at equal spacing (count 1: one range) */
    ENG_SHAPE_IRREGULAR = 2, /* anything else: no template can produce it */
} eng_shape_kind_t;

typedef struct eng_shape {
    uint8_t kind; /* eng_shape_kind_t */
    uint8_t mode;
    int64_t off;
    uint64_t len, stride, count;
} eng_shape_t;

/*
 * The shape of ranges (sorted by address, disjoint and not adjacent: the
 * predictor coalesces them first) relative to pointer ptr.
 */
void eng_shape_of(uint64_t ptr, const eng_range_t *ranges, size_t n, eng_shape_t *shape);

/*
 * The simplest template that reproduces every sample: shapes[i] with launch
 * values vals[i * ENG_VAL_COUNT ...]. val_ok[id] says which ids terms may use
 * (scalar arguments and dimensions, never pointers). Returns false when no
 * template of any class explains them all.
 */
bool eng_tpl_fit(const eng_shape_t *shapes, const uint64_t *vals, size_t n, const bool *val_ok,
                 eng_tpl_t *tpl);

/* Value of expr for launch l; false on overflow or a negative result. */
bool eng_expr_eval(const eng_expr_t *e, const eng_launch_t *l, uint64_t *out);

/*
 * Evaluates tpl for launch l whose argument holds ptr: writes 0 or 1 span to
 * *span and returns the number written, or -1 when the template cannot be
 * evaluated for these values (overflow, a negative size): the caller falls back.
 */
int eng_tpl_eval(const eng_tpl_t *tpl, const eng_launch_t *l, uint64_t ptr, eng_span_t *span);

/* Whether tpl reproduces shape exactly for launch l with pointer ptr. */
bool eng_tpl_matches(const eng_tpl_t *tpl, const eng_launch_t *l, uint64_t ptr,
                     const eng_shape_t *shape);

/*
 * Text forms, used by the template database and reports:
 *   expr: "4096", "4*a3", "4*a3+16", "1*grid.x*block.x-8", "8*a2*a3"
 *   tpl:  "none", "T1 off=0 len=4096", "T2 off=-8 len=4*a3+16",
 *         "T3 off=0 stride=4*a4 count=1*a2 len=4*a3"  (followed by " mode=rw")
 * Format returns buf; parse returns false on anything malformed.
 */
const char *eng_expr_format(const eng_expr_t *e, char *buf, size_t len);
bool eng_expr_parse(const char *text, eng_expr_t *e);
const char *eng_tpl_format(const eng_tpl_t *tpl, char *buf, size_t len);
bool eng_tpl_parse(const char *text, eng_tpl_t *tpl);

/* "T1", "T2", "T3" or "none". */
const char *eng_tpl_kind_name(eng_tpl_kind_t kind);

#endif /* ENG_TEMPLATE_H */

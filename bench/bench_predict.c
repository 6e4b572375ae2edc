/*
 * Cost of predicting one launch's working set, side by side in one run:
 * learned templates (eng_predictor_predict) against the whole-region
 * baseline (eng_predict_whole), both with the same region lookup (binary
 * search over 256 regions). The launch mix has T1, T2 (two pointers into one
 * shared pool), T3 and an indirect kernel that falls back. One core.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "engine/predictor.h"
#include "trand.h"

#define NREG  256
#define NLAUN 1024

static uint64_t reg_base[NREG], reg_size[NREG];

static bool find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    (void)ctx;
    size_t lo = 0, hi = NREG;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (addr < reg_base[mid])
            hi = mid;
        else if (addr - reg_base[mid] >= reg_size[mid])
            lo = mid + 1;
        else {
            *base = reg_base[mid];
            *size = reg_size[mid];
            return true;
        }
    }
    return false;
}

static const eng_region_lookup_t rl = {find, NULL};

struct launch_buf {
    eng_launch_t l;
    eng_arg_t args[6];
    eng_range_t touched[40];
    size_t ntouched;
};

static struct launch_buf launches[NLAUN];
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
    return trand_next(&rng) % n;
}

static void make(struct launch_buf *b, unsigned i)
{
    unsigned kind = i % 4;
    uint64_t pool = reg_base[0], r1 = reg_base[1 + rnd(NREG - 1)];
    b->l = (eng_launch_t){.kernel = kind,
                          .grid = {1 + (uint32_t)rnd(64), 1, 1},
                          .block = {256, 1, 1},
                          .args = b->args};
    b->ntouched = 0;
    switch (kind) {
    case 0: { /* saxpy on two tensors of the pool */
        uint64_t n = 1 + rnd(1 << 20), x = pool + 4096 * rnd(1000);
        b->args[0] = (eng_arg_t){ENG_ARG_PTR, x};
        b->args[1] = (eng_arg_t){ENG_ARG_PTR, x + 4 * n};
        b->args[2] = (eng_arg_t){ENG_ARG_VAL, n};
        b->l.nargs = 3;
        b->touched[b->ntouched++] = (eng_range_t){x, 8 * n, ENG_ACCESS_RW};
        break;
    }
    case 1: { /* stencil: fixed table with a halo, and a tile */
        uint64_t rows = 1 + rnd(32), cols = 1 + rnd(64), ld = 256 + rnd(256);
        b->args[0] = (eng_arg_t){ENG_ARG_PTR, r1 + 4096};
        b->args[1] = (eng_arg_t){ENG_ARG_PTR, pool + (64ull << 20)};
        b->args[2] = (eng_arg_t){ENG_ARG_VAL, rows};
        b->args[3] = (eng_arg_t){ENG_ARG_VAL, cols};
        b->args[4] = (eng_arg_t){ENG_ARG_VAL, ld};
        b->l.nargs = 5;
        b->touched[b->ntouched++] = (eng_range_t){r1 + 4096 - 128, 2048, ENG_ACCESS_READ};
        for (uint64_t r = 0; r < rows; r++)
            b->touched[b->ntouched++] =
                (eng_range_t){pool + (64ull << 20) + 8 * ld * r, 8 * cols, ENG_ACCESS_RW};
        break;
    }
    case 2: { /* rows x cols x 4 matrix */
        uint64_t rows = 1 + rnd(512), cols = 1 + rnd(512);
        b->args[0] = (eng_arg_t){ENG_ARG_VAL, rows};
        b->args[1] = (eng_arg_t){ENG_ARG_VAL, cols};
        b->args[2] = (eng_arg_t){ENG_ARG_PTR, r1};
        b->l.nargs = 3;
        b->touched[b->ntouched++] = (eng_range_t){r1, 4 * rows * cols, ENG_ACCESS_READ};
        break;
    }
    default: /* gather: rows picked by data */
        b->args[0] = (eng_arg_t){ENG_ARG_PTR, r1};
        b->args[1] = (eng_arg_t){ENG_ARG_VAL, 3};
        b->l.nargs = 2;
        for (unsigned k = 0; k < 3; k++)
            b->touched[b->ntouched++] = (eng_range_t){r1 + 512 * rnd(1000), 512, ENG_ACCESS_READ};
        break;
    }
}

static volatile uint64_t sink;

int main(void)
{
    for (unsigned i = 0; i < NREG; i++) {
        reg_base[i] = (1ull << 36) + (uint64_t)i * (1ull << 30);
        reg_size[i] = i == 0 ? 1ull << 30 : (64ull << 20);
    }
    eng_predictor_t *p;
    if (eng_predictor_create(&p) != GMUX_OK)
        return 1;
    for (unsigned i = 0; i < NLAUN; i++) {
        make(&launches[i], i);
        if (i < 64)
            eng_predictor_observe(p, &launches[i].l, launches[i].touched, launches[i].ntouched,
                                  &rl);
        else
            eng_predictor_prepare(p, &launches[i].l);
    }
    unsigned trusted = 0;
    for (uint32_t k = 0; k < 4; k++)
        for (uint32_t a = 0; a < 5; a++) {
            eng_pred_arg_info_t ai;
            if (eng_predictor_arg_info(p, k, a, &ai) == GMUX_OK && ai.state == ENG_PRED_TRUSTED)
                trusted++;
        }
    const unsigned n = 8u * 1000 * 1000;
    eng_span_t out[8];
    size_t np;
    uint64_t t0 = com_clock_ns();
    for (unsigned i = 0; i < n; i++) {
        eng_predictor_predict(p, &launches[i % NLAUN].l, &rl, out, 8, &np);
        sink += np + out[0].len;
    }
    uint64_t t1 = com_clock_ns();
    for (unsigned i = 0; i < n; i++) {
        eng_predict_whole(&launches[i % NLAUN].l, &rl, out, 8, &np);
        sink += np + out[0].len;
    }
    uint64_t t2 = com_clock_ns();
    double tpl = (double)(t1 - t0) / n, whole = (double)(t2 - t1) / n;
    printf("{\"bench\": \"predict_launch\", \"iterations\": %u, \"trusted_args\": %u, "
           "\"template_ns\": %.1f, \"whole_region_ns\": %.1f, \"ratio\": %.2f}\n",
           n, trusted, tpl, whole, tpl / whole);
    eng_predictor_destroy(p);
    return 0;
}

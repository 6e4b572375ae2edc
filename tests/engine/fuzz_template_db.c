/*
 * libFuzzer harness for the template database parser, which reads files
 * from outside: no input may crash it; a rejected input must come with a
 * message naming the input, and an accepted one must parse again the same.
 * An accepted entry for kernel "k" is then bound and predicted from: no
 * span may have more than ENG_SPAN_MAX_PIECES pieces, whatever the counts
 * and strides the file gives (consumers expand spans piece by piece).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/template_db.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One region of 1 TiB: a tiny stride over it is 2^39 pieces. */
#define REG_BASE (1ull << 40)
#define REG_SIZE (1ull << 40)

static bool find(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size)
{
    (void)ctx;
    if (addr - REG_BASE >= REG_SIZE)
        return false;
    *base = REG_BASE;
    *size = REG_SIZE;
    return true;
}

/* The layout of the input's "kernel k LAYOUT" line into layout; false without one. */
static bool layout_of_k(const char *text, size_t len, char *layout)
{
    static const char key[] = "kernel k ";
    for (size_t i = 0; i + sizeof(key) - 1 <= len; i++) {
        if ((i && text[i - 1] != '\n') || memcmp(text + i, key, sizeof(key) - 1) != 0)
            continue;
        size_t at = i + sizeof(key) - 1, n = 0;
        while (at + n < len && n < ENG_PRED_MAX_ARGS &&
               (text[at + n] == 'p' || text[at + n] == 'v'))
            n++;
        memcpy(layout, text + at, n);
        layout[n] = '\0';
        return n > 0;
    }
    return false;
}

/* Predicts for kernel "k" with a few sets of launch values; aborts on a span
 * with more pieces than ENG_SPAN_MAX_PIECES. */
static void predict_k(eng_predictor_t *p, const char *layout)
{
    static const uint64_t vals[] = {1, 4096, 4000000000ull, UINT64_MAX / 3};
    const eng_region_lookup_t rl = {find, NULL};
    eng_arg_t args[ENG_PRED_MAX_ARGS];
    eng_span_t out[ENG_PRED_MAX_ARGS];
    uint32_t n = (uint32_t)strlen(layout);
    for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++) {
        for (uint32_t i = 0; i < n; i++)
            args[i] = layout[i] == 'p' ? (eng_arg_t){ENG_ARG_PTR, REG_BASE + 64 * i}
                                       : (eng_arg_t){ENG_ARG_VAL, vals[v] + i};
        eng_launch_t l = {0, {(uint32_t)vals[v], 1, 1}, {256, 1, 1}, n, args};
        size_t np;
        if (eng_predictor_prepare(p, &l) != GMUX_OK)
            continue;
        if (eng_predictor_predict(p, &l, &rl, out, ENG_PRED_MAX_ARGS, &np) != GMUX_OK)
            abort(); /* at most one span per argument */
        for (size_t i = 0; i < np; i++)
            if (out[i].count > ENG_SPAN_MAX_PIECES)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    eng_predictor_t *p;
    char err[256] = "";
    if (eng_predictor_create(&p) != GMUX_OK)
        return 0;
    gmux_status_t st = eng_tpl_db_parse(p, (const char *)data, size, "fuzz", err, sizeof(err));
    if (st != GMUX_OK && strncmp(err, "fuzz", 4) != 0)
        abort();
    if (st == GMUX_OK) {
        /* Bind an entry, if any, by naming kernels: exercises kernel_apply. */
        eng_predictor_name_kernel(p, 0, "k");
        char layout[ENG_PRED_MAX_ARGS + 1];
        if (layout_of_k((const char *)data, size, layout))
            predict_k(p, layout);
        eng_predictor_t *q;
        if (eng_predictor_create(&q) != GMUX_OK)
            abort();
        if (eng_tpl_db_parse(q, (const char *)data, size, "fuzz", err, sizeof(err)) != GMUX_OK)
            abort();
        eng_predictor_destroy(q);
    }
    eng_predictor_destroy(p);
    return 0;
}

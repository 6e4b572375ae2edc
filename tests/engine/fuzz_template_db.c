/*
 * libFuzzer harness for the template database parser, which reads files
 * from outside: no input may crash it; a rejected input must come with a
 * message naming the input, and an accepted one must parse again the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/template_db.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

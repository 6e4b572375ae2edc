/*
 * Fuzz harness of the launch parameter decoder (src/shim/params.c): a
 * parameter layout and a parameter block come from the input, both argument
 * forms are decoded, and every value the decoder reports must be a non-zero
 * 8-byte word of the block (extra form) or of a parameter's value (kernelParams);
 * the positional values (shim_params_values) are one per small parameter, its
 * bytes zero-extended, and every aligned word of a larger one.
 * Input: n (1 byte, mod 33), n x (offset u16, size u16) little endian, block.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shim/params.h"

#define FUZZ_MAX_PARAMS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t fuzz_n;
static size_t fuzz_off[FUZZ_MAX_PARAMS], fuzz_size[FUZZ_MAX_PARAMS];

static CUresult fuzz_info(void *func, size_t i, size_t *off, size_t *sz)
{
    (void)func;
    if (i >= fuzz_n)
        return CUDA_ERROR_INVALID_VALUE;
    *off = fuzz_off[i];
    *sz = fuzz_size[i];
    return CUDA_SUCCESS;
}

/* Whether v occurs as a (possibly unaligned) 8-byte word in [p, p+len). */
static int fuzz_contains(const uint8_t *p, size_t len, uint64_t v)
{
    for (size_t i = 0; i + 8 <= len; i++)
        if (memcmp(p + i, &v, 8) == 0)
            return 1;
    return 0;
}

static void fuzz_check(const uint64_t *out, size_t n, const uint8_t *block, size_t len)
{
    if (n > SHIM_MAX_CANDIDATES)
        abort();
    for (size_t i = 0; i < n; i++)
        if (out[i] == 0 || !fuzz_contains(block, len, out[i]))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = data[0] % (FUZZ_MAX_PARAMS + 1), pos = 1;
    if (size < pos + 4 * n)
        return 0;
    for (size_t i = 0; i < n; i++, pos += 4) {
        fuzz_off[i] = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
        fuzz_size[i] = (size_t)data[pos + 2] | (size_t)data[pos + 3] << 8;
    }
    fuzz_n = n;
    const uint8_t *block = data + pos;
    size_t len = size - pos;
    shim_params_set_info(fuzz_info, NULL);
    shim_params_reset();
    uint64_t out[SHIM_MAX_CANDIDATES];

    /* the extra form: the block as the parameter buffer */
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, block, len);
    size_t buf_size = len;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &buf_size,
                     CU_LAUNCH_PARAM_END};
    size_t got =
        shim_params_decode((CUfunction)(uintptr_t)0x1000, NULL, extra, out, SHIM_MAX_CANDIDATES);
    fuzz_check(out, got, block, len);

    /* the kernelParams form: each parameter its own value, cut from the block */
    void *argv[FUZZ_MAX_PARAMS];
    uint8_t *vals[FUZZ_MAX_PARAMS] = {0};
    for (size_t i = 0; i < n; i++) {
        vals[i] = calloc(1, fuzz_size[i] ? fuzz_size[i] : 1);
        if (vals[i] && fuzz_off[i] < len)
            memcpy(vals[i], block + fuzz_off[i],
                   len - fuzz_off[i] < fuzz_size[i] ? len - fuzz_off[i] : fuzz_size[i]);
        argv[i] = vals[i];
    }
    got = shim_params_decode((CUfunction)(uintptr_t)0x1000, argv, NULL, out, SHIM_MAX_CANDIDATES);
    if (got > SHIM_MAX_CANDIDATES)
        abort();
    for (size_t k = 0; k < got; k++) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            found = vals[i] && fuzz_contains(vals[i], fuzz_size[i], out[k]);
        if (!found || out[k] == 0)
            abort();
    }
    /* positional values: one per parameter of at most 8 bytes (its bytes,
     * zero-extended, zeros kept), each aligned word of a larger one */
    uint64_t posv[SHIM_MAX_CANDIDATES];
    got = shim_params_values((CUfunction)(uintptr_t)0x1000, argv, NULL, posv, SHIM_MAX_CANDIDATES);
    size_t want = 0;
    int hole = 0;
    for (size_t i = 0; i < n && want < SHIM_MAX_CANDIDATES; i++) {
        hole |= vals[i] == NULL;
        if (fuzz_size[i] <= 8) {
            uint64_t v = 0;
            if (vals[i])
                memcpy(&v, vals[i], fuzz_size[i]);
            if (vals[i] && got > want && posv[want] != v)
                abort();
            want++;
            continue;
        }
        size_t skip = (8 - (fuzz_off[i] & 7)) & 7;
        for (size_t k = skip; k + 8 <= fuzz_size[i] && want < SHIM_MAX_CANDIDATES; k += 8)
            want++;
    }
    if (got > SHIM_MAX_CANDIDATES || (!hole && n > 0 && got != want))
        abort();
    for (size_t i = 0; i < n; i++)
        free(vals[i]);
    free(buf);
    return 0;
}

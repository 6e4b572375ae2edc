/* Simulator parameters: defaults, k=v parsing, help. */
#include "sim/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/text.h"

enum { KIND_SIZE, KIND_U64, KIND_GBPS, KIND_USEC, KIND_MSEC };
#define KIND_OF_SIZE KIND_SIZE
#define KIND_OF_U64  KIND_U64
#define KIND_OF_GBPS KIND_GBPS
#define KIND_OF_USEC KIND_USEC
#define KIND_OF_MSEC KIND_MSEC

typedef struct sim_param_desc {
    const char *key;
    int kind;
    double def;
    const char *help;
    size_t off;
} sim_param_desc_t;

static const sim_param_desc_t descs[] = {
#define SIM_PARAM_DESC_(field, key, kind, def, help)                                               \
    {key, KIND_OF_##kind, def, help, offsetof(sim_params_t, field)},
    SIM_PARAM_LIST(SIM_PARAM_DESC_)
#undef SIM_PARAM_DESC_
};
#define NDESCS (sizeof(descs) / sizeof(descs[0]))

void sim_params_default(sim_params_t *p)
{
    for (size_t i = 0; i < NDESCS; i++)
        *(double *)((char *)p + descs[i].off) = descs[i].def;
}

gmux_status_t sim_params_set(sim_params_t *p, const char *kv, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    if (!eq) {
        snprintf(err, errlen, "parameter '%s' is not key=value", kv);
        return GMUX_ERR_PARSE;
    }
    size_t klen = (size_t)(eq - kv);
    const char *val = eq + 1;
    for (size_t i = 0; i < NDESCS; i++) {
        if (strlen(descs[i].key) != klen || strncmp(descs[i].key, kv, klen) != 0)
            continue;
        double v;
        gmux_status_t st;
        if (descs[i].kind == KIND_SIZE || descs[i].kind == KIND_U64) {
            uint64_t u = 0;
            st = descs[i].kind == KIND_SIZE ? com_parse_size(val, &u) : com_parse_u64(val, &u);
            v = st == GMUX_OK ? (double)u : 0; /* u is set only when the parse succeeded */
        } else {
            st = com_parse_double(val, &v);
            if (st == GMUX_OK && !(v > 0 && isfinite(v)))
                st = GMUX_ERR_RANGE;
            double scale = descs[i].kind == KIND_GBPS   ? 1e9
                           : descs[i].kind == KIND_USEC ? 1e3
                                                        : 1e6;
            v *= scale;
        }
        if (st != GMUX_OK) {
            snprintf(err, errlen, "bad value '%s' for parameter '%s'", val, descs[i].key);
            return GMUX_ERR_PARSE;
        }
        *(double *)((char *)p + descs[i].off) = v;
        return GMUX_OK;
    }
    /* the known ones listed, as an unknown workload setting's are */
    int len = snprintf(err, errlen, "unknown parameter '%.*s' (known:", (int)klen, kv);
    for (size_t i = 0; i < NDESCS && len >= 0 && (size_t)len < errlen; i++)
        len += snprintf(err + len, errlen - (size_t)len, " %s%s", descs[i].key,
                        i + 1 < NDESCS ? "," : ")");
    return GMUX_ERR_NOT_FOUND;
}

/* A size parameter as an integer to test its bits: UINT64_MAX (not a power
 * of two) for one no uint64_t holds. "chunk=18446744073709551615" parses to
 * the double 2^64, whose plain cast is undefined (UBSan, fuzz_params). */
static uint64_t size_bits(double v)
{
    return v >= 0 && v < 18446744073709551616.0 ? (uint64_t)v : UINT64_MAX;
}

gmux_status_t sim_params_check(const sim_params_t *p, char *err, size_t errlen)
{
    uint64_t cs = size_bits(p->chunk_bytes);
    if (cs < 4096 || (cs & (cs - 1)) != 0) {
        snprintf(err, errlen, "chunk must be a power of two of at least 4KiB");
        return GMUX_ERR_RANGE;
    }
    if (p->hbm_bytes < p->chunk_bytes) {
        snprintf(err, errlen, "hbm must hold at least one chunk");
        return GMUX_ERR_RANGE;
    }
    if (p->fault_batch < 1 || p->lookahead < 1 || p->batch_chunks < 1) {
        snprintf(err, errlen, "fault_batch, lookahead and batch_chunks must be positive");
        return GMUX_ERR_RANGE;
    }
    if (p->quantum_ns < 1) { /* the simulator counts whole nanoseconds */
        snprintf(err, errlen, "quantum_ms must be at least 1e-06 (one nanosecond)");
        return GMUX_ERR_RANGE;
    }
    /* every value must convert to an integer of nanoseconds or bytes safely */
    if (p->hbm_bytes > 1e18 || p->chunk_bytes > (double)(1u << 30) || p->h2d_bps > 1e15 ||
        p->d2h_bps > 1e15 || p->h2d_bps < 1e3 || p->d2h_bps < 1e3 || p->fault_bps < 1e3 ||
        p->fault_bps > 1e15 || p->xfer_call_ns > 1e12 || p->fault_latency_ns > 1e12 ||
        p->quantum_ns > 1e15 || p->fault_batch > 1e9 || p->bound_max_refs > 1e12 ||
        p->uvm_lru > 1 || p->fault_reserve > 1e6 || p->wb_slack_ns > 1e15 ||
        p->wb_clean > (double)UINT32_MAX) {
        snprintf(err, errlen, "a parameter is out of its range (see gmux sim --help)");
        return GMUX_ERR_RANGE;
    }
    uint64_t fb = size_bits(p->fault_block);
    if (fb < 4096 || (fb & (fb - 1)) != 0 || p->fault_block > (double)(1u << 30)) {
        snprintf(err, errlen, "fault_block must be a power of two of at least 4KiB");
        return GMUX_ERR_RANGE;
    }
    if (p->uvm_prefetch_pct < 1 || p->uvm_prefetch_pct > 100) {
        snprintf(err, errlen, "uvm_prefetch_pct must lie in 1..100");
        return GMUX_ERR_RANGE;
    }
    if (p->lookahead > 1e8 || p->batch_chunks > 1e6 || p->prefetch_slices > 1e6) {
        snprintf(err, errlen, "lookahead, batch_chunks or prefetch_slices too large");
        return GMUX_ERR_RANGE;
    }
    return GMUX_OK;
}

void sim_params_print_help(FILE *out)
{
    for (size_t i = 0; i < NDESCS; i++) {
        double d = descs[i].def;
        switch (descs[i].kind) {
        case KIND_GBPS:
            d /= 1e9;
            break;
        case KIND_USEC:
            d /= 1e3;
            break;
        case KIND_MSEC:
            d /= 1e6;
            break;
        }
        int col = fprintf(out, "  %-17s %-14.10g ", descs[i].key, d);
        com_text_wrap(out, descs[i].help, col > 0 ? (size_t)col : 0, COM_TEXT_WIDTH);
    }
}

uint64_t sim_params_fault_block(const sim_params_t *p)
{
    uint64_t cs = (uint64_t)p->chunk_bytes, fb = (uint64_t)p->fault_block;
    if (fb < cs / 32)
        fb = cs / 32;
    return fb > cs ? cs : fb;
}

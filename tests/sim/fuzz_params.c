/*
 * libFuzzer harness for `gmux sim --param key=value`: no input may crash the
 * parser, a failure leaves the parameters unchanged and names the problem, and
 * any accepted value passes or fails the combination check without crashing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[256];
    size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    sim_params_t p, before;
    sim_params_default(&p);
    before = p;
    char err[256] = "";
    if (sim_params_set(&p, text, err, sizeof(err)) != GMUX_OK) {
        if (memcmp(&p, &before, sizeof(p)) != 0 || err[0] == '\0')
            abort();
        return 0;
    }
    if (sim_params_check(&p, err, sizeof(err)) == GMUX_OK) {
        /* what the simulator converts must fit */
        volatile uint64_t sink =
            (uint64_t)p.hbm_bytes + (uint64_t)p.chunk_bytes + (uint64_t)p.xfer_call_ns +
            (uint64_t)p.fault_latency_ns + (uint64_t)p.quantum_ns + (uint64_t)p.lookahead +
            (uint64_t)p.bound_max_refs + (uint64_t)p.wb_slack_ns + (uint32_t)p.wb_clean +
            (uint32_t)p.fault_reserve + (uint32_t)p.prefetch_slices + (uint32_t)p.batch_chunks;
        (void)sink;
    }
    return 0;
}

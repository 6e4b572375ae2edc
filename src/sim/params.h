/*
 * Parameters of the simulated device and of the run, declared once:
 *   X(field, "key", kind, default, "help")
 * kind SIZE takes sizes ("141GB", "2MiB"), U64 integers, F64 reals. Each
 * default's public source is given in docs/sim.md. Every one is settable with
 * `gmux sim --param key=value`.
 *
 * Thread-safety: plain values.
 */
#ifndef SIM_PARAMS_H
#define SIM_PARAMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gmux/status.h>

#define SIM_PARAM_LIST(X)                                                                          \
    X(hbm_bytes, "hbm", SIZE, 141000000000.0, "device memory (H200: 141 GB HBM3e)")                \
    X(chunk_bytes, "chunk", SIZE, 2097152.0, "migration and residency unit (2MiB or 64KiB)")       \
    X(h2d_bps, "h2d_gbps", GBPS, 44.6e9,                                                           \
      "host-to-device migration (prefetch), GB/s (H200, measured)")                                \
    X(d2h_bps, "d2h_gbps", GBPS, 12.1e9,                                                           \
      "device-to-host migration (prefetch), GB/s (H200, measured)")                                \
    X(xfer_call_ns, "xfer_call_us", USEC, 10000.0,                                                 \
      "fixed cost of one transfer call (not a fault's), us")                                       \
    X(fault_batch, "fault_batch", U64, 256.0, "UVM: most faults serviced per batch")               \
    X(fault_latency_ns, "fault_latency_us", USEC, 30000.0, "UVM: service latency per batch, us")   \
    X(fault_bps, "fault_gbps", GBPS, 4.34e9,                                                       \
      "UVM: demand paging of dense data, GB/s (H200, measured)")                                   \
    X(fault_block, "fault_block", SIZE, 65536.0,                                                   \
      "UVM: a fault moves the touched blocks of this size (H200: 64KiB; the chunk size: whole "    \
      "chunks, the former model; at most 32 per chunk)")                                           \
    X(uvm_prefetch_pct, "uvm_prefetch_pct", U64, 51.0,                                             \
      "UVM: a faulted region moves whole once over this % of it is resident or touched "           \
      "(driver's prefetch threshold; 100: never)")                                                 \
    X(uvm_lru, "uvm_lru", U64, 0.0, "UVM eviction order: 0 FIFO by migration (driver), 1 LRU")     \
    X(quantum_ns, "quantum_ms", MSEC, 10e6, "time slice of compute time, ms")                      \
    X(lookahead, "lookahead", U64, 8192.0, "launches the engine plans ahead")                      \
    X(prefetch_slices, "prefetch_slices", U64, 1.0, "slices beyond the running one prefetched")    \
    X(batch_chunks, "batch_chunks", U64, 32.0, "chunks per migration batch")                       \
    X(fault_reserve, "fault_reserve", U64, 0.0, "slots kept for mispredicted chunks (engine)")     \
    X(wb_aware, "wb_aware", U64, 1.0,                                                              \
      "engine: write-back aware (weigh, slot order, clean; 0: plain OPT, as before)")              \
    X(wb_slack_ns, "wb_slack_ms", MSEC, 50e6,                                                      \
      "engine: write-back time that may lag the fills before clean victims are preferred, ms")     \
    X(wb_clean, "wb_clean", U64, 1024.0,                                                           \
      "engine: dirty chunks cleaned per launch at most while device-to-host is idle (wb_aware)")   \
    X(bound_max_refs, "bound_max_refs", U64, 16777216.0,                                           \
      "references kept for the exact transfer bound (beyond: compute-only bound)")

typedef struct sim_params {
#define SIM_PARAM_FIELD_(field, key, kind, def, help) double field;
    SIM_PARAM_LIST(SIM_PARAM_FIELD_)
#undef SIM_PARAM_FIELD_
} sim_params_t;

/* The defaults. */
void sim_params_default(sim_params_t *p);

/* Applies "key=value"; err names the key or the value on failure. */
gmux_status_t sim_params_set(sim_params_t *p, const char *kv, char *err, size_t errlen);

/* Checks the combination (chunk of 64 KiB or 2 MiB granularity, capacity of
 * at least one chunk, positive bandwidths, a fault block that is a power of
 * two of at least 4 KiB, a prefetch threshold of 1 to 100%). */
gmux_status_t sim_params_check(const sim_params_t *p, char *err, size_t errlen);

void sim_params_print_help(FILE *out);

/* The fault block in effect: fault_block, raised to chunk/32 (a chunk keeps
 * at most 32 block bits) and capped at the chunk size. */
uint64_t sim_params_fault_block(const sim_params_t *p);

#endif /* SIM_PARAMS_H */

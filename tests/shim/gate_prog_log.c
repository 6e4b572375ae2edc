/* What the driver double's call log says, for gate_prog; see gate_prog.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gate_prog.h"

uint64_t joined_found(fake_log_count_fn count, fake_log_get_fn lg, CUstream ls, size_t *at)
{
    size_t n = count();
    for (size_t i = 0; i < n; i++) {
        const fake_call_t *c = lg(i);
        if (strcmp(c->fn, "cuStreamIsCapturing") != 0 ||
            c->a[1] != (uint64_t)CU_STREAM_CAPTURE_STATUS_ACTIVE || c->a[0] == 0 ||
            c->a[0] == (uint64_t)(uintptr_t)ls)
            continue;
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(lg(j)->fn, "cuCtxPopCurrent_v2") == 0) {
                *at = i;
                return c->a[0];
            }
        return 0;
    }
    return 0;
}

uint64_t write_moves(FILE *out, fake_log_count_fn log_count, fake_log_get_fn log_get,
                     fake_ordered_fn ordered)
{
    long last_launch = -1;
    uint64_t h_stream = 0, h_mark = 0, h_waited = 0, unordered = 0;
    int h_seen = 0;
    for (size_t i = 0; i < log_count(); i++) {
        const fake_call_t *c = log_get(i);
        if (strncmp(c->fn, "cuLaunchKernel", 14) == 0) {
            last_launch = (long)i;
        } else if (strcmp(c->fn, "cuEventRecord") == 0) {
            if (h_seen && c->a[1] == h_stream)
                h_mark = c->a[0], h_waited = 0;
        } else if (strncmp(c->fn, "cuStreamWaitEvent", 17) == 0) {
            if (h_mark && c->a[1] == h_mark)
                h_waited = c->a[0];
        } else if (strncmp(c->fn, "cuStreamSynchronize", 19) == 0) {
            fprintf(out, "S %llu %llu\n", (unsigned long long)c->ns, (unsigned long long)c->a[0]);
        } else if (strncmp(c->fn, "cuMemPrefetch", 13) == 0) {
            uint64_t where = c->a[2] >> 32;
            if (where == (uint64_t)CU_MEM_LOCATION_TYPE_DEVICE)
                unordered += h_seen && c->a[3] != h_stream && c->a[3] != h_waited;
            else if (where == (uint64_t)CU_MEM_LOCATION_TYPE_HOST)
                h_seen = 1, h_stream = c->a[3], h_mark = h_waited = 0;
            if (where == (uint64_t)CU_MEM_LOCATION_TYPE_DEVICE) {
                size_t next = i + 1; /* the next launch after it */
                while (next < log_count() && strncmp(log_get(next)->fn, "cuLaunchKernel", 14))
                    next++;
                fprintf(out, "D %llu %llu %llu %d\n", (unsigned long long)c->ns,
                        (unsigned long long)c->a[0], (unsigned long long)c->a[1],
                        next == log_count() || ordered(i, next) == 1);
            } else if (where == (uint64_t)CU_MEM_LOCATION_TYPE_HOST)
                fprintf(out, "H %llu %llu %llu %d\n", (unsigned long long)c->ns,
                        (unsigned long long)c->a[0], (unsigned long long)c->a[1],
                        last_launch < 0 || ordered((size_t)last_launch, i) == 1);
        }
    }
    return unordered;
}

size_t left_after_query(fake_log_count_fn count, fake_log_get_fn lg, CUstream ls, size_t from)
{
    size_t n = count(), q = 0;
    for (size_t i = from; i < n; i++) {
        const fake_call_t *c = lg(i);
        if (!q && strcmp(c->fn, "cuStreamIsCapturing") == 0 && c->a[0] == (uint64_t)(uintptr_t)ls)
            q = i;
        else if (q && strcmp(c->fn, "cuCtxPopCurrent_v2") == 0)
            return q;
    }
    return 0;
}

int destroyed_since(fake_log_count_fn count, fake_log_get_fn lg, uint64_t s, size_t from)
{
    size_t n = count();
    for (size_t i = from; s && i < n; i++)
        if (strncmp(lg(i)->fn, "cuStreamDestroy", 15) == 0 && lg(i)->a[0] == s)
            return 1;
    return 0;
}

/*
 * A synthetic task for the daemon's integration tests: registers with gmuxd
 * and runs KERNELS "kernels", each one: announce it pending, wait for the
 * turn, busy the "GPU" for RUN_US (a sleep), report stats. After each
 * kernel it may go idle for IDLE_US (IDLE_US > 0). Writes one line per
 * kernel to OUT:  K index request_ns start_ns end_ns local grant asked_ns
 * and at the end:   R registrations   and   P fills evicts aheads
 * (timestamps from CLOCK_MONOTONIC, comparable across processes; request_ns
 * before the PENDING is sent, asked_ns once it is in the socket; grant: the
 * daemon's sequence number of the turn the kernel ran in, 0 when local).
 *
 * Usage: gmux_test_client SOCKET NAME batch|latency PRIORITY KERNELS RUN_US IDLE_US OUT
 *                         [BUDGET_MIB [DEVICE_MIB]]
 * BUDGET_MIB (default 1024): the declared budget, also reported as the bytes
 * allocated (so it is the task's footprint for the share mode), the working
 * set being at most 64 MiB of it; DEVICE_MIB (default 0, unknown): the device
 * memory it reports in its stats.
 * With GMUX_TEST_CLIENT_GO=FILE set, it registers and then waits (at most
 * 20 s) for FILE to exist before its first kernel: a test starts several
 * clients, sees them all registered, then lets them run together.
 * With GMUX_TEST_CLIENT_HOLD=FILE set, it keeps the turn after each kernel's
 * stats are sent until FILE exists (at most 20 s), then goes idle: a test
 * sees the report in which the new counts show and the task still runs.
 * GMUX_TEST_CLIENT_WAIT_S=N: either wait gives up after N s, not 20
 * (client_go.h).
 * Exit: 0 done, 2 usage, 3 a wait for the turn (or the go or hold file) timed out,
 * 4 I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_go.h"
#include "common/clock.h"
#include "daemon/client.h"

static unsigned long fills, evicts, aheads;

static void on_plan(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind, const dmn_range_t *r,
                    uint32_t n)
{
    (void)arg, (void)grant_seq, (void)r;
    if (kind == DMN_PLAN_FILL)
        fills += n;
    else if (kind == DMN_PLAN_AHEAD)
        aheads += n;
    else
        evicts += n;
}

int main(int argc, char **argv)
{
    if (argc < 9 || argc > 11)
        return 2;
    dmn_client_opts_t o = {0};
    o.path = argv[1];
    o.name = argv[2];
    o.cls = strcmp(argv[3], "latency") == 0 ? DMN_CLASS_LATENCY : DMN_CLASS_BATCH;
    o.priority = atoi(argv[4]);
    o.budget = argc > 9 ? (uint64_t)atol(argv[9]) << 20 : 1u << 30;
    uint64_t device = argc > 10 ? (uint64_t)atol(argv[10]) << 20 : 0;
    o.on_plan = on_plan;
    long kernels = atol(argv[5]), run_us = atol(argv[6]), idle_us = atol(argv[7]);
    FILE *out = fopen(argv[8], "w");
    if (!out)
        return 4;
    dmn_client_t *c;
    if (dmn_client_open(&o, &c) != GMUX_OK)
        return 4;
    /* Each task's working set: a distinct 64 MiB range of its own space. */
    uint64_t ws_len = o.budget < (64ull << 20) ? o.budget : 64ull << 20;
    dmn_range_t ws = {0x100000000ull + (uint64_t)getpid() * 0x10000000ull, ws_len ? ws_len : 1};
    dmn_msg_stats_t st = {0, argc > 9 ? o.budget : 256ull << 20, 0, 0, 0, device, 0};
    dmn_client_report(c, &st); /* the device memory, before the first request */
    if (client_go_wait(c, o.name) != 0)
        return 3;
    for (long k = 0; k < kernels; k++) {
        uint64_t req = com_clock_ns();
        dmn_client_pending(c, 1, &ws, 1);
        uint64_t asked = com_clock_ns();
        if (dmn_client_wait_turn(c, 20 * COM_NS_PER_S) != GMUX_OK) {
            fprintf(stderr, "%s: no turn within 20 s\n", o.name);
            return 3;
        }
        int local = dmn_client_is_local(c);
        uint64_t start = com_clock_ns();
        com_clock_sleep_ns((uint64_t)run_us * COM_NS_PER_US);
        uint64_t end = com_clock_ns();
        fprintf(out, "K %ld %llu %llu %llu %d %llu %llu\n", k, (unsigned long long)req,
                (unsigned long long)start, (unsigned long long)end, local,
                (unsigned long long)dmn_client_grant_seq(c), (unsigned long long)asked);
        st.kernels = (uint64_t)k + 1;
        st.resident = ws.len;
        st.faults += 3;
        st.migrated += 1ull << 20;
        dmn_client_report(c, &st);
        if (client_file_wait(c, o.name, "GMUX_TEST_CLIENT_HOLD") != 0)
            return 3;
        if (idle_us > 0) {
            dmn_client_idle(c);
            com_clock_sleep_ns((uint64_t)idle_us * COM_NS_PER_US);
        }
    }
    dmn_client_idle(c);
    fprintf(out, "R %u\nP %lu %lu %lu\n", dmn_client_registrations(c), fills, evicts, aheads);
    dmn_client_close(c);
    return fclose(out) == 0 ? 0 : 4;
}

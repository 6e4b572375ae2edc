/*
 * Cost of storing a large EVICT order in the shim gate's store of evictions
 * (shim_gate_ranges_add_whole, src/shim/gate_ranges.c), which the shim does
 * under its gate_mu while a launching thread may wait for that lock:
 *
 *   sorted_2000    2,000 ranges of 256 bytes, 512 apart, in address order,
 *                  into an empty store of 1,024 (the daemon's chunks come in
 *                  order: the first 1,024 fill it, the rest are joined)
 *   random_2000    2,000 ranges at random places into a store already full
 *                  of 1,024 ranges (an eviction that lands while earlier
 *                  ones wait behind a graph capture)
 *
 *
 * and of taking an order out of the stored orders of the other direction
 * (shim_gate_ranges_cut, also under gate_mu), handed over 256 ranges at a
 * time as the daemon client does:
 *
 *   cut_fill_2000  an EVICT order of 2,000 ranges of 256 bytes, in address
 *                  order, two inside each of the first 1,000 ranges of a
 *                  full store of fills (1,024 of 4 KiB, 64 KiB apart): each
 *                  splits a range, so the store gives up its smaller piece
 *   cut_evict_2000 the same 2,000 ranges as a FILL order against the same
 *                  full store as a store of evictions: each cut is kept
 *                  whole for want of room
 *   cut_ahead_2000 the EVICT order of cut_fill_2000 against a store of fills
 *                  ahead filled by two plans of 512 ranges (4 KiB, 128 KiB
 *                  apart, the second 64 KiB above the first) stored as
 *                  shim_gate_ranges_add_fill keeps them (sorted); before, the
 *                  gate kept them in arrival order, and the cut took a pass
 *                  over the store for each range of the order
 *   add_fill_2000  a FILL order of 2,000 ranges of 256 bytes, 512 apart, in
 *                  address order, into an empty store of fills: the last
 *                  976 find it full and are given up
 *
 * and of finding the pieces of the stored fills ahead outside the stored
 * evictions (shim_gate_ranges_outside, gate_apply.c's shim_gate_apply_ahead, under
 * gate_mu before a launching thread waits), both stores full (1,024 ranges
 * each: fills ahead of 4 KiB, 64 KiB apart; evictions of 2 KiB, 64 KiB
 * apart, 1 KiB into each fill, so every fill has two pieces outside):
 *
 *   outside_each   a pass over the evictions for each fill ahead (the gate
 *                  until 2026-12-02: O(ahead x evict))
 *   outside_merge  one call for the whole store of fills ahead: one merge
 *                  pass, O(ahead + evict)
 *
 * Each case runs `rounds` times (argument 1, default 200) on a fresh store;
 * the figure is the best round, in microseconds per 2,000-range batch (per
 * store of fills ahead for outside_*). One
 * core, nothing else timed. Output: one JSON line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "shim/gate_ranges.h"
#include "trand.h"

#define CAP        1024u
#define BATCH      2000u
#define PLAN_BATCH 256u /* src/daemon/client.c */

static dmn_range_t store[CAP], full[CAP], ahead[CAP], tmp[CAP], batch_sorted[BATCH],
    batch_random[BATCH], batch_inside[BATCH], evicts[CAP];
static volatile uint64_t sink;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* The best round's time of adding batch to a store starting as start (n0 ranges), in ns. */
static uint64_t best_round(const dmn_range_t *start, uint32_t n0, const dmn_range_t *batch,
                           unsigned rounds)
{
    uint64_t best = UINT64_MAX;
    for (unsigned r = 0; r < rounds; r++) {
        memcpy(store, start, n0 * sizeof(*store));
        uint32_t n = n0, joined = 0;
        uint64_t t0 = com_clock_ns();
        for (uint32_t i = 0; i < BATCH; i++)
            joined += shim_gate_ranges_add_whole(store, &n, CAP, batch[i]);
        uint64_t t = com_clock_ns() - t0;
        sink += n + joined;
        best = t < best ? t : best;
    }
    return best;
}

/* The best round's time of storing batch as fills into an empty store, in ns. */
static uint64_t best_fill(const dmn_range_t *batch, unsigned rounds)
{
    uint64_t best = UINT64_MAX;
    for (unsigned r = 0; r < rounds; r++) {
        uint32_t n = 0;
        uint64_t lost = 0, t0 = com_clock_ns();
        for (uint32_t i = 0; i < BATCH; i++)
            lost += shim_gate_ranges_add_fill(store, &n, CAP, batch[i]);
        uint64_t t = com_clock_ns() - t0;
        sink += n + lost;
        best = t < best ? t : best;
    }
    return best;
}

/* The best round's time of cutting batch out of start (a fresh copy of its
 * n0 ranges each round), in ns. */
static uint64_t best_cut(const dmn_range_t *start, uint32_t n0, const dmn_range_t *batch,
                         bool keep_whole, unsigned rounds)
{
    uint64_t best = UINT64_MAX;
    for (unsigned r = 0; r < rounds; r++) {
        memcpy(store, start, n0 * sizeof(*store));
        uint32_t n = n0, dropped = 0, whole = 0;
        uint64_t t0 = com_clock_ns();
        for (uint32_t i = 0; i < BATCH; i += PLAN_BATCH)
            dropped += shim_gate_ranges_cut(store, &n, CAP, tmp, &batch[i],
                                            BATCH - i < PLAN_BATCH ? BATCH - i : PLAN_BATCH,
                                            keep_whole, &whole, NULL);
        uint64_t t = com_clock_ns() - t0;
        sink += n + dropped + whole;
        best = t < best ? t : best;
    }
    return best;
}

typedef struct pieces {
    uint64_t n, bytes;
} pieces_t;

static void count_piece(void *arg, dmn_range_t piece)
{
    pieces_t *pc = arg;
    pc->n++;
    pc->bytes += piece.len;
}

/* The best round's time of finding the pieces of the fills ahead w outside
 * the evictions v, one call for all of them (merge) or one per fill, in ns. */
static uint64_t best_outside(const dmn_range_t *v, const dmn_range_t *w, bool merge,
                             unsigned rounds)
{
    uint64_t best = UINT64_MAX;
    for (unsigned r = 0; r < rounds; r++) {
        pieces_t pc = {0, 0};
        uint64_t t0 = com_clock_ns();
        if (merge)
            shim_gate_ranges_outside(v, CAP, w, CAP, count_piece, &pc);
        else
            for (uint32_t i = 0; i < CAP; i++)
                shim_gate_ranges_outside(v, CAP, &w[i], 1, count_piece, &pc);
        uint64_t t = com_clock_ns() - t0;
        if (pc.n != 2 * CAP || pc.bytes != CAP * 2048ull) {
            fprintf(stderr, "bench_gate_ranges: %llu pieces of %llu bytes, not %u of %llu\n",
                    (unsigned long long)pc.n, (unsigned long long)pc.bytes, 2 * CAP, CAP * 2048ull);
            exit(1);
        }
        sink += pc.n;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 200;
    if (rounds == 0)
        rounds = 1;
    const uint64_t base = 1ull << 36;
    for (uint32_t i = 0; i < BATCH; i++)
        batch_sorted[i] = (dmn_range_t){base + i * 512ull, 256};
    /* a full store: 1,024 ranges of 4 KiB, 64 KiB apart */
    for (uint32_t i = 0; i < CAP; i++)
        full[i] = (dmn_range_t){base + i * 65536ull, 4096};
    for (uint32_t i = 0; i < BATCH; i++)
        batch_random[i] = (dmn_range_t){base + (trand_next(&rng) % (CAP * 65536ull)) / 256 * 256,
                                        256 + 256 * (i % 4)};
    for (uint32_t i = 0; i < BATCH; i++)
        batch_inside[i] = (dmn_range_t){base + (i / 2) * 65536ull + 1024 + (i % 2) * 2048, 256};
    uint64_t sorted = best_round(NULL, 0, batch_sorted, rounds);
    uint64_t random = best_round(full, CAP, batch_random, rounds);
    /* two plans ahead, stored as gate.c stores them */
    uint32_t na = 0;
    for (uint32_t p = 0; p < 2; p++)
        for (uint32_t i = 0; i < CAP / 2; i++)
            sink += shim_gate_ranges_add_fill(
                ahead, &na, CAP, (dmn_range_t){base + i * 131072ull + p * 65536ull, 4096});
    uint64_t cut_fill = best_cut(full, CAP, batch_inside, false, rounds);
    uint64_t cut_evict = best_cut(full, CAP, batch_inside, true, rounds);
    uint64_t cut_ahead = best_cut(ahead, na, batch_inside, false, rounds);
    uint64_t add_fill = best_fill(batch_sorted, rounds);
    /* full stores of fills ahead (full[]) and of evictions inside them */
    for (uint32_t i = 0; i < CAP; i++)
        evicts[i] = (dmn_range_t){base + i * 65536ull + 1024, 2048};
    uint64_t outside_each = best_outside(evicts, full, false, rounds);
    uint64_t outside_merge = best_outside(evicts, full, true, rounds);
    printf("{\"bench\": \"gate_evict_store\", \"rounds\": %u, \"batch\": %u, \"cap\": %u, "
           "\"sorted_2000_us\": %.1f, \"random_2000_us\": %.1f, \"cut_fill_2000_us\": %.1f, "
           "\"cut_evict_2000_us\": %.1f, \"cut_ahead_2000_us\": %.1f, \"add_fill_2000_us\": %.1f, "
           "\"outside_each_1024_us\": %.1f, \"outside_merge_1024_us\": %.1f}\n",
           rounds, BATCH, CAP, (double)sorted / 1000.0, (double)random / 1000.0,
           (double)cut_fill / 1000.0, (double)cut_evict / 1000.0, (double)cut_ahead / 1000.0,
           (double)add_fill / 1000.0, (double)outside_each / 1000.0,
           (double)outside_merge / 1000.0);
    return 0;
}

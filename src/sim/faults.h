/*
 * How much a demand fault moves: the UVM driver's fault granularity.
 *
 * The simulator keeps residency in chunks (2 MiB by default), but the driver
 * does not migrate a whole chunk on a fault: on the H200 an isolated touch
 * of a cold managed buffer moved exactly 64 KiB (gmux-calibrate's sparse
 * test, docs/gpu-results.md), the GPU's big-page size. Each chunk is seen as
 * up to 32 blocks of `fault_block` bytes (sim_params_fault_block); a fault
 * moves the blocks its launch touches, grown by the driver's density rule:
 * the driver's prefetcher (uvm_perf_prefetch.c in NVIDIA's
 * open-gpu-kernel-modules) views each 2 MiB block as a binary tree of
 * aligned subregions and, for every faulted page, migrates the largest
 * subregion containing it in which more than uvm_prefetch_pct (51) percent
 * of the pages are already resident or being faulted. So a dense stream
 * moves whole chunks, as before, and a lone touch moves one block.
 *
 * Masks: bit k stands for the chunk's k-th block; a chunk of n blocks uses
 * bits 0..n-1.
 *
 * Thread-safety: plain values.
 */
#ifndef SIM_FAULTS_H
#define SIM_FAULTS_H

#include <stdint.h>

#include "sim/params.h"

typedef struct sim_fault_model {
    uint64_t block;   /* bytes per block */
    uint32_t nblocks; /* blocks per chunk (1..32) */
    uint32_t full;    /* mask of every block of a chunk */
    uint32_t pct;     /* density threshold, percent */
} sim_fault_model_t;

void sim_fault_model_init(sim_fault_model_t *m, const sim_params_t *p);

/* The blocks a fault moves, given the chunk's resident blocks and the blocks
 * the launch touches: the touched ones not resident, each grown to the
 * largest aligned group of blocks that the density rule promotes (never a
 * resident block). 0 when every touched block is resident. */
uint32_t sim_fault_blocks(const sim_fault_model_t *m, uint32_t resident, uint32_t touched);

/* Bytes of the blocks of mask. */
uint64_t sim_fault_bytes(const sim_fault_model_t *m, uint32_t mask);

#endif /* SIM_FAULTS_H */

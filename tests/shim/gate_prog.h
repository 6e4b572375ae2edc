/*
 * The parts of gate_prog (gate_prog.c, which says what the program does and
 * writes) that are not its main line: waiting on files, the driver's entry
 * points, the capturing thread of CAPTURE 3 and 14 (gate_prog_util.c), and
 * what the driver double's call log says (gate_prog_log.c).
 */
#ifndef GATE_PROG_H
#define GATE_PROG_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "fake_cuda/fake_cuda.h"

/* CLOCK_MONOTONIC in ns. */
uint64_t now_ns(void);

/* Waits ms, or until the file arg names (it begins with '/') exists: 0, or
 * -1 after two minutes without it. */
int wait_for(const char *arg);

/* The entry point of base at CUDA version (get: 12000; get_pt: the per-thread
 * default stream's, _ptsz); NULL where the driver has none. */
void *get_at(PFN_cuGetProcAddress_v12000 gpa, const char *base, int version);
void *get(PFN_cuGetProcAddress_v12000 gpa, const char *base);
void *get_pt(PFN_cuGetProcAddress_v12000 gpa, const char *base);

/* CAPTURE 16 and 17: the second pause, OUTFILE.paused2 until PAUSE_MS's
 * file with "2" appended exists. 0, or -1. */
int pause_again(const char *outfile, const char *pause);

/* CAPTURE 21 at the pause: once OUTFILE.launch exists, launches pf on s
 * with *p; the double holds that launch past its gate (its first lookup of
 * pf's layout: OUTFILE.stalled) until the shim's next query of s, by any
 * thread (the watcher ordering evictions after s), stalls in turn
 * (OUTFILE.ordering), and holds that query until the launch returned
 * (OUTFILE.launched). 0, or -1. */
int launch_meets_ordering(const char *outfile, void *drv, PFN_cuLaunchKernel_v4000 launch,
                          CUfunction pf, CUstream s, CUdeviceptr *p);

/* CAPTURE 3: the capturing thread. */
typedef struct capturer {
    PFN_cuStreamBeginCapture_v10010 begin;
    PFN_cuStreamEndCapture_v10000 end;
    CUstream s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int begun, done;
    CUresult begin_r, end_r;
} capturer_t;

/* Starts the capturing thread and waits until its capture began; 0 or -1. */
int capture_start(PFN_cuGetProcAddress_v12000 gpa, capturer_t *c, pthread_t *th);
/* Ends the capture; whether it held (the driver made a graph of it). */
int capture_finish(capturer_t *c, pthread_t th);

/* CAPTURE 6: the stream the shim found joined to the capture of ls (a query
 * of it answered "active"), once the thread that found it left the context
 * after (the watcher pops it); 0 until then. *at: the log index of the query. */
uint64_t joined_found(fake_log_count_fn count, fake_log_get_fn lg, CUstream ls, size_t *at);
/* CAPTURE 18: the log index (from `from` on) of the first query of ls that a
 * cuCtxPopCurrent_v2 follows (the watcher left the context after the query
 * that began the armed capture); 0 until then. */
size_t left_after_query(fake_log_count_fn count, fake_log_get_fn lg, CUstream ls, size_t from);
/* Whether the log holds a destruction of stream s (either ABI) from `from` on. */
int destroyed_since(fake_log_count_fn count, fake_log_get_fn lg, uint64_t s, size_t from);

/* Writes the S, D and H lines of OUTFILE from the double's call log to out;
 * returns the prefetches to the device not ordered after the last
 * prefetch to the host before them (CAPTURE 9's "O" line). */
uint64_t write_moves(FILE *out, fake_log_count_fn log_count, fake_log_get_fn log_get,
                     fake_ordered_fn ordered);

#endif /* GATE_PROG_H */

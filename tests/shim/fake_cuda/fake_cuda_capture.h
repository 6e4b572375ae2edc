/*
 * The driver double's captures in progress, several at once (different
 * streams, different threads), as fake_cuda_capture.c (their lifetime, modes,
 * invalidation) and fake_cuda_join.c (their streams, dependency sets and
 * captured events) share them. Internal to the double.
 * LOCKING: fake_cap_mu guards every slot and the captured state of events;
 * fake_cuda_graph.c calls fake_join_node under its fake_capture_mu (that
 * order only). Nothing here calls out of the double's capture core while
 * holding fake_cap_mu.
 */
#ifndef FAKE_CUDA_CAPTURE_H
#define FAKE_CUDA_CAPTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fake_cuda_graph.h"

#define FAKE_CAPTURES     8  /* captures in progress at once */
#define FAKE_JOIN_STREAMS 16 /* streams taking part in one capture, origin included */

typedef struct fake_capture {
    uint64_t id;      /* unique in the process, from 1; 0: the slot is free */
    bool begun;       /* by cuStreamBeginCapture (else fake_set_capturing's: no graph) */
    bool broken;      /* invalidated */
    bool blocking;    /* its origin is a blocking stream: ctx's legacy stream is unusable */
    int mode;         /* CUstreamCaptureMode it was begun with */
    uintptr_t thread; /* the thread that began it (a thread-local's address) */
    uintptr_t ctx;    /* the context of its origin; 0: every context */
    CUgraph graph;    /* the graph it records (NULL for fake_set_capturing's) */
    fake_graph_t *g;  /* the same */
    uint64_t lost;    /* joins that found no free stream slot (taken for unjoined) */
    struct {
        uintptr_t s;   /* 0: free; js[0] is the origin */
        uint64_t deps; /* its dependency set, a mask of node slots */
    } js[FAKE_JOIN_STREAMS];
    uint64_t anc[FAKE_MAX_NODES]; /* each node slot's ancestors */
} fake_capture_t;

extern __attribute__((visibility("hidden"))) pthread_mutex_t fake_cap_mu;
extern __attribute__((visibility("hidden"))) fake_capture_t fake_caps[FAKE_CAPTURES];

/* Under fake_cap_mu: the capture in progress that s takes part in (its
 * origin, or a stream that joined it), or NULL; the one numbered id, or NULL
 * once it ended. */
__attribute__((visibility("hidden"))) fake_capture_t *fake_cap_of(uintptr_t s);
__attribute__((visibility("hidden"))) fake_capture_t *fake_cap_by_id(uint64_t id);
/* Under fake_cap_mu: whether a stream that joined c has work not joined back
 * into its origin (fake_cuda_join.c). */
__attribute__((visibility("hidden"))) bool fake_cap_unjoined(const fake_capture_t *c);

#endif

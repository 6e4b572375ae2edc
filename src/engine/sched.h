/*
 * The time-slice scheduler: which task owns the GPU next, and when the
 * running one must yield. Decisions are taken at kernel boundaries only
 * (a running kernel is never interrupted).
 *
 * Rules, in order:
 *  1. Latency-critical (LC) tasks come before best-effort (BE) ones: when an
 *     LC task is ready and a BE task runs, the BE task yields at its next
 *     kernel boundary (not at the end of its quantum).
 *  2. Within a class, a higher priority comes first (strict: a lower priority
 *     runs only while no higher one is ready). A higher-priority BE task that
 *     becomes ready waits for the end of the running quantum.
 *  3. Among equals, round robin with a quantum of compute time.
 *
 * Time is whatever the caller charges (the simulator plans slices in compute
 * time, so the plan and hence the reference string are the same whatever the
 * memory policy).
 *
 * Thread-safety: one engine thread.
 */
#ifndef ENG_SCHED_H
#define ENG_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

typedef enum eng_class {
    ENG_CLASS_BE = 0, /* best effort */
    ENG_CLASS_LC = 1, /* latency critical */
} eng_class_t;

typedef struct eng_sched eng_sched_t;

gmux_status_t eng_sched_create(uint32_t ntasks, uint64_t quantum_ns, eng_sched_t **s_p);
void eng_sched_destroy(eng_sched_t *s);

/* Class and priority (higher runs first) of a task; default BE, 0. */
gmux_status_t eng_sched_set_class(eng_sched_t *s, uint32_t task, eng_class_t cls, int prio);

/* Whether the task has work (tasks start ready; a finished task is not). */
void eng_sched_set_ready(eng_sched_t *s, uint32_t task, bool ready);
bool eng_sched_is_ready(const eng_sched_t *s, uint32_t task);

/* Picks the next task to run and makes it the running one with a fresh
 * quantum; ENG_SCHED_IDLE when no task is ready. */
#define ENG_SCHED_IDLE UINT32_MAX
uint32_t eng_sched_pick(eng_sched_t *s);

/* The running task, or ENG_SCHED_IDLE. */
uint32_t eng_sched_running(const eng_sched_t *s);

/* Charges compute time to the running task's quantum. */
void eng_sched_charge(eng_sched_t *s, uint64_t ns);

/* At a kernel boundary: whether the running task must yield now. */
bool eng_sched_should_yield(const eng_sched_t *s);

#endif /* ENG_SCHED_H */

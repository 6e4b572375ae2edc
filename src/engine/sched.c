/* Time-slice scheduler: LC before BE, strict priorities, round robin. */
#include "engine/sched.h"

#include <stdlib.h>

typedef struct eng_sched_task {
    int prio;
    uint8_t cls;
    bool ready;
} eng_sched_task_t;

struct eng_sched {
    eng_sched_task_t *tasks;
    uint32_t ntasks;
    uint64_t quantum_ns;
    uint32_t running;
    uint32_t last; /* last task picked: round robin continues after it */
    uint64_t used_ns;
};

gmux_status_t eng_sched_create(uint32_t ntasks, uint64_t quantum_ns, eng_sched_t **s_p)
{
    if (ntasks == 0 || quantum_ns == 0)
        return GMUX_ERR_INVALID;
    eng_sched_t *s = calloc(1, sizeof(*s));
    if (!s)
        return GMUX_ERR_NOMEM;
    s->tasks = calloc(ntasks, sizeof(*s->tasks));
    if (!s->tasks) {
        free(s);
        return GMUX_ERR_NOMEM;
    }
    for (uint32_t t = 0; t < ntasks; t++)
        s->tasks[t].ready = true;
    s->ntasks = ntasks;
    s->quantum_ns = quantum_ns;
    s->running = ENG_SCHED_IDLE;
    s->last = ntasks - 1;
    *s_p = s;
    return GMUX_OK;
}

void eng_sched_destroy(eng_sched_t *s)
{
    if (!s)
        return;
    free(s->tasks);
    free(s);
}

gmux_status_t eng_sched_set_class(eng_sched_t *s, uint32_t task, eng_class_t cls, int prio)
{
    if (task >= s->ntasks || (cls != ENG_CLASS_BE && cls != ENG_CLASS_LC))
        return GMUX_ERR_INVALID;
    s->tasks[task].cls = (uint8_t)cls;
    s->tasks[task].prio = prio;
    return GMUX_OK;
}

void eng_sched_set_ready(eng_sched_t *s, uint32_t task, bool ready)
{
    if (task < s->ntasks)
        s->tasks[task].ready = ready;
}

bool eng_sched_is_ready(const eng_sched_t *s, uint32_t task)
{
    return task < s->ntasks && s->tasks[task].ready;
}

/* Orders (class, priority): positive when a ranks above b. */
static int rank_cmp(const eng_sched_task_t *a, const eng_sched_task_t *b)
{
    if (a->cls != b->cls)
        return a->cls > b->cls ? 1 : -1;
    if (a->prio != b->prio)
        return a->prio > b->prio ? 1 : -1;
    return 0;
}

uint32_t eng_sched_pick(eng_sched_t *s)
{
    uint32_t best = ENG_SCHED_IDLE;
    for (uint32_t k = 1; k <= s->ntasks; k++) {
        uint32_t t = (s->last + k) % s->ntasks;
        if (!s->tasks[t].ready)
            continue;
        if (best == ENG_SCHED_IDLE || rank_cmp(&s->tasks[t], &s->tasks[best]) > 0)
            best = t;
    }
    s->running = best;
    s->used_ns = 0;
    if (best != ENG_SCHED_IDLE)
        s->last = best;
    return best;
}

uint32_t eng_sched_running(const eng_sched_t *s)
{
    return s->running;
}

void eng_sched_charge(eng_sched_t *s, uint64_t ns)
{
    s->used_ns += ns;
}

bool eng_sched_should_yield(const eng_sched_t *s)
{
    if (s->running == ENG_SCHED_IDLE)
        return true;
    const eng_sched_task_t *run = &s->tasks[s->running];
    if (!run->ready)
        return true;
    bool quantum_over = s->used_ns >= s->quantum_ns;
    for (uint32_t t = 0; t < s->ntasks; t++) {
        if (t == s->running || !s->tasks[t].ready)
            continue;
        int c = rank_cmp(&s->tasks[t], run);
        if (s->tasks[t].cls == ENG_CLASS_LC && run->cls == ENG_CLASS_BE)
            return true; /* LC preempts BE at this kernel boundary */
        if (quantum_over && c >= 0)
            return true;
    }
    return false;
}

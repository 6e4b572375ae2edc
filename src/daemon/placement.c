/* Placement policies of the daemon; see placement.h. */
#include "daemon/placement.h"
#include "common/array.h"

#include "daemon/place_chunk.h"
#include "daemon/place_alloc.h"
#include "daemon/place_opt.h"

#include <stdlib.h>
#include <string.h>

void dmn_plan_init(dmn_plan_t *plan)
{
    memset(plan, 0, sizeof(*plan));
}

void dmn_plan_fini(dmn_plan_t *plan)
{
    free(plan->entries);
    dmn_plan_init(plan);
}

void dmn_plan_clear(dmn_plan_t *plan)
{
    plan->n = 0;
    plan->grant_flags = 0;
}

gmux_status_t dmn_plan_reserve(dmn_plan_t *plan, size_t n)
{
    if (n <= plan->cap - plan->n)
        return GMUX_OK;
    if (n > SIZE_MAX - plan->n || dmn_place_alloc_fails())
        return GMUX_ERR_NOMEM;
    return com_array_grow((void **)&plan->entries, &plan->cap, plan->n + n, sizeof(*plan->entries),
                          64, SIZE_MAX);
}

uint64_t dmn_views_pinned_chunks(const dmn_task_view_t *tasks, size_t n, uint64_t chunk,
                                 uint64_t most)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n && sum < most; i++) {
        uint64_t p = tasks[i].pinned, c = p / chunk + (p % chunk != 0);
        sum = c < most - sum ? sum + c : most; /* reported bytes: any value */
    }
    return sum;
}

gmux_status_t dmn_plan_add(dmn_plan_t *plan, uint32_t task_id, dmn_plan_kind_t kind,
                           dmn_range_t range)
{
    /* Its own code, not dmn_plan_put: built on that, gcc -O2 moved the range
     * through the stack in one 16-byte load after two 8-byte stores, and
     * `opt` with 4,095 ranges per task went from 48 to 64 us per switch. */
    dmn_plan_entry_t *last = plan->n ? &plan->entries[plan->n - 1] : NULL;
    if (last && last->task_id == task_id && last->kind == (uint32_t)kind &&
        last->range.base + last->range.len == range.base) {
        last->range.len += range.len;
        return GMUX_OK;
    }
    if (plan->n == plan->cap) {
        gmux_status_t st = dmn_plan_reserve(plan, 1);
        if (st != GMUX_OK)
            return st;
    }
    plan->entries[plan->n++] = (dmn_plan_entry_t){task_id, (uint32_t)kind, range};
    return GMUX_OK;
}

static gmux_status_t none_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                    const dmn_task_view_t *from, const dmn_task_view_t *to,
                                    dmn_plan_t *plan)
{
    (void)ctx, (void)tasks, (void)n_tasks, (void)from, (void)to, (void)plan;
    return GMUX_OK;
}

static gmux_status_t swap_on_switch(void *ctx, const dmn_task_view_t *tasks, size_t n_tasks,
                                    const dmn_task_view_t *from, const dmn_task_view_t *to,
                                    dmn_plan_t *plan)
{
    (void)ctx, (void)tasks, (void)n_tasks;
    gmux_status_t st = GMUX_OK;
    if (from && from->id != to->id)
        for (uint32_t i = 0; i < from->n_ranges && st == GMUX_OK; i++)
            st = dmn_plan_add(plan, from->id, DMN_PLAN_EVICT, from->ranges[i]);
    for (uint32_t i = 0; i < to->n_ranges && st == GMUX_OK; i++)
        st = dmn_plan_add(plan, to->id, DMN_PLAN_FILL, to->ranges[i]);
    return st;
}

static const dmn_placement_t policies[] = {
    {"none", NULL, none_on_switch, NULL},
    {"swap", NULL, swap_on_switch, NULL},
};

const dmn_placement_t *dmn_placement_find(const char *name)
{
    if (name && strcmp(name, "opt") == 0)
        return dmn_place_opt_default();
    if (name && strcmp(name, "chunk") == 0)
        return dmn_place_chunk_default();
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
        if (name && strcmp(name, policies[i].name) == 0)
            return &policies[i];
    return NULL;
}

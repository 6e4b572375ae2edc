/* The UVM fault granularity: touched blocks grown by the density rule. */
#include "sim/faults.h"

void sim_fault_model_init(sim_fault_model_t *m, const sim_params_t *p)
{
    m->block = sim_params_fault_block(p);
    m->nblocks = (uint32_t)((uint64_t)p->chunk_bytes / m->block);
    m->full = m->nblocks >= 32 ? UINT32_MAX : (1u << m->nblocks) - 1;
    m->pct = (uint32_t)p->uvm_prefetch_pct;
}

static uint32_t group_mask(uint32_t size, uint32_t first)
{
    return (size >= 32 ? UINT32_MAX : (1u << size) - 1) << first;
}

uint32_t sim_fault_blocks(const sim_fault_model_t *m, uint32_t resident, uint32_t touched)
{
    touched &= m->full;
    uint32_t need = touched & ~resident;
    if (!need)
        return 0;
    /* Occupancy as the driver counts it: what is there plus what faults now. */
    uint32_t occ = resident | touched;
    if ((uint32_t)__builtin_popcount(occ) * 100u > m->nblocks * m->pct)
        return m->full & ~resident; /* the whole chunk qualifies: the largest group */
    uint32_t moved = need;
    for (uint32_t b = 0; b < m->nblocks; b++) {
        if (!(need & (1u << b)))
            continue;
        uint32_t grow = 0;
        for (uint32_t size = 2; size <= m->nblocks; size *= 2) {
            uint32_t g = group_mask(size, b & ~(size - 1));
            if ((uint32_t)__builtin_popcount(occ & g) * 100u > size * m->pct)
                grow = g; /* the largest group that qualifies wins */
        }
        moved |= grow;
    }
    return moved & ~resident;
}

uint64_t sim_fault_bytes(const sim_fault_model_t *m, uint32_t mask)
{
    return (uint64_t)__builtin_popcount(mask) * m->block;
}

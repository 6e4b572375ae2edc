/* Placement: resident set with an OPT max-heap and an LRU/FIFO list. */
#include "engine/placement.h"

#include <stdlib.h>

struct eng_placement {
    eng_regions_t *regs;
    eng_place_policy_t policy;
    uint64_t capacity;
    uint64_t resident;
    uint32_t *heap; /* OPT: max-heap on (next_use, chunk id) */
    uint32_t heap_n, heap_cap;
    uint32_t lru_head, lru_tail; /* head: least recent */
    uint64_t stamp;
};

gmux_status_t eng_place_create(eng_regions_t *regs, eng_place_policy_t policy,
                               uint64_t capacity_chunks, eng_placement_t **p_p)
{
    if (!regs || capacity_chunks == 0 ||
        (policy != ENG_PLACE_OPT && policy != ENG_PLACE_LRU && policy != ENG_PLACE_FIFO))
        return GMUX_ERR_INVALID;
    eng_placement_t *p = calloc(1, sizeof(*p));
    if (!p)
        return GMUX_ERR_NOMEM;
    p->regs = regs;
    p->policy = policy;
    p->capacity = capacity_chunks;
    p->lru_head = p->lru_tail = ENG_NONE;
    *p_p = p;
    return GMUX_OK;
}

void eng_place_destroy(eng_placement_t *p)
{
    if (!p)
        return;
    free(p->heap);
    free(p);
}

uint64_t eng_place_capacity(const eng_placement_t *p)
{
    return p->capacity;
}

uint64_t eng_place_resident(const eng_placement_t *p)
{
    return p->resident;
}

eng_place_policy_t eng_place_policy(const eng_placement_t *p)
{
    return p->policy;
}

static inline eng_chunk_t *ch(eng_placement_t *p, uint32_t c)
{
    return eng_regions_chunk(p->regs, c);
}

/* a above b in the max-heap; ties go to the higher id (deterministic). */
static inline int above(eng_placement_t *p, uint32_t a, uint32_t b)
{
    uint64_t ka = ch(p, a)->key, kb = ch(p, b)->key;
    return ka != kb ? ka > kb : a > b;
}

static void heap_set(eng_placement_t *p, uint32_t i, uint32_t c)
{
    p->heap[i] = c;
    ch(p, c)->heap_idx = i;
}

static void sift_up(eng_placement_t *p, uint32_t i)
{
    uint32_t c = p->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!above(p, c, p->heap[parent]))
            break;
        heap_set(p, i, p->heap[parent]);
        i = parent;
    }
    heap_set(p, i, c);
}

static void sift_down(eng_placement_t *p, uint32_t i)
{
    uint32_t c = p->heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1, best = i;
        uint32_t bc = c;
        if (l < p->heap_n && above(p, p->heap[l], bc)) {
            best = l;
            bc = p->heap[l];
        }
        if (l + 1 < p->heap_n && above(p, p->heap[l + 1], bc))
            best = l + 1;
        if (best == i)
            break;
        heap_set(p, i, p->heap[best]);
        i = best;
    }
    heap_set(p, i, c);
}

static void lru_unlink(eng_placement_t *p, uint32_t c)
{
    eng_chunk_t *x = ch(p, c);
    if (x->lru_prev != ENG_NONE)
        ch(p, x->lru_prev)->lru_next = x->lru_next;
    else
        p->lru_head = x->lru_next;
    if (x->lru_next != ENG_NONE)
        ch(p, x->lru_next)->lru_prev = x->lru_prev;
    else
        p->lru_tail = x->lru_prev;
    x->lru_prev = x->lru_next = ENG_NONE;
}

static void lru_append(eng_placement_t *p, uint32_t c)
{
    eng_chunk_t *x = ch(p, c);
    x->lru_prev = p->lru_tail;
    x->lru_next = ENG_NONE;
    if (p->lru_tail != ENG_NONE)
        ch(p, p->lru_tail)->lru_next = c;
    else
        p->lru_head = c;
    p->lru_tail = c;
    x->order = ++p->stamp;
}

gmux_status_t eng_place_insert(eng_placement_t *p, uint32_t chunk)
{
    eng_chunk_t *x = ch(p, chunk);
    if (x->flags & ENG_CHUNK_RESIDENT)
        return GMUX_ERR_STATE;
    if (p->resident >= p->capacity)
        return GMUX_ERR_CAPACITY;
    if (p->policy == ENG_PLACE_OPT) {
        if (p->heap_n == p->heap_cap) {
            uint32_t ncap = p->heap_cap ? p->heap_cap * 2 : 1024;
            uint32_t *h = realloc(p->heap, (size_t)ncap * sizeof(*h));
            if (!h)
                return GMUX_ERR_NOMEM;
            p->heap = h;
            p->heap_cap = ncap;
        }
        heap_set(p, p->heap_n++, chunk);
        sift_up(p, p->heap_n - 1);
    } else {
        lru_append(p, chunk);
    }
    x->flags |= ENG_CHUNK_RESIDENT;
    p->resident++;
    return GMUX_OK;
}

void eng_place_remove(eng_placement_t *p, uint32_t chunk)
{
    eng_chunk_t *x = ch(p, chunk);
    if (!(x->flags & ENG_CHUNK_RESIDENT))
        return;
    if (p->policy == ENG_PLACE_OPT) {
        uint32_t i = x->heap_idx;
        uint32_t last = p->heap[--p->heap_n];
        x->heap_idx = ENG_NONE;
        if (i < p->heap_n) {
            heap_set(p, i, last);
            sift_up(p, i);
            sift_down(p, ch(p, last)->heap_idx);
        }
    } else {
        lru_unlink(p, chunk);
    }
    x->flags &= ~(uint32_t)ENG_CHUNK_RESIDENT;
    p->resident--;
}

void eng_place_touch(eng_placement_t *p, uint32_t chunk)
{
    if (p->policy != ENG_PLACE_LRU || !(ch(p, chunk)->flags & ENG_CHUNK_RESIDENT))
        return;
    if (p->lru_tail == chunk)
        return;
    lru_unlink(p, chunk);
    lru_append(p, chunk);
}

void eng_place_key_changed(eng_placement_t *p, uint32_t chunk)
{
    if (p->policy != ENG_PLACE_OPT)
        return;
    eng_chunk_t *x = ch(p, chunk);
    if (x->heap_idx == ENG_NONE)
        return;
    sift_up(p, x->heap_idx);
    sift_down(p, x->heap_idx);
}

uint32_t eng_place_victim(eng_placement_t *p, uint64_t need_pos)
{
    if (p->policy == ENG_PLACE_OPT) {
        if (p->heap_n == 0)
            return ENG_NONE;
        uint32_t top = p->heap[0];
        return ch(p, top)->key > need_pos ? top : ENG_NONE;
    }
    for (uint32_t c = p->lru_head; c != ENG_NONE; c = ch(p, c)->lru_next) {
        if (ch(p, c)->key > need_pos)
            return c;
    }
    return ENG_NONE;
}

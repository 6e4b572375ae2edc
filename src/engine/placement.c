/* Placement: resident set with an OPT max-heap and an LRU/FIFO list. */
#include "engine/placement.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/array.h"

/* OPT: a binary max-heap on (next use, chunk id). Each entry carries its
 * chunk's key, equal to eng_chunk_t.key while the chunk is in the heap (the
 * owner announces every change): the sifts compare entries side by side in
 * the array instead of loading a chunk per comparison. */
typedef struct eng_heap_ent {
    uint64_t key;
    uint32_t id;
} eng_heap_ent_t;

typedef struct eng_heap {
    eng_heap_ent_t *a;
    uint32_t n, cap;
} eng_heap_t;

struct eng_placement {
    eng_regions_t *regs;
    eng_place_policy_t policy;
    uint64_t capacity;
    uint64_t resident;
    /* OPT: clean chunks [0], chunks to write back [1], and the same two
     * whose data is dead ([2], [3]: eng_place_expire; all keyed ENG_POS_INF,
     * the first victims, kept apart so that the dirty heap that cleaning
     * walks holds no chunk its free will drop) */
    eng_heap_t heap[4];
    /* OPT: per chunk id, its entry's index in its heap, ENG_NONE if in none
     * (kept here rather than in eng_chunk_t: a sift writes one per level,
     * and these stay in cache where the chunks do not) */
    uint32_t *hpos;
    uint32_t nhpos; /* ids hpos covers */
    /* write-back awareness (OPT), off while fill_ns is 0 */
    double fill_ns, wb_ns;       /* copy time of one chunk each way */
    double backlog_ns;           /* planned write-back time beyond planned fill time */
    double slack_ns;             /* the most the write-backs may lag the fills by */
    uint32_t lru_head, lru_tail; /* head: least recent */
    uint64_t stamp;
    /* LRU/FIFO search cursor: while skip_valid, every listed chunk older
     * than skip_order (so before skip_at) has a key <= skip_need, so a
     * search for a position >= skip_need may start at skip_at (ENG_NONE:
     * at the first chunk listed after the cursor was set). */
    bool skip_valid;
    uint64_t skip_need, skip_order;
    uint32_t skip_at;
    uint64_t scanned; /* chunks the LRU/FIFO searches looked at */
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
    for (int i = 0; i < 4; i++)
        free(p->heap[i].a);
    free(p->hpos);
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

/*
 * The chunk's key in the live heaps: its next use, except that "none in the
 * window" ranks one below a chunk whose region the plan has freed (in a dead
 * heap, keyed ENG_POS_INF: its data is dead), so a chunk used again beyond
 * the window is never evicted while a dead one holds a slot.
 */
static inline uint64_t heap_key(uint64_t key)
{
    return key == ENG_POS_INF ? ENG_POS_INF - 1 : key;
}

/* a above b in the max-heap; ties go to the higher id (deterministic). */
static inline bool above(eng_heap_ent_t a, eng_heap_ent_t b)
{
    return a.key != b.key ? a.key > b.key : a.id > b.id;
}

static inline void heap_set(eng_placement_t *p, eng_heap_t *h, uint32_t i, eng_heap_ent_t e)
{
    h->a[i] = e;
    p->hpos[e.id] = i;
}

/* The chunk's index in its heap, ENG_NONE if in none. */
static inline uint32_t heap_pos(const eng_placement_t *p, uint32_t c)
{
    return c < p->nhpos ? p->hpos[c] : ENG_NONE;
}

/* Makes hpos cover chunk id c. */
static gmux_status_t hpos_cover(eng_placement_t *p, uint32_t c)
{
    if (c < p->nhpos)
        return GMUX_OK;
    uint32_t cap = p->nhpos;
    gmux_status_t st =
        com_array_grow_u32((void **)&p->hpos, &cap, (size_t)c + 1, sizeof(*p->hpos), 1024);
    if (st != GMUX_OK)
        return st;
    for (uint32_t i = p->nhpos; i < cap; i++)
        p->hpos[i] = ENG_NONE;
    p->nhpos = cap;
    return GMUX_OK;
}

static void sift_up(eng_placement_t *p, eng_heap_t *h, uint32_t i)
{
    eng_heap_ent_t e = h->a[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!above(e, h->a[parent]))
            break;
        heap_set(p, h, i, h->a[parent]);
        i = parent;
    }
    heap_set(p, h, i, e);
}

/* Sinks the entry at i below every child above it: for a short fall (a
 * key lowered a little). */
static void sift_down(eng_placement_t *p, eng_heap_t *h, uint32_t i)
{
    eng_heap_ent_t e = h->a[i];
    uint32_t n = h->n;
    for (;;) {
        uint32_t l = 2 * i + 1, best;
        if (l + 1 < n)
            best = above(h->a[l + 1], h->a[l]) ? l + 1 : l;
        else if (l < n)
            best = l;
        else
            break;
        if (!above(h->a[best], e))
            break;
        heap_set(p, h, i, h->a[best]);
        i = best;
    }
    heap_set(p, h, i, e);
}

/* The same for a long fall (a deletion's last leaf put at the top), bottom
 * up: the hole goes down the path of the larger children to a leaf (one
 * comparison a level), then the entry rises back up that path to its place.
 * The path is in heap order, so the array ends as sift_down leaves it; the
 * entry pays for the few levels it rises, not for a second comparison at
 * every level it sinks. */
static void sink_far(eng_placement_t *p, eng_heap_t *h, uint32_t i)
{
    eng_heap_ent_t e = h->a[i];
    uint32_t n = h->n, top = i;
    for (;;) {
        uint32_t l = 2 * i + 1, best;
        if (l + 1 < n)
            best = above(h->a[l + 1], h->a[l]) ? l + 1 : l;
        else if (l < n)
            best = l;
        else
            break;
        heap_set(p, h, i, h->a[best]);
        i = best;
    }
    while (i > top) {
        uint32_t parent = (i - 1) / 2;
        if (!above(e, h->a[parent]))
            break;
        heap_set(p, h, i, h->a[parent]);
        i = parent;
    }
    heap_set(p, h, i, e);
}

static gmux_status_t heap_push(eng_placement_t *p, eng_heap_t *h, uint32_t c, uint64_t key)
{
    if (h->n == h->cap) {
        gmux_status_t st =
            com_array_grow_u32((void **)&h->a, &h->cap, (size_t)h->n + 1, sizeof(*h->a), 1024);
        if (st != GMUX_OK)
            return st;
    }
    heap_set(p, h, h->n++, (eng_heap_ent_t){key, c});
    sift_up(p, h, h->n - 1);
    return GMUX_OK;
}

static void heap_del(eng_placement_t *p, eng_heap_t *h, uint32_t c)
{
    uint32_t i = p->hpos[c];
    eng_heap_ent_t last = h->a[--h->n];
    p->hpos[c] = ENG_NONE;
    if (i < h->n) {
        heap_set(p, h, i, last);
        sift_up(p, h, i);
        if (p->hpos[last.id] == i) /* it did not rise: a leaf, it sinks far */
            sink_far(p, h, i);
    }
}

/* Whether evicting the chunk would write it back, as far as the plan knows. */
static inline bool will_be_dirty(const eng_chunk_t *x)
{
    return (x->flags & (ENG_CHUNK_DIRTY | ENG_CHUNK_WPLAN)) != 0;
}

static inline eng_heap_t *heap_of(eng_placement_t *p, const eng_chunk_t *x)
{
    return &p->heap[((x->flags & ENG_CHUNK_HDEAD) ? 2 : 0) +
                    ((x->flags & ENG_CHUNK_HDIRTY) ? 1 : 0)];
}

/* The key of the chunk's entry in heap_of(p, x). */
static inline uint64_t entry_key(const eng_chunk_t *x)
{
    return (x->flags & ENG_CHUNK_HDEAD) ? ENG_POS_INF : heap_key(x->key);
}

static void lru_unlink(eng_placement_t *p, uint32_t c)
{
    eng_chunk_t *x = ch(p, c);
    if (p->skip_at == c) /* what preceded it still does */
        p->skip_at = x->lru_next;
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
    if (p->skip_valid && p->skip_at == ENG_NONE) /* the first chunk past the cursor */
        p->skip_at = c;
}

gmux_status_t eng_place_insert(eng_placement_t *p, uint32_t chunk)
{
    eng_chunk_t *x = ch(p, chunk);
    if (x->flags & ENG_CHUNK_RESIDENT)
        return GMUX_ERR_STATE;
    if (p->resident >= p->capacity)
        return GMUX_ERR_CAPACITY;
    if (p->policy == ENG_PLACE_OPT) {
        /* a fresh fill */
        x->flags &= ~(uint32_t)(ENG_CHUNK_WPLAN | ENG_CHUNK_HDIRTY | ENG_CHUNK_HDEAD);
        if (will_be_dirty(x))
            x->flags |= ENG_CHUNK_HDIRTY;
        gmux_status_t st = hpos_cover(p, chunk);
        if (st == GMUX_OK)
            st = heap_push(p, heap_of(p, x), chunk, entry_key(x));
        if (st != GMUX_OK)
            return st;
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
        heap_del(p, heap_of(p, x), chunk);
        x->flags &= ~(uint32_t)(ENG_CHUNK_HDIRTY | ENG_CHUNK_HDEAD);
    } else {
        lru_unlink(p, chunk);
    }
    x->flags &= ~(uint32_t)ENG_CHUNK_RESIDENT;
    p->resident--;
}

void eng_place_set_wb_costs(eng_placement_t *p, double fill_ns, double wb_ns, double slack_ns)
{
    p->fill_ns = fill_ns > 0.0 && wb_ns > 0.0 ? fill_ns : 0.0;
    p->wb_ns = wb_ns;
    p->slack_ns = slack_ns > 0.0 ? slack_ns : 0.0;
    p->backlog_ns = -p->slack_ns;
}

uint32_t eng_place_dirty_at(const eng_placement_t *p, uint32_t i)
{
    return p->policy == ENG_PLACE_OPT && i < p->heap[1].n ? p->heap[1].a[i].id : ENG_NONE;
}

uint32_t eng_place_dirty_find(const eng_placement_t *p, uint32_t from, uint32_t flags)
{
    const eng_heap_t *h = &p->heap[1];
    if (p->policy != ENG_PLACE_OPT || from >= h->n)
        return ENG_NONE;
    const eng_chunk_t *chunks = eng_regions_chunk(p->regs, 0);
    for (const eng_heap_ent_t *e = h->a + from, *end = h->a + h->n; e < end; e++)
        if ((chunks[e->id].flags & flags) == flags)
            return (uint32_t)(e - h->a);
    return ENG_NONE;
}

uint32_t eng_place_evict(eng_placement_t *p, uint64_t need_pos)
{
    uint32_t v = eng_place_victim(p, need_pos);
    if (v == ENG_NONE)
        return v;
    if (p->policy == ENG_PLACE_OPT && p->fill_ns > 0.0) {
        p->backlog_ns += ((ch(p, v)->flags & ENG_CHUNK_HDIRTY) ? p->wb_ns : 0.0) - p->fill_ns;
        if (p->backlog_ns < -p->slack_ns)
            p->backlog_ns = -p->slack_ns;
    }
    eng_place_remove(p, v);
    return v;
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

/* Moves a chunk in an OPT heap to the heap its new flags (HDIRTY, HDEAD)
 * name. Without the memory to grow that heap it stays where it was, under its
 * old flags (a push there cannot fail: the deletion freed its slot). */
static void heap_move(eng_placement_t *p, uint32_t chunk, uint32_t flags)
{
    eng_chunk_t *x = ch(p, chunk);
    uint32_t old = x->flags;
    heap_del(p, heap_of(p, x), chunk);
    x->flags = flags;
    if (heap_push(p, heap_of(p, x), chunk, entry_key(x)) != GMUX_OK) {
        x->flags = old;
        (void)heap_push(p, heap_of(p, x), chunk, entry_key(x));
    }
}

/* OPT: a chunk with no use left (its region freed in the plan) to its dead
 * heap, above those with none in the window. */
static void rank_dead(eng_placement_t *p, uint32_t chunk)
{
    eng_chunk_t *x = ch(p, chunk);
    if (heap_pos(p, chunk) == ENG_NONE || x->key != ENG_POS_INF || (x->flags & ENG_CHUNK_HDEAD))
        return;
    heap_move(p, chunk, x->flags | ENG_CHUNK_HDEAD);
}

void eng_place_expire(eng_placement_t *p, uint32_t chunk)
{
    eng_chunk_t *x = ch(p, chunk);
    if (!(x->flags & ENG_CHUNK_RESIDENT))
        return;
    if (p->policy == ENG_PLACE_OPT) {
        rank_dead(p, chunk);
        return;
    }
    /* LRU, FIFO: the least recent, the next victim */
    if (p->lru_head == chunk)
        return;
    lru_unlink(p, chunk);
    x->lru_prev = ENG_NONE;
    x->lru_next = p->lru_head;
    ch(p, p->lru_head)->lru_prev = chunk;
    p->lru_head = chunk;
    x->order = 0;
    p->skip_valid = false;
}

void eng_place_key_changed(eng_placement_t *p, uint32_t chunk)
{
    eng_chunk_t *x = ch(p, chunk);
    if (p->policy != ENG_PLACE_OPT) {
        /* a chunk behind the cursor that a search could now take */
        if (p->skip_valid && (x->flags & ENG_CHUNK_RESIDENT) && x->order < p->skip_order &&
            x->key > p->skip_need)
            p->skip_valid = false;
        return;
    }
    uint32_t i = heap_pos(p, chunk);
    if (i == ENG_NONE)
        return;
    /* written or cleaned: the other heap; a dead chunk stays dead while it
     * has no use */
    uint32_t flags = x->flags & ~(uint32_t)(ENG_CHUNK_HDIRTY | ENG_CHUNK_HDEAD);
    flags |= will_be_dirty(x) ? ENG_CHUNK_HDIRTY : 0;
    flags |= (x->flags & ENG_CHUNK_HDEAD) && x->key == ENG_POS_INF ? ENG_CHUNK_HDEAD : 0;
    if (flags != x->flags) {
        heap_move(p, chunk, flags);
        return;
    }
    /* a valid heap but for this entry: a rise can only move it up, a fall
     * only down (what sift_up then sift_down would do) */
    eng_heap_t *h = heap_of(p, x);
    uint64_t old = h->a[i].key, key = entry_key(x);
    h->a[i].key = key;
    if (key > old)
        sift_up(p, h, i);
    else if (key < old)
        sift_down(p, h, i);
}

uint32_t eng_place_victim(eng_placement_t *p, uint64_t need_pos)
{
    if (p->policy == ENG_PLACE_OPT) {
        /* the clean and the dirty chunk used farthest ahead: a dead one first */
        const eng_heap_t *hc = &p->heap[p->heap[2].n ? 2 : 0], *hd = &p->heap[p->heap[3].n ? 3 : 1];
        uint32_t c = hc->n && hc->a[0].key > need_pos ? hc->a[0].id : ENG_NONE;
        uint32_t d = hd->n && hd->a[0].key > need_pos ? hd->a[0].id : ENG_NONE;
        if (c == ENG_NONE || d == ENG_NONE)
            return c != ENG_NONE ? c : d;
        if (p->fill_ns <= 0.0)
            return above(hc->a[0], hd->a[0]) ? c : d; /* plain OPT: the farthest next use */
        uint64_t kc = hc->a[0].key, kd = hd->a[0].key;
        /* while the write-backs keep up, OPT (ties to the clean chunk);
         * once they lag, a dirty victim costs wb/fill times a refetch */
        double w = p->backlog_ns > 0.0 && p->wb_ns > p->fill_ns ? p->wb_ns / p->fill_ns : 1.0;
        for (uint64_t none = ENG_POS_INF; none >= ENG_POS_INF - 1; none--) {
            if (kc == none) /* dead (free planned), then no use in the window */
                return c;
            if (kd == none)
                return d;
        }
        return (double)(kc - need_pos) * w >= (double)(kd - need_pos) ? c : d;
    }
    /* The chunks a search skips (needed by need_pos) stay skipped for later
     * searches at need_pos or beyond until one's key is raised, so a run of
     * evictions for one launch walks past them once, not once each. */
    uint32_t c = p->lru_head;
    if (p->skip_valid && need_pos >= p->skip_need)
        c = p->skip_at;
    for (; c != ENG_NONE; c = ch(p, c)->lru_next) {
        p->scanned++;
        if (ch(p, c)->key > need_pos)
            break;
    }
    p->skip_valid = true;
    p->skip_need = need_pos;
    p->skip_at = c;
    p->skip_order = c != ENG_NONE ? ch(p, c)->order : p->stamp + 1;
    return c;
}

uint64_t eng_place_scanned(const eng_placement_t *p)
{
    return p->scanned;
}

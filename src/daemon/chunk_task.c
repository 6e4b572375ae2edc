/* One task's state in the chunk placement; see chunk_task.h. */
#include "daemon/chunk_task.h"

#include "daemon/chunk_victims.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* A range rounded out to chunks, as the reference rounds it. */
static void round_range(const dmn_ct_ctx_t *c, dmn_range_t r, uint64_t *lo, uint64_t *hi)
{
    uint64_t mask = c->chunk - 1, top = UINT64_MAX & ~mask;
    uint64_t end = r.base + r.len; /* no wrap (protocol) */
    *lo = r.base & ~mask;
    *hi = end > top ? top : (end + mask) & ~mask;
}

void dmn_ct_free(dmn_ct_task_t *t)
{
    dmn_runs_t *r[] = {&t->res, &t->ws, &t->fa, &t->out, &t->in, &t->bak};
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        dmn_runs_free(r[i]);
}

gmux_status_t dmn_ct_ws_prepare(dmn_ct_ctx_t *c, dmn_ct_task_t *t, const dmn_task_view_t *v)
{
    if (v->ranges_gen && t->ws_ok && t->gen == v->ranges_gen && t->n_ranges == v->n_ranges)
        return GMUX_OK;
    t->ws_ok = t->xl_ok = 0;
    gmux_status_t st = dmn_runs_reserve(&c->tmp, v->n_ranges);
    if (st != GMUX_OK)
        return st;
    uint64_t pos = 0;
    c->tmp.n = 0;
    for (uint32_t i = 0; i < v->n_ranges; i++) { /* non-empty ones, wrank = position */
        dmn_seg_t s = {0, 0, 0, pos, 0};
        round_range(c, v->ranges[i], &s.lo, &s.hi);
        if (s.hi <= s.lo)
            continue;
        s.wlo = s.lo;
        c->tmp.v[c->tmp.n++] = s;
        pos = sat_add(pos, (s.hi - s.lo) >> c->shift);
    }
    st = dmn_runs_first_cover(&c->tmp, c->chunk, &t->fa, &c->scratch);
    t->ws_chunks = dmn_runs_chunks(&t->fa, c->shift, &t->fa_sorted);
    for (size_t i = 0; i < c->tmp.n; i++) /* the reference's ranks stop at DMN_CV_RANK_MAX */
        c->tmp.v[i].wrank =
            c->tmp.v[i].wrank > DMN_CV_RANK_MAX ? DMN_CV_RANK_MAX : c->tmp.v[i].wrank;
    if (st == GMUX_OK)
        st = dmn_runs_sort(c->tmp.v, c->tmp.n, &c->scratch);
    if (st == GMUX_OK)
        st = dmn_runs_merge_ranked(&c->tmp, &t->ws);
    if (st == GMUX_OK) {
        t->gen = v->ranges_gen;
        t->n_ranges = v->n_ranges;
        t->ws_ok = 1;
    }
    return st;
}

gmux_status_t dmn_ct_cut(dmn_ct_ctx_t *c, dmn_ct_task_t *t)
{
    const dmn_seg_t *w = t->ws.v;
    size_t nw = t->ws.n, j = 0;
    gmux_status_t st = GMUX_OK;
    t->out.n = t->in.n = 0;
    t->out_chunks = 0;
    for (size_t i = 0; i < t->res.n && st == GMUX_OK; i++) {
        uint64_t a = t->res.v[i].lo, b = t->res.v[i].hi;
        while (a < b && st == GMUX_OK) {
            while (j < nw && w[j].hi <= a)
                j++;
            if (j == nw || w[j].lo >= b || w[j].lo > a) {
                uint64_t e = (j == nw || w[j].lo >= b) ? b : w[j].lo;
                st = dmn_runs_push(&t->out, (dmn_seg_t){a, e, 0, DMN_RUNS_NONE, 0});
                t->out_chunks += (e - a) >> c->shift;
                a = e;
                continue;
            }
            uint64_t e = b < w[j].hi ? b : w[j].hi;
            dmn_seg_t s = {a, e, w[j].lo, w[j].wrank, 0};
            s.key = dmn_cv_rank(&s, e - c->chunk, c->shift);
            st = dmn_runs_push(&t->in, s);
            a = e;
        }
    }
    if (st == GMUX_OK)
        st = dmn_runs_sort(t->in.v, t->in.n, &c->scratch);
    t->xl_ok = st == GMUX_OK;
    return st;
}

gmux_status_t dmn_ct_in_add_fills(dmn_ct_ctx_t *c, dmn_ct_task_t *t, size_t m)
{
    size_t n0 = t->in.n, j = m ? dmn_runs_find(&t->ws, c->want.v[0].lo) : 0;
    gmux_status_t st = dmn_runs_reserve(&t->in, n0 + m);
    int sorted = 1; /* the runs stay in (key, lo) order as they come */
    for (size_t i = 0; i < m && st == GMUX_OK; i++) {
        dmn_seg_t s = c->want.v[i];
        while (j < t->ws.n && t->ws.v[j].hi <= s.lo)
            j++;
        if (j == t->ws.n || t->ws.v[j].lo > s.lo || t->ws.v[j].hi < s.hi)
            return GMUX_ERR_INVALID; /* not inside one interval: cannot be */
        s.wlo = t->ws.v[j].lo;
        s.wrank = t->ws.v[j].wrank;
        s.key = dmn_cv_rank(&s, s.hi - c->chunk, c->shift);
        if (t->in.n) {
            const dmn_seg_t *p = &t->in.v[t->in.n - 1];
            sorted = sorted && (p->key != s.key ? p->key < s.key : p->lo < s.lo);
        }
        t->in.v[t->in.n++] = s;
    }
    if (st == GMUX_OK && t->in.n > 2 * (t->res.n + t->ws.n) + 16)
        st = GMUX_ERR_CAPACITY;
    if (st == GMUX_OK && n0 < t->in.n && !sorted)
        st = dmn_runs_sort(t->in.v, t->in.n, &c->scratch);
    return st;
}

gmux_status_t dmn_ct_want(dmn_ct_ctx_t *c, const dmn_ct_task_t *t, uint64_t cap, uint64_t *n_out)
{
    uint64_t limit = cap + t->chunks, n = 0;
    gmux_status_t st = GMUX_OK;
    size_t j = 0;
    c->want.n = 0;
    if (t->xl_ok && t->chunks - t->out_chunks == t->ws_chunks) { /* all of it resident */
        *n_out = 0;
        return GMUX_OK;
    }
    if (t->res.n == 0) { /* nothing resident: the first uses as they are */
        st = dmn_runs_reserve(&c->want, t->fa.n);
        for (size_t i = 0; i < t->fa.n && n < cap && st == GMUX_OK; i++) {
            const dmn_seg_t *f = &t->fa.v[i];
            if (f->key >= limit)
                break;
            uint64_t k = (f->hi - f->lo) >> c->shift;
            k = k > limit - f->key ? limit - f->key : k;
            k = k > cap - n ? cap - n : k;
            c->want.v[c->want.n++] = (dmn_seg_t){f->lo, f->lo + (k << c->shift), 0, 0, 0};
            n += k;
        }
        *n_out = n;
        return st;
    }
    for (size_t i = 0; i < t->fa.n && n < cap && st == GMUX_OK; i++) {
        const dmn_seg_t *f = &t->fa.v[i];
        if (f->key >= limit)
            break;
        uint64_t a = f->lo, hi = f->hi;
        if ((hi - a) >> c->shift > limit - f->key)
            hi = a + (limit - f->key) * c->chunk;
        if (!t->fa_sorted) /* in address order, one pass over res serves them all */
            j = dmn_runs_find(&t->res, a);
        while (a < hi && n < cap && st == GMUX_OK) {
            while (j < t->res.n && t->res.v[j].hi <= a)
                j++;
            uint64_t e = hi;
            if (j < t->res.n && t->res.v[j].lo <= a) { /* resident: skip it */
                a = t->res.v[j].hi;
                continue;
            }
            if (j < t->res.n && t->res.v[j].lo < e)
                e = t->res.v[j].lo;
            uint64_t k = (e - a) >> c->shift;
            if (k > cap - n)
                e = a + (cap - n) * c->chunk, k = cap - n;
            st = dmn_runs_push(&c->want, (dmn_seg_t){a, e, 0, 0, 0});
            n += k;
            a = e;
        }
    }
    *n_out = n;
    return st;
}

void dmn_ct_ctx_fini(dmn_ct_ctx_t *c)
{
    dmn_runs_free(&c->want);
    dmn_runs_free(&c->tmp);
    dmn_runs_free(&c->scratch);
}

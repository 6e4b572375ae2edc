/* Runs of chunks; see chunk_runs.h. */
#include "daemon/chunk_runs.h"
#include "common/array.h"
#include "daemon/place_alloc.h"

#include <stdlib.h>
#include <string.h>

gmux_status_t dmn_runs_reserve(dmn_runs_t *r, size_t n)
{
    if (n > r->cap && dmn_place_alloc_fails())
        return GMUX_ERR_NOMEM;
    return com_array_grow((void **)&r->v, &r->cap, n, sizeof(*r->v), 16, SIZE_MAX);
}

void dmn_runs_free(dmn_runs_t *r)
{
    free(r->v);
    memset(r, 0, sizeof(*r));
}

static int seg_less(const dmn_seg_t *a, const dmn_seg_t *b)
{
    return a->key != b->key ? a->key < b->key : a->lo < b->lo;
}

static void reverse(dmn_seg_t *v, size_t n)
{
    for (size_t a = 0, b = n ? n - 1 : 0; a < b; a++, b--) {
        dmn_seg_t t = v[a];
        v[a] = v[b];
        v[b] = t;
    }
}

static void merge(const dmn_seg_t *src, size_t lo, size_t mid, size_t hi, dmn_seg_t *dst)
{
    size_t a = lo, b = mid, o = lo;
    while (a < mid && b < hi)
        dst[o++] = seg_less(&src[b], &src[a]) ? src[b++] : src[a++];
    while (a < mid)
        dst[o++] = src[a++];
    while (b < hi)
        dst[o++] = src[b++];
}

#define RUNS_NATURAL 64 /* up to this many ordered stretches: merged as they are */

gmux_status_t dmn_runs_sort(dmn_seg_t *v, size_t n, dmn_runs_t *scratch)
{
    /* Natural runs first (a stretch in reverse order is reversed): input that
     * is in order, reversed, or a few such stretches costs O(n). */
    size_t bound[RUNS_NATURAL + 1], nb = 0;
    bound[nb++] = 0;
    for (size_t i = 0; i < n && nb <= RUNS_NATURAL;) {
        size_t j = i + 1;
        if (j < n && seg_less(&v[j], &v[j - 1])) {
            while (j < n && seg_less(&v[j], &v[j - 1]))
                j++;
            reverse(&v[i], j - i);
        } else {
            while (j < n && !seg_less(&v[j], &v[j - 1]))
                j++;
        }
        if (nb <= RUNS_NATURAL)
            bound[nb++] = j;
        i = j;
    }
    if (nb <= 2)
        return GMUX_OK;
    gmux_status_t st = dmn_runs_reserve(scratch, n);
    if (st != GMUX_OK)
        return st;
    dmn_seg_t *src = v, *dst = scratch->v;
    if (bound[nb - 1] == n) { /* merge the stretches pairwise */
        while (nb > 2) {
            size_t k = 0, i;
            for (i = 0; i + 2 < nb; i += 2) {
                merge(src, bound[i], bound[i + 1], bound[i + 2], dst);
                bound[k++] = bound[i];
            }
            if (i + 1 < nb) { /* an odd one out: copied as it is */
                memcpy(&dst[bound[i]], &src[bound[i]], (bound[i + 1] - bound[i]) * sizeof(*v));
                bound[k++] = bound[i];
            }
            bound[k++] = n;
            nb = k;
            dmn_seg_t *t = src;
            src = dst;
            dst = t;
        }
    } else { /* too many stretches: bottom-up merge sort, stable */
        for (size_t w = 1; w < n; w *= 2) {
            for (size_t lo = 0; lo < n; lo += 2 * w)
                merge(src, lo, lo + w < n ? lo + w : n, lo + 2 * w < n ? lo + 2 * w : n, dst);
            dmn_seg_t *t = src;
            src = dst;
            dst = t;
        }
    }
    if (src != v)
        memcpy(v, src, n * sizeof(*v));
    return GMUX_OK;
}

size_t dmn_runs_find(const dmn_runs_t *r, uint64_t addr)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void swap_runs(dmn_runs_t *a, dmn_runs_t *b)
{
    dmn_runs_t t = *a;
    *a = *b;
    *b = t;
}

gmux_status_t dmn_runs_subtract(dmn_runs_t *r, const dmn_seg_t *v, size_t nv, dmn_runs_t *scratch)
{
    if (nv == 0)
        return GMUX_OK;
    /* The runs below the first of v stay as they are: only the rest is
     * rewritten, through scratch. */
    size_t i0 = dmn_runs_find(r, v[0].lo);
    gmux_status_t st = dmn_runs_reserve(scratch, r->n - i0 + nv);
    if (st != GMUX_OK)
        return st;
    size_t n = 0, j = 0;
    for (size_t i = i0; i < r->n; i++) {
        uint64_t cur = r->v[i].lo, end = r->v[i].hi;
        while (j < nv && v[j].hi <= cur)
            j++;
        for (size_t k = j; k < nv && v[k].lo < end; k++) {
            if (v[k].lo > cur)
                scratch->v[n++] = (dmn_seg_t){cur, v[k].lo, 0, DMN_RUNS_NONE, 0};
            cur = v[k].hi > cur ? v[k].hi : cur;
        }
        if (cur < end)
            scratch->v[n++] = (dmn_seg_t){cur, end, 0, DMN_RUNS_NONE, 0};
    }
    st = dmn_runs_reserve(r, i0 + n);
    if (st != GMUX_OK)
        return st;
    memcpy(&r->v[i0], scratch->v, n * sizeof(*r->v));
    r->n = i0 + n;
    return GMUX_OK;
}

gmux_status_t dmn_runs_union(dmn_runs_t *r, const dmn_seg_t *v, size_t nv, dmn_runs_t *scratch)
{
    gmux_status_t st = dmn_runs_reserve(scratch, r->n + nv);
    if (st != GMUX_OK)
        return st;
    size_t n = 0, i = 0, j = 0;
    while (i < r->n || j < nv) {
        const dmn_seg_t *x =
            (j >= nv || (i < r->n && r->v[i].lo <= v[j].lo)) ? &r->v[i++] : &v[j++];
        if (n && x->lo <= scratch->v[n - 1].hi) {
            if (x->hi > scratch->v[n - 1].hi)
                scratch->v[n - 1].hi = x->hi;
            continue;
        }
        scratch->v[n++] = (dmn_seg_t){x->lo, x->hi, 0, DMN_RUNS_NONE, 0};
    }
    scratch->n = n;
    swap_runs(r, scratch);
    return GMUX_OK;
}

uint64_t dmn_runs_chunks(const dmn_runs_t *r, unsigned shift, int *addr_order)
{
    uint64_t n = 0;
    *addr_order = 1;
    for (size_t i = 0; i < r->n; i++) {
        n += (r->v[i].hi - r->v[i].lo) >> shift;
        if (i > 0 && r->v[i - 1].hi > r->v[i].lo)
            *addr_order = 0;
    }
    return n;
}

gmux_status_t dmn_runs_merge_ranked(const dmn_runs_t *in, dmn_runs_t *out)
{
    gmux_status_t st = GMUX_OK;
    out->n = 0;
    for (size_t i = 0; i < in->n && st == GMUX_OK; i++) {
        const dmn_seg_t *s = &in->v[i];
        dmn_seg_t *last = out->n ? &out->v[out->n - 1] : NULL;
        if (last && s->lo <= last->hi) {
            last->hi = s->hi > last->hi ? s->hi : last->hi;
            last->wrank = s->wrank < last->wrank ? s->wrank : last->wrank;
            continue;
        }
        st = dmn_runs_push(out, *s);
    }
    return st;
}

size_t dmn_runs_keep(dmn_runs_t *r, uint64_t n, unsigned shift)
{
    size_t m = 0;
    for (uint64_t left = n; left > 0; m++) {
        dmn_seg_t *w = &r->v[m];
        uint64_t k = (w->hi - w->lo) >> shift;
        if (k > left)
            w->hi = w->lo + (left << shift), k = left;
        left -= k;
    }
    r->n = m;
    return m;
}

gmux_status_t dmn_runs_fill_ranked(const dmn_runs_t *fa, unsigned shift, uint64_t rank_max,
                                   dmn_runs_t *res, dmn_runs_t *in, dmn_runs_t *scratch)
{
    gmux_status_t st = dmn_runs_reserve(res, fa->n);
    if (st == GMUX_OK)
        st = dmn_runs_reserve(in, fa->n);
    if (st != GMUX_OK)
        return st;
    int sorted = 1;
    res->n = in->n = 0;
    for (size_t i = 0; i < fa->n; i++) {
        const dmn_seg_t *f = &fa->v[i];
        uint64_t w = f->key > rank_max ? rank_max : f->key;
        uint64_t top = w + (((f->hi - f->lo) >> shift) - 1);
        dmn_seg_t s = {f->lo, f->hi, f->lo, w, top < w || top > rank_max ? rank_max : top};
        dmn_runs_put_joined(res, f->lo, f->hi);
        if (in->n) {
            const dmn_seg_t *p = &in->v[in->n - 1];
            sorted = sorted && (p->key != s.key ? p->key < s.key : p->lo < s.lo);
        }
        in->v[in->n++] = s;
    }
    return sorted ? GMUX_OK : dmn_runs_sort(in->v, in->n, scratch);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t lower_bound(const uint64_t *p, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t dsu_find(size_t *parent, size_t e)
{
    while (parent[e] != e) {
        parent[e] = parent[parent[e]];
        e = parent[e];
    }
    return e;
}

/* Overlapping ranges: paints the elementary intervals between endpoints,
 * each with the first range that covers it (a union-find skips the painted
 * ones), then orders the pieces by position. */
static gmux_status_t paint(const dmn_runs_t *in, uint64_t chunk, dmn_runs_t *out,
                           dmn_runs_t *scratch)
{
    size_t n = in->n, m = 0;
    uint64_t *pts = malloc(2 * n * sizeof(*pts));
    size_t *parent = malloc(2 * n * sizeof(*parent)), *owner = malloc(2 * n * sizeof(*owner));
    gmux_status_t st =
        pts && parent && owner && !dmn_place_alloc_fails() ? GMUX_OK : GMUX_ERR_NOMEM;
    if (st != GMUX_OK)
        goto free_arrays;
    for (size_t i = 0; i < n; i++)
        pts[2 * i] = in->v[i].lo, pts[2 * i + 1] = in->v[i].hi;
    qsort(pts, 2 * n, sizeof(*pts), u64_cmp);
    for (size_t i = 0; i < 2 * n; i++)
        if (m == 0 || pts[m - 1] != pts[i])
            pts[m++] = pts[i];
    for (size_t e = 0; e < m; e++)
        parent[e] = e, owner[e] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t e1 = lower_bound(pts, m, in->v[i].hi);
        for (size_t e = dsu_find(parent, lower_bound(pts, m, in->v[i].lo)); e < e1;
             e = dsu_find(parent, e + 1)) {
            owner[e] = i;
            parent[e] = e + 1;
        }
    }
    out->n = 0;
    for (size_t e = 0; e + 1 < m && st == GMUX_OK; e++) {
        if (owner[e] == SIZE_MAX)
            continue;
        const dmn_seg_t *r = &in->v[owner[e]];
        uint64_t pos = r->wrank + (pts[e] - r->lo) / chunk;
        st = dmn_runs_push(
            out, (dmn_seg_t){pts[e], pts[e + 1], 0, 0, pos < r->wrank ? UINT64_MAX : pos});
    }
    if (st == GMUX_OK)
        st = dmn_runs_sort(out->v, out->n, scratch);
free_arrays:
    free(pts);
    free(parent);
    free(owner);
    return st;
}

gmux_status_t dmn_runs_first_cover(const dmn_runs_t *in, uint64_t chunk, dmn_runs_t *out,
                                   dmn_runs_t *scratch)
{
    gmux_status_t st = dmn_runs_reserve(out, in->n);
    if (st != GMUX_OK)
        return st;
    for (size_t i = 0; i < in->n; i++) {
        out->v[i] = in->v[i];
        out->v[i].key = 0;
    }
    out->n = in->n;
    st = dmn_runs_sort(out->v, out->n, scratch);
    int disjoint = 1;
    for (size_t i = 1; i < out->n && disjoint; i++)
        disjoint = out->v[i - 1].hi <= out->v[i].lo;
    if (st != GMUX_OK || !disjoint)
        return st != GMUX_OK ? st : paint(in, chunk, out, scratch);
    for (size_t i = 0; i < in->n; i++) { /* each chunk is used once: in order of use */
        out->v[i] = in->v[i];
        out->v[i].key = in->v[i].wrank;
    }
    return GMUX_OK;
}

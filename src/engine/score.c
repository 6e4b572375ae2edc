/*
 * Interval arithmetic for scoring predictions. See score.h.
 */
#include "engine/score.h"
#include "common/array.h"

#include <stdlib.h>
#include <string.h>

struct ival {
    uint64_t lo, hi; /* [lo, hi) */
};

struct eng_scorer {
    struct ival *a, *b;
    size_t acap, bcap;
};

gmux_status_t eng_scorer_create(eng_scorer_t **s_p)
{
    eng_scorer_t *s = calloc(1, sizeof(*s));
    if (!s)
        return GMUX_ERR_NOMEM;
    *s_p = s;
    return GMUX_OK;
}

void eng_scorer_destroy(eng_scorer_t *s)
{
    if (!s)
        return;
    free(s->a);
    free(s->b);
    free(s);
}

static gmux_status_t reserve(struct ival **v, size_t *cap, size_t need)
{
    return com_array_grow((void **)v, cap, need, sizeof(**v), 256, SIZE_MAX);
}

static int cmp_ival(const void *x, const void *y)
{
    const struct ival *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Sorts and merges overlapping or adjacent intervals; returns the count and their bytes. */
static size_t merge(struct ival *v, size_t n, uint64_t *bytes)
{
    size_t out = 0;
    *bytes = 0;
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_ival);
    for (size_t i = 1; i < n; i++) {
        if (v[i].lo <= v[out].hi) {
            if (v[i].hi > v[out].hi)
                v[out].hi = v[i].hi;
        } else {
            v[++out] = v[i];
        }
    }
    for (size_t i = 0; i <= out; i++)
        *bytes += v[i].hi - v[i].lo;
    return out + 1;
}

/* End of [addr, addr+len) clamped to the address space. */
static uint64_t end_of(uint64_t addr, uint64_t len)
{
    return len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
}

gmux_status_t eng_score_launch(eng_scorer_t *s, const eng_span_t *pred, size_t npred,
                               const eng_range_t *touched, size_t ntouched, eng_score_t *acc)
{
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < npred; i++) {
        eng_span_t c = pred[i];
        if (c.count > ENG_SPAN_MAX_PIECES)
            eng_span_cover(&c); /* bounded, as the predictor's own spans are */
        const eng_span_t *p = &c;
        if (p->len == 0 || p->count == 0)
            continue;
        if (p->count > SIZE_MAX / 2 - na || reserve(&s->a, &s->acap, na + p->count) != GMUX_OK)
            return GMUX_ERR_NOMEM;
        for (uint64_t k = 0; k < p->count; k++) {
            uint64_t lo = p->addr + k * (p->count > 1 ? p->stride : 0);
            s->a[na++] = (struct ival){lo, end_of(lo, p->len)};
        }
    }
    if (reserve(&s->b, &s->bcap, ntouched) != GMUX_OK)
        return GMUX_ERR_NOMEM;
    for (size_t i = 0; i < ntouched; i++)
        if (touched[i].len)
            s->b[nb++] = (struct ival){touched[i].addr, end_of(touched[i].addr, touched[i].len)};
    uint64_t pbytes, tbytes, hit = 0;
    na = merge(s->a, na, &pbytes);
    nb = merge(s->b, nb, &tbytes);
    for (size_t i = 0, j = 0; i < na && j < nb;) {
        uint64_t lo = s->a[i].lo > s->b[j].lo ? s->a[i].lo : s->b[j].lo;
        uint64_t hi = s->a[i].hi < s->b[j].hi ? s->a[i].hi : s->b[j].hi;
        if (lo < hi)
            hit += hi - lo;
        if (s->a[i].hi < s->b[j].hi)
            i++;
        else
            j++;
    }
    acc->predicted += pbytes;
    acc->touched += tbytes;
    acc->hit += hit;
    return GMUX_OK;
}

double eng_score_precision(const eng_score_t *sc)
{
    return sc->predicted ? (double)sc->hit / (double)sc->predicted : 1.0;
}

double eng_score_recall(const eng_score_t *sc)
{
    return sc->touched ? (double)sc->hit / (double)sc->touched : 1.0;
}

void eng_score_add(eng_score_t *a, const eng_score_t *b)
{
    a->predicted += b->predicted;
    a->touched += b->touched;
    a->hit += b->hit;
}

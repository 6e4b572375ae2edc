/* Streams: continuation prediction of slice-by-slice arguments. See stream.h. */
#include "engine/stream.h"
#include "common/array.h"
#include "engine/ranges.h"

#include <stdlib.h>
#include <string.h>

#define STRM_PROBES        8   /* slots a key may take, from the one it hashes to */
#define STRM_CLASS_SLOTS   256 /* (kernel, argument) pairs that can be stream classes */
#define STRM_CLASS_MIN_OWN (ENG_STREAM_LENS / 2) /* own lengths before the class's are ignored */

typedef struct strm {
    bool used, has_last, inherited;
    uint8_t state, misses, mode, nlens, lens_head;
    uint32_t ctx, kernel, arg;
    uint64_t ptr, hash, tick;
    uint64_t last_lo, last_hi; /* the last slice */
    uint64_t origin;           /* first slice of this run of continuations */
    uint64_t steps;            /* continuations since the origin */
    uint32_t seen;             /* launches observed */
    uint64_t sweep_end;        /* where the last sweep ended before a restart (0: unknown) */
    uint64_t lens[ENG_STREAM_LENS];
} strm_t;

typedef struct strm_class {
    bool used, trusted, given_up;
    uint8_t misses, nlens, lens_head;
    uint32_t kernel, arg;
    uint64_t lens[ENG_STREAM_LENS];
} strm_class_t;

struct eng_stream {
    strm_t *slots;
    uint32_t mask;
    uint64_t tick;
    strm_class_t classes[STRM_CLASS_SLOTS];
    eng_stream_stats_t st;
    eng_range_t *tmp;
    size_t tmp_cap;
};

gmux_status_t eng_stream_create(uint32_t slots, eng_stream_t **s_p)
{
    uint32_t n = 64;
    while (n < slots && n < (1u << 24))
        n *= 2;
    eng_stream_t *s = calloc(1, sizeof(*s));
    if (!s)
        return GMUX_ERR_NOMEM;
    s->slots = calloc(n, sizeof(*s->slots));
    if (!s->slots) {
        free(s);
        return GMUX_ERR_NOMEM;
    }
    s->mask = n - 1;
    *s_p = s;
    return GMUX_OK;
}

void eng_stream_destroy(eng_stream_t *s)
{
    if (!s)
        return;
    free(s->slots);
    free(s->tmp);
    free(s);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t key_hash(uint32_t ctx, uint32_t kernel, uint32_t arg, uint64_t ptr)
{
    return mix(mix(mix(mix(0xcbf29ce484222325ull, ctx), kernel), arg), ptr);
}

static bool key_equal(const strm_t *e, uint64_t hash, uint32_t ctx, uint32_t kernel, uint32_t arg,
                      uint64_t ptr)
{
    return e->used && e->hash == hash && e->ctx == ctx && e->kernel == kernel && e->arg == arg &&
           e->ptr == ptr;
}

static const strm_t *find(const eng_stream_t *s, uint32_t ctx, uint32_t kernel, uint32_t arg,
                          uint64_t ptr)
{
    uint64_t h = key_hash(ctx, kernel, arg, ptr);
    for (uint32_t i = 0; i < STRM_PROBES; i++) {
        const strm_t *e = &s->slots[(h + i) & s->mask];
        if (key_equal(e, h, ctx, kernel, arg, ptr))
            return e;
    }
    return NULL;
}

/* A slot for a new key: a free one in its window, else the oldest untrusted, else the oldest. */
static strm_t *claim(eng_stream_t *s, uint64_t h)
{
    strm_t *best = NULL;
    for (uint32_t i = 0; i < STRM_PROBES; i++) {
        strm_t *e = &s->slots[(h + i) & s->mask];
        if (!e->used)
            return e;
        bool e_cheap = e->state != ENG_STREAM_TRUSTED;
        bool b_cheap = best && best->state != ENG_STREAM_TRUSTED;
        if (!best || (e_cheap && !b_cheap) || (e_cheap == b_cheap && e->tick < best->tick))
            best = e;
    }
    return best;
}

static const strm_class_t *class_find(const eng_stream_t *s, uint32_t kernel, uint32_t arg)
{
    uint64_t h = mix(mix(0x84222325cbf29ce4ull, kernel), arg);
    for (uint32_t i = 0; i < STRM_PROBES; i++) {
        const strm_class_t *c = &s->classes[(h + i) % STRM_CLASS_SLOTS];
        if (c->used && c->kernel == kernel && c->arg == arg)
            return c;
    }
    return NULL;
}

/* The class of (kernel, arg), created if there is room; NULL if none. */
static strm_class_t *class_get(eng_stream_t *s, uint32_t kernel, uint32_t arg)
{
    strm_class_t *c = (strm_class_t *)class_find(s, kernel, arg);
    if (c)
        return c;
    uint64_t h = mix(mix(0x84222325cbf29ce4ull, kernel), arg);
    for (uint32_t i = 0; i < STRM_PROBES; i++) {
        c = &s->classes[(h + i) % STRM_CLASS_SLOTS];
        if (!c->used) {
            *c = (strm_class_t){.used = true, .kernel = kernel, .arg = arg};
            return c;
        }
    }
    return NULL;
}

static bool class_lends(const strm_class_t *c)
{
    return c && c->trusted && !c->given_up;
}

static void push_len(uint64_t *lens, uint8_t *nlens, uint8_t *head, uint64_t len)
{
    lens[*head] = len;
    *head = (uint8_t)((*head + 1) % ENG_STREAM_LENS);
    if (*nlens < ENG_STREAM_LENS)
        (*nlens)++;
}

static uint64_t max_len(const uint64_t *lens, uint8_t n)
{
    uint64_t m = 0;
    for (uint8_t i = 0; i < n; i++)
        m = lens[i] > m ? lens[i] : m;
    return m;
}

/*
 * Where the bytes of argument arg of l may lie: [ptr, bound), bound being
 * its region's end or the next pointer argument into that region. false if
 * the pointer is null or in no region.
 */
static bool arg_window(const eng_launch_t *l, uint32_t arg, const eng_region_lookup_t *rl,
                       uint64_t *bound_p)
{
    uint64_t v = l->args[arg].value, base, size;
    if (v == 0 || !rl->find(rl->ctx, v, &base, &size))
        return false;
    uint64_t bound = base + size;
    for (uint32_t j = 0; j < l->nargs; j++) {
        uint64_t w = l->args[j].value;
        if (l->args[j].kind == ENG_ARG_PTR && w > v && w < bound)
            bound = w;
    }
    *bound_p = bound;
    return true;
}

/*
 * What stream e (NULL: none kept yet) of class c predicts for a launch whose
 * argument points at ptr, bytes limited to [ptr, bound): [*lo, *lo + *len).
 */
static bool predict_entry(const strm_t *e, const strm_class_t *c, uint64_t ptr, uint64_t bound,
                          uint64_t *lo, uint64_t *len)
{
    uint64_t start, want;
    if (!e) {
        if (!class_lends(c))
            return false;
        start = ptr;
        want = max_len(c->lens, c->nlens);
    } else {
        if (e->state != ENG_STREAM_TRUSTED || !e->has_last)
            return false;
        start = e->sweep_end && e->last_hi == e->sweep_end ? e->origin : e->last_hi;
        want = max_len(e->lens, e->nlens);
        if (e->nlens < STRM_CLASS_MIN_OWN && class_lends(c)) {
            uint64_t m = max_len(c->lens, c->nlens);
            want = m > want ? m : want;
        }
    }
    if (start < ptr || start >= bound || want == 0)
        return false;
    *lo = start;
    *len = bound - start < want ? bound - start : want;
    return true;
}

bool eng_stream_predict(const eng_stream_t *s, uint32_t ctx, const eng_launch_t *l, uint32_t arg,
                        const eng_region_lookup_t *rl, eng_range_t *out)
{
    uint64_t bound, lo, len;
    if (arg >= l->nargs || l->args[arg].kind != ENG_ARG_PTR || !arg_window(l, arg, rl, &bound))
        return false;
    uint64_t ptr = l->args[arg].value;
    const strm_t *e = find(s, ctx, l->kernel, arg, ptr);
    if (!predict_entry(e, class_find(s, l->kernel, arg), ptr, bound, &lo, &len))
        return false;
    *out = (eng_range_t){lo, len, e ? e->mode : (uint8_t)ENG_ACCESS_READ};
    return true;
}

bool eng_stream_learning(const eng_stream_t *s, uint32_t ctx, const eng_launch_t *l, uint32_t arg)
{
    if (arg >= l->nargs)
        return false;
    const strm_t *e = find(s, ctx, l->kernel, arg, l->args[arg].value);
    return !e || ((e->state == ENG_STREAM_LEARNING || e->state == ENG_STREAM_CANDIDATE) &&
                  e->seen < ENG_STREAM_LEARN_LAUNCHES);
}

eng_stream_state_t eng_stream_state(const eng_stream_t *s, uint32_t ctx, const eng_launch_t *l,
                                    uint32_t arg)
{
    if (arg >= l->nargs)
        return ENG_STREAM_LEARNING;
    const strm_t *e = find(s, ctx, l->kernel, arg, l->args[arg].value);
    return e ? (eng_stream_state_t)e->state : ENG_STREAM_LEARNING;
}

void eng_stream_stats(const eng_stream_t *s, eng_stream_stats_t *st)
{
    *st = s->st;
    st->classes = 0;
    for (uint32_t i = 0; i < STRM_CLASS_SLOTS; i++)
        st->classes += class_lends(&s->classes[i]);
}

/* The one contiguous piece of r (normalised) inside [lo, hi); false if none or several. */
static bool slice_of(const eng_range_t *r, size_t n, uint64_t lo, uint64_t hi, eng_range_t *slice)
{
    size_t a = 0, b = n;
    while (a < b) { /* first range ending after lo */
        size_t m = a + (b - a) / 2;
        if (r[m].addr + r[m].len > lo)
            b = m;
        else
            a = m + 1;
    }
    if (a == n || r[a].addr >= hi)
        return false;
    if (a + 1 < n && r[a + 1].addr < hi)
        return false;
    uint64_t s = r[a].addr > lo ? r[a].addr : lo, e = r[a].addr + r[a].len;
    *slice = (eng_range_t){s, (e < hi ? e : hi) - s, r[a].mode};
    return true;
}

static void give_up(eng_stream_t *s, strm_t *e)
{
    e->state = ENG_STREAM_FALLBACK;
    s->st.given_up++;
}

/* A continuation the stream (or its class) promised did not happen. */
static void class_miss(eng_stream_t *s, strm_class_t *c)
{
    if (class_lends(c) && ++c->misses >= ENG_STREAM_MAX_MISSES) {
        c->given_up = true;
        s->st.given_up++;
    }
}

static void miss(eng_stream_t *s, strm_t *e, strm_class_t *c)
{
    if (e->inherited)
        class_miss(s, c);
    e->inherited = false;
    if (++e->misses >= ENG_STREAM_MAX_MISSES)
        give_up(s, e);
}

/* The first slice of a stream: trusted at once where its class predicted it. */
static void start(eng_stream_t *s, strm_t *e, strm_class_t *c, const eng_range_t *sl, bool pred,
                  uint64_t plo)
{
    e->state = ENG_STREAM_LEARNING;
    if (pred && sl->addr == plo) {
        e->state = ENG_STREAM_TRUSTED;
        e->inherited = true;
        s->st.hits++;
    } else if (pred) {
        s->st.misses++;
        class_miss(s, c);
    }
    e->has_last = true;
    e->origin = sl->addr;
    e->steps = 0;
    e->sweep_end = 0;
}

/* Learns one argument's slice (sl NULL: no single slice) against the stream's prediction. */
static void learn(eng_stream_t *s, uint32_t ctx, uint32_t kernel, uint32_t arg, uint64_t ptr,
                  uint64_t bound, const eng_range_t *sl)
{
    uint64_t h = key_hash(ctx, kernel, arg, ptr);
    strm_t *e = (strm_t *)find(s, ctx, kernel, arg, ptr);
    strm_class_t *c = (strm_class_t *)class_find(s, kernel, arg);
    uint64_t plo = 0, plen = 0;
    bool pred = predict_entry(e, c, ptr, bound, &plo, &plen);
    if (sl)
        s->st.slices++;
    if (pred) { /* score the prediction the launch was given */
        s->st.pred_bytes += plen;
        if (sl) {
            uint64_t lo = sl->addr > plo ? sl->addr : plo;
            uint64_t se = sl->addr + sl->len, pe = plo + plen, hi = se < pe ? se : pe;
            s->st.hit_bytes += hi > lo ? hi - lo : 0;
            s->st.slice_bytes += sl->len;
        }
    }
    if (e && e->seen < UINT32_MAX)
        e->seen++;
    if (!e) {
        e = claim(s, h);
        *e =
            (strm_t){.used = true, .ctx = ctx, .kernel = kernel, .arg = arg, .ptr = ptr, .hash = h};
        e->seen = 1;
        e->tick = ++s->tick;
        if (!sl) {      /* kept, so that its launches count towards ENG_STREAM_LEARN_LAUNCHES */
            if (pred) { /* the class predicted a slice that did not come */
                s->st.misses++;
                class_miss(s, c);
            }
            return;
        }
        start(s, e, c, sl, pred, plo);
    } else if (e->state == ENG_STREAM_FALLBACK) {
        e->tick = ++s->tick;
        return;
    } else if (!sl) { /* nothing, or not one piece: the stream broke */
        if (e->state != ENG_STREAM_LEARNING) {
            s->st.held_out_fail += e->state == ENG_STREAM_CANDIDATE;
            s->st.misses += e->state == ENG_STREAM_TRUSTED;
            miss(s, e, c);
        }
        if (e->state != ENG_STREAM_FALLBACK)
            e->state = ENG_STREAM_LEARNING;
        e->has_last = false;
        e->nlens = 0;
        e->tick = ++s->tick;
        return;
    } else if (!e->has_last) {
        start(s, e, c, sl, false, 0);
    } else {
        uint64_t expect = e->sweep_end && e->last_hi == e->sweep_end ? e->origin : e->last_hi;
        if (sl->addr == expect) {
            if (e->state == ENG_STREAM_TRUSTED)
                s->st.hits++;
            if (e->state == ENG_STREAM_CANDIDATE) {
                s->st.held_out_pass++;
                if (e->origin == ptr && (c = class_get(s, kernel, arg)) && !c->given_up &&
                    !c->trusted) {
                    c->trusted = true;
                    memcpy(c->lens, e->lens, sizeof(c->lens));
                    c->nlens = e->nlens;
                    c->lens_head = e->lens_head;
                }
            }
            if (e->state < ENG_STREAM_TRUSTED)
                e->state++;
            e->steps = expect == e->origin ? 0 : e->steps + 1;
        } else if (sl->addr == e->origin && e->steps > 0) {
            e->sweep_end = e->last_hi; /* the next sweep */
            e->steps = 0;
            s->st.restarts++;
        } else {
            if (e->state != ENG_STREAM_LEARNING) {
                s->st.held_out_fail += e->state == ENG_STREAM_CANDIDATE;
                s->st.misses += e->state == ENG_STREAM_TRUSTED;
                miss(s, e, c);
            }
            if (e->state != ENG_STREAM_FALLBACK)
                e->state = ENG_STREAM_LEARNING;
            e->origin = sl->addr;
            e->sweep_end = 0;
            e->steps = 0;
            e->nlens = 0;
            e->lens_head = 0;
        }
    }
    e->tick = ++s->tick;
    e->last_lo = sl->addr;
    e->last_hi = sl->addr + sl->len;
    e->mode = sl->mode;
    push_len(e->lens, &e->nlens, &e->lens_head, sl->len);
    if (class_lends(c))
        push_len(c->lens, &c->nlens, &c->lens_head, sl->len);
}

gmux_status_t eng_stream_observe(eng_stream_t *s, uint32_t ctx, const eng_launch_t *l,
                                 const eng_range_t *touched, size_t n,
                                 const eng_region_lookup_t *rl)
{
    if (n > s->tmp_cap) {
        gmux_status_t st =
            com_array_grow((void **)&s->tmp, &s->tmp_cap, n, sizeof(*s->tmp), 64, SIZE_MAX);
        if (st != GMUX_OK)
            return st;
    }
    if (n)
        memcpy(s->tmp, touched, n * sizeof(*touched));
    size_t nt = eng_ranges_normalise(s->tmp, n);
    for (uint32_t i = 0; i < l->nargs; i++) {
        uint64_t bound, v = l->args[i].value;
        if (l->args[i].kind != ENG_ARG_PTR || !arg_window(l, i, rl, &bound))
            continue;
        bool dup = false; /* a pointer passed twice is one stream, the first argument's */
        for (uint32_t j = 0; j < i && !dup; j++)
            dup = l->args[j].kind == ENG_ARG_PTR && l->args[j].value == v;
        if (dup)
            continue;
        eng_range_t sl;
        bool one = slice_of(s->tmp, nt, v, bound, &sl);
        learn(s, ctx, l->kernel, i, v, bound, one ? &sl : NULL);
    }
    return GMUX_OK;
}

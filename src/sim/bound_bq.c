/* The transfer bound's queue of chunks by farthest key (sim/bound_impl.h). */
#include <stdlib.h>
#include <string.h>

#include "sim/bound_impl.h"

gmux_status_t sim_bq_init(sim_bq_t *q, size_t nc, uint32_t nkeys)
{
    memset(q, 0, sizeof(*q));
    q->inf = nkeys - 1;
    q->nc = nc;
    q->head = malloc((size_t)nkeys * sizeof(*q->head));
    q->nxt = malloc(nc * sizeof(*q->nxt));
    q->prv = malloc(nc * sizeof(*q->prv));
    q->qk = malloc(nc * sizeof(*q->qk));
    if (!q->head || !q->nxt || !q->prv || !q->qk)
        goto out_free;
    uint64_t bits = nkeys;
    do {
        uint64_t words = (bits + 63) / 64;
        q->lvn[q->nlv] = (size_t)words;
        q->lv[q->nlv] = malloc(words * sizeof(uint64_t));
        if (!q->lv[q->nlv++])
            goto out_free;
        bits = words;
    } while (bits > 1);
    sim_bq_clear(q);
    return GMUX_OK;
out_free:
    sim_bq_free(q);
    return GMUX_ERR_NOMEM;
}

void sim_bq_free(sim_bq_t *q)
{
    free(q->head);
    free(q->nxt);
    free(q->prv);
    free(q->qk);
    for (uint32_t l = 0; l < SIM_BQ_LEVELS; l++)
        free(q->lv[l]);
    memset(q, 0, sizeof(*q));
}

void sim_bq_clear(sim_bq_t *q)
{
    memset(q->head, 0xFF, ((size_t)q->inf + 1) * sizeof(*q->head)); /* INF32 */
    memset(q->qk, 0xFF, q->nc * sizeof(*q->qk));
    for (uint32_t l = 0; l < q->nlv; l++)
        memset(q->lv[l], 0, q->lvn[l] * sizeof(uint64_t));
    q->n = 0;
    q->top = 0;
}

/* The largest non-empty bucket, from the bitmaps (the queue not empty). */
static uint32_t find_top(const sim_bq_t *q)
{
    uint64_t w = 0;
    for (uint32_t l = q->nlv; l-- > 0;)
        w = w * 64 + 63 - (uint64_t)__builtin_clzll(q->lv[l][w]);
    return (uint32_t)w;
}

/* Takes queued chunk c out of its bucket b. */
static inline void unlink_chunk(sim_bq_t *q, uint32_t c, uint32_t b)
{
    uint32_t p = q->prv[c], x = q->nxt[c];
    q->qk[c] = INF32;
    q->n--;
    if (p != INF32)
        q->nxt[p] = x;
    else
        q->head[b] = x;
    if (x != INF32)
        q->prv[x] = p;
    if (q->head[b] != INF32)
        return;
    for (uint32_t l = 0, e = b; l < q->nlv; l++, e /= 64) { /* the bucket emptied */
        q->lv[l][e / 64] &= ~(1ull << (e % 64));
        if (q->lv[l][e / 64])
            break;
    }
    if (b == q->top && q->n)
        q->top = find_top(q);
}

void sim_bq_remove(sim_bq_t *q, uint32_t c)
{
    uint32_t b = q->qk[c];
    if (b != INF32)
        unlink_chunk(q, c, b);
}

void sim_bq_move(sim_bq_t *q, uint32_t c, uint32_t b)
{
    uint32_t was_b = q->qk[c];
    if (was_b != INF32)
        unlink_chunk(q, c, was_b);
    uint32_t h = q->head[b];
    q->qk[c] = b;
    q->prv[c] = INF32;
    q->nxt[c] = h;
    q->head[b] = c;
    if (q->n++ == 0 || b > q->top)
        q->top = b;
    if (h != INF32) {
        q->prv[h] = c;
        return; /* the bucket's bits are set already */
    }
    for (uint32_t l = 0, e = b; l < q->nlv; l++, e /= 64) {
        uint64_t was = q->lv[l][e / 64];
        q->lv[l][e / 64] = was | (1ull << (e % 64));
        if (was)
            break; /* the levels above have the bit already */
    }
}

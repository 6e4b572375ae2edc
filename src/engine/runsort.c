/* Natural merge sort of tickets and of moves (see runsort.h). */
#include "engine/runsort.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* One body for both types: `sort` is inlined into each typed entry point
 * with its element size and comparison known, so neither is a call. */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

typedef bool (*less_fn)(const void *x, const void *y);

#define AT(p, i) ((p) + (size_t)(i)*sz)

ALWAYS_INLINE void reverse(char *a, uint32_t n, size_t sz)
{
    unsigned char t[sizeof(eng_move_t)];
    for (uint32_t i = 0, j = n - 1; i < j; i++, j--) {
        memcpy(t, AT(a, i), sz);
        memcpy(AT(a, i), AT(a, j), sz);
        memcpy(AT(a, j), t, sz);
    }
}

/* End of the non-decreasing run that starts at i. */
ALWAYS_INLINE uint32_t run_end(const char *a, uint32_t i, uint32_t n, size_t sz, less_fn less)
{
    uint32_t j = i + 1;
    while (j < n && !less(AT(a, j), AT(a, j - 1)))
        j++;
    return j;
}

/* Merges src[i..m) and src[m..e), both in order, into dst[i..e); on a tie
 * the left element goes first. */
ALWAYS_INLINE void merge(const char *src, char *dst, uint32_t i, uint32_t m, uint32_t e, size_t sz,
                         less_fn less)
{
    uint32_t l = i, r = m, o = i;
    while (l < m && r < e) {
        if (less(AT(src, r), AT(src, l)))
            memcpy(AT(dst, o++), AT(src, r++), sz);
        else
            memcpy(AT(dst, o++), AT(src, l++), sz);
    }
    if (l < m)
        memcpy(AT(dst, o), AT(src, l), (size_t)(m - l) * sz);
    else if (r < e)
        memcpy(AT(dst, o), AT(src, r), (size_t)(e - r) * sz);
}

ALWAYS_INLINE void sort(void *base, uint32_t n, void *scratch, size_t sz, less_fn less)
{
    char *a = base;
    if (n < 2)
        return;
    /* The runs as they come, those going down turned round. */
    uint32_t runs = 0;
    for (uint32_t i = 0; i < n; runs++) {
        uint32_t j = i + 1;
        if (j < n && less(AT(a, j), AT(a, i))) {
            while (j < n && !less(AT(a, j - 1), AT(a, j)))
                j++;
            reverse(AT(a, i), j - i, sz);
        } else {
            j = run_end(a, i, n, sz, less);
        }
        i = j;
    }
    /* Two by two into the other array and back. runs may count a reversed
     * run and the one after it as two where they make one: a pass then
     * only copies. */
    char *src = a, *dst = scratch;
    while (runs > 1) {
        runs = 0;
        for (uint32_t i = 0; i < n;) {
            uint32_t m = run_end(src, i, n, sz, less);
            uint32_t e = m < n ? run_end(src, m, n, sz, less) : n;
            if (m < n)
                merge(src, dst, i, m, e, sz, less);
            else
                memcpy(AT(dst, i), AT(src, i), (size_t)(n - i) * sz);
            runs++;
            i = e;
        }
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sz);
}

static bool less_ticket(const void *x, const void *y)
{
    return *(const eng_ticket_t *)x < *(const eng_ticket_t *)y;
}

static bool less_move(const void *x, const void *y)
{
    const eng_move_t *p = x, *q = y;
    return p->chunk != q->chunk ? p->chunk < q->chunk : p->bytes < q->bytes;
}

void eng_runsort_tickets(eng_ticket_t *a, uint32_t n, eng_ticket_t *tmp)
{
    sort(a, n, tmp, sizeof(*a), less_ticket);
}

void eng_runsort_moves(eng_move_t *a, uint32_t n, eng_move_t *tmp)
{
    sort(a, n, tmp, sizeof(*a), less_move);
}

/* Paired-run summaries for gmux bench net: see bench_series.h. */
#include "bench_series.h"

#include <string.h>

double bench_median(const double *v, int n)
{
    double s[BENCH_SERIES_MAX];
    if (n > BENCH_SERIES_MAX)
        n = BENCH_SERIES_MAX;
    memcpy(s, v, (size_t)n * sizeof(*s));
    for (int i = 1; i < n; i++) { /* insertion sort: n is small */
        double x = s[i];
        int j = i;
        for (; j > 0 && s[j - 1] > x; j--)
            s[j] = s[j - 1];
        s[j] = x;
    }
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

bench_summary_t bench_summarize(const double *g, const double *r, int n, bool lower_better)
{
    n = n < 1 ? 1 : n > BENCH_SERIES_MAX ? BENCH_SERIES_MAX : n;
    bench_summary_t s = {.n = n, .gmux_best = g[0], .raw_best = r[0]};
    double q[BENCH_SERIES_MAX];
    s.ratio_min = s.ratio_max = q[0] = g[0] / r[0];
    for (int i = 1; i < n; i++) {
        q[i] = g[i] / r[i];
        s.ratio_min = q[i] < s.ratio_min ? q[i] : s.ratio_min;
        s.ratio_max = q[i] > s.ratio_max ? q[i] : s.ratio_max;
        if (lower_better ? g[i] < s.gmux_best : g[i] > s.gmux_best)
            s.gmux_best = g[i];
        if (lower_better ? r[i] < s.raw_best : r[i] > s.raw_best)
            s.raw_best = r[i];
    }
    s.gmux = bench_median(g, n);
    s.raw = bench_median(r, n);
    s.ratio = bench_median(q, n);
    return s;
}

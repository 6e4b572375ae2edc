/* The shim's counters and their JSON dump. */
#include "shim/stats.h"

#include <stdio.h>
#include <string.h>

shim_stats_t shim_stats;

int shim_stats_write(const char *path, const char *mode_name)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"policy\":\"%s\"", mode_name);
#define SHIM_STATS_JSON_(name)                                                                     \
    fprintf(f, ",\"%s\":%llu", #name,                                                              \
            (unsigned long long)atomic_load_explicit(&shim_stats.name, memory_order_relaxed));
    SHIM_STATS_LIST(SHIM_STATS_JSON_)
#undef SHIM_STATS_JSON_
    fprintf(f, "}\n");
    return fclose(f) == 0 ? 0 : -1;
}

int shim_stats_path(const char *pattern, long pid, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        char num[24];
        const char *piece = p;
        size_t plen = 1;
        if (p[0] == '%' && p[1] == 'p') {
            plen = (size_t)snprintf(num, sizeof(num), "%ld", pid);
            piece = num;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            p++; /* one literal % */
        }
        if (plen >= len - n)
            return -1;
        memcpy(out + n, piece, plen);
        n += plen;
    }
    if (len == 0)
        return -1;
    out[n] = '\0';
    return 0;
}

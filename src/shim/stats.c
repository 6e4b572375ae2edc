/* The shim's counters and their JSON dump. */
#include "shim/stats.h"

#include <stdio.h>

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

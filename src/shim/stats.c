/* The shim's counters and their JSON dump. */
#include "shim/stats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/out_target.h"

shim_stats_t shim_stats;

/* Writes the counters to path: 0, or an errno value. */
static int stats_put(const char *path, const char *mode_name)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return errno;
    fprintf(f, "{\"policy\":\"%s\"", mode_name);
#define SHIM_STATS_JSON_(name)                                                                     \
    fprintf(f, ",\"%s\":%llu", #name,                                                              \
            (unsigned long long)atomic_load_explicit(&shim_stats.name, memory_order_relaxed));
    SHIM_STATS_LIST(SHIM_STATS_JSON_)
#undef SHIM_STATS_JSON_
    fprintf(f, "}\n");
    int e = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !e)
        e = errno ? errno : EIO;
    return e;
}

int shim_stats_write(const char *path, const char *mode_name, char dir[PATH_MAX])
{
    /* the pid: processes that write one file at once each have their own
     * part; never guarded (no signal handler in the user's process) */
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    com_out_t o;
    dir[0] = '\0';
    int e = com_out_resolve_tagged(path, pid, &o);
    if (!e)
        e = com_out_link_folder_check(path, &o, dir);
    if (e)
        return e;
    e = stats_put(com_out_dst(&o), mode_name);
    int fe = com_out_finish(&o, e == 0, NULL);
    return e ? e : fe;
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

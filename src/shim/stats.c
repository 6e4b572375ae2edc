/* The shim's counters and their JSON dump. */
#include "shim/stats.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

shim_stats_t shim_stats;

static int stats_put(const char *path, const char *mode_name, int mode)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    if (mode >= 0)
        (void)fchmod(fileno(f), (mode_t)mode);
    fprintf(f, "{\"policy\":\"%s\"", mode_name);
#define SHIM_STATS_JSON_(name)                                                                     \
    fprintf(f, ",\"%s\":%llu", #name,                                                              \
            (unsigned long long)atomic_load_explicit(&shim_stats.name, memory_order_relaxed));
    SHIM_STATS_LIST(SHIM_STATS_JSON_)
#undef SHIM_STATS_JSON_
    fprintf(f, "}\n");
    int bad = fflush(f) != 0 || ferror(f);
    return fclose(f) == 0 && !bad ? 0 : -1;
}

int shim_stats_write(const char *path, const char *mode_name)
{
    struct stat sb;
    char real[PATH_MAX], part[PATH_MAX + 32];
    bool there = stat(path, &sb) == 0;
    if (there && !S_ISREG(sb.st_mode))
        return stats_put(path, mode_name, -1); /* a FIFO, a device: in place */
    if (there ? !realpath(path, real)          /* the file a link names is replaced, not the link */
              : snprintf(real, sizeof(real), "%s", path) >= (int)sizeof(real))
        return -1;
    /* the pid: processes that write one file at once each have their own part */
    if (snprintf(part, sizeof(part), "%s.%ld.part~", real, (long)getpid()) >= (int)sizeof(part))
        return -1;
    if (stats_put(part, mode_name, there ? (int)(sb.st_mode & 07777) : -1) != 0 ||
        rename(part, real) != 0) {
        unlink(part);
        return -1;
    }
    return 0;
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

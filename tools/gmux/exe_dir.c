/* Files beside the gmux executable: see exe_dir.h. */
#include "exe_dir.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int exe_dir(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    size_t len = strlen(exe);
    if (len >= cap)
        return -1;
    memcpy(out, exe, len + 1);
    return 0;
}

int exe_dir_find(const char *const *rel, size_t n, int mode, char *out, size_t cap)
{
    char dir[PATH_MAX];
    if (exe_dir(dir, sizeof(dir)) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char cand[PATH_MAX];
        char real[PATH_MAX];
        int len = snprintf(cand, sizeof(cand), "%s/%s", dir, rel[i]);
        if (len <= 0 || (size_t)len >= sizeof(cand) || access(cand, mode) != 0 ||
            !realpath(cand, real))
            continue;
        size_t rlen = strlen(real);
        if (rlen < cap) {
            memcpy(out, real, rlen + 1);
            return 0;
        }
    }
    return -1;
}

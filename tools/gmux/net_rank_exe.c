/* Finding gmux-net-rank from gmux: see net_rank.h. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "net_rank.h"

#ifndef GMUX_INSTALL_LIBEXECDIR
#define GMUX_INSTALL_LIBEXECDIR "libexec"
#endif

int net_rank_exe(const char *cmd, char *out, size_t cap)
{
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    if (n <= 0)
        return cli_fail(cmd, "cannot find the gmux executable (/proc/self/exe)");
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    /* the build tree, then an installation */
    static const char *const where[] = {"", "/../" GMUX_INSTALL_LIBEXECDIR "/gmux"};
    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
        int len = snprintf(out, cap, "%s%s/" NET_RANK_EXE, dir, where[i]);
        if (len > 0 && (size_t)len < cap && access(out, X_OK) == 0)
            return 0;
    }
    return cli_fail(cmd,
                    NET_RANK_EXE " not found beside %s/gmux nor in %s/../" GMUX_INSTALL_LIBEXECDIR
                                 "/gmux (it runs the ranks of net commands; reinstall gmux)",
                    dir, dir);
}

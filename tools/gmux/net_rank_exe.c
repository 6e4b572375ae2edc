/* Finding gmux-net-rank from gmux: see net_rank.h. */
#include <limits.h>
#include <unistd.h>

#include "cli.h"
#include "exe_dir.h"
#include "net_rank.h"

#ifndef GMUX_INSTALL_LIBEXECDIR
#define GMUX_INSTALL_LIBEXECDIR "libexec"
#endif

int net_rank_exe(const char *cmd, char *out, size_t cap)
{
    char dir[PATH_MAX];
    if (exe_dir(dir, sizeof(dir)) != 0)
        return cli_fail(cmd, "cannot find the gmux executable (/proc/self/exe)");
    /* the build tree, then an installation */
    static const char *const rel[] = {NET_RANK_EXE,
                                      "../" GMUX_INSTALL_LIBEXECDIR "/gmux/" NET_RANK_EXE};
    if (exe_dir_find(rel, sizeof(rel) / sizeof(rel[0]), X_OK, out, cap) == 0)
        return 0;
    return cli_fail(cmd,
                    NET_RANK_EXE " not found beside %s/gmux nor in %s/../" GMUX_INSTALL_LIBEXECDIR
                                 "/gmux (it runs the ranks of net commands; reinstall gmux)",
                    dir, dir);
}

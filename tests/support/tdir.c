/* Scratch folders of tests; see tdir.h. */
#include "tdir.h"

#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Children come before their folder (FTW_DEPTH); links are not followed
 * (FTW_PHYS), so remove() takes the link itself. */
static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

void tdir_make_for_socket(char *dir, char *path, size_t path_size)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(path, path_size, "%s/d.sock", dir);
    signal(SIGPIPE, SIG_IGN);
}

int tdir_remove(const char *dir)
{
    struct stat st;
    if (!dir || !dir[0] || lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int tdir_finish(const char *dir, int rc)
{
    if (tdir_remove(dir) != 0) {
        fprintf(stderr, "could not remove the test folder %s\n", dir);
        return rc ? rc : 1;
    }
    return rc;
}

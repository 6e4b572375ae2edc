/* Where an output file is written; see out_target.h. */
#include "common/out_target.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/partguard.h"

/* Replaces the link at cur (a path ending in its name) by what it names:
 * an absolute target as it is, a relative one read from the link's folder.
 * 0, or an errno value. */
static int follow_link(char cur[PATH_MAX])
{
    char to[PATH_MAX];
    ssize_t n = readlink(cur, to, sizeof(to));
    if (n < 0)
        return errno;
    if ((size_t)n >= sizeof(to))
        return ENAMETOOLONG;
    to[n] = '\0';
    const char *slash = strrchr(cur, '/');
    int dir = to[0] == '/' || !slash ? 0 : (int)(slash - cur) + 1; /* keeps "dir/" */
    char next[PATH_MAX];
    if (snprintf(next, sizeof(next), "%.*s%s", dir, cur, to) >= (int)sizeof(next))
        return ENAMETOOLONG;
    memcpy(cur, next, sizeof(next));
    return 0;
}

int com_out_resolve(const char *path, com_out_t *o)
{
    return com_out_resolve_tagged(path, NULL, o);
}

int com_out_resolve_tagged(const char *path, const char *tag, com_out_t *o)
{
    bool tagged = tag && tag[0];
    if (tagged && strlen(tag) > COM_OUT_TAG_MAX)
        return ENAMETOOLONG;
    char cur[PATH_MAX];
    if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
        return ENAMETOOLONG;
    struct stat st;
    int mode = -1, links = 0;
    bool in_place = false;
    for (;;) {
        if (lstat(cur, &st) != 0) {
            if (errno != ENOENT)
                return errno; /* ELOOP, ENOTDIR, EACCES in the folders on the way */
            break;            /* nothing there: created (a missing folder: when the part is) */
        }
        if (S_ISLNK(st.st_mode)) {
            if (links++ == COM_OUT_MAX_LINKS)
                return ELOOP;
            int e = follow_link(cur);
            if (e)
                return e;
            continue;
        }
        if (S_ISDIR(st.st_mode))
            return EISDIR;
        if (S_ISREG(st.st_mode))
            mode = (int)(st.st_mode & 07777);
        else
            in_place = true; /* a FIFO, a device */
        break;
    }
    char part[sizeof(o->part)] = ""; /* < PATH_MAX: a path calls take */
    if (!in_place && snprintf(part, sizeof(part), "%s%s%s.part~", cur, tagged ? "." : "",
                              tagged ? tag : "") >= (int)sizeof(part))
        return ENAMETOOLONG;
    memcpy(o->file, cur, sizeof(cur));
    memcpy(o->part, part, sizeof(part));
    o->mode = mode;
    o->exists = mode >= 0 || in_place || links > 0;
    return 0;
}

int com_out_folder_check(const com_out_t *o, char dir[PATH_MAX])
{
    const char *slash = strrchr(o->file, '/');
    if (!slash)
        snprintf(dir, PATH_MAX, ".");
    else if (slash == o->file)
        snprintf(dir, PATH_MAX, "/");
    else
        snprintf(dir, PATH_MAX, "%.*s", (int)(slash - o->file), o->file);
    struct stat sb;
    return stat(dir, &sb) != 0             ? errno
           : !S_ISDIR(sb.st_mode)          ? ENOTDIR
           : access(dir, W_OK | X_OK) != 0 ? errno
                                           : 0;
}

int com_out_link_folder_check(const char *path, const com_out_t *o, char dir[PATH_MAX])
{
    dir[0] = '\0';
    if (!com_out_replaces(o) || strcmp(o->file, path) == 0)
        return 0;
    return com_out_folder_check(o, dir);
}

bool com_out_replaces(const com_out_t *o)
{
    return o->part[0] != '\0';
}

const char *com_out_dst(const com_out_t *o)
{
    return com_out_replaces(o) ? o->part : o->file;
}

void com_out_guard(const com_out_t *o)
{
    if (com_out_replaces(o))
        com_part_guard(o->part);
}

int com_out_finish(const com_out_t *o, bool complete, const char **call_p)
{
    int e = 0;
    const char *call = NULL;
    if (com_out_replaces(o)) {
        /* the part was created 0666 & ~umask: it gets the mode of the file
         * it replaces */
        if (!complete)
            unlink(o->part); /* never a folder the user keeps there */
        else if (o->mode >= 0 && chmod(o->part, (mode_t)o->mode) != 0)
            call = "chmod()";
        else if (rename(o->part, o->file) != 0)
            call = "rename()";
        if (call) {
            e = errno;
            unlink(o->part); /* never a folder the user keeps there */
        }
    }
    com_part_unguard(); /* after the rename: a signal before it removes the part */
    if (call_p)
        *call_p = call;
    return e;
}

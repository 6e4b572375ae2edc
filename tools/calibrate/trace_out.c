/* gmux-calibrate's chain trace file; see trace_out.h. */
#include "trace_out.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/partguard.h"

/* While trace_in_part is set the run has not finished: the part is removed
 * at exit, and on a signal (com_part_guard). trace_mode: the permission bits
 * of the regular file replaced, or -1. */
static char trace_part[PATH_MAX + 8], trace_dst[PATH_MAX];
static bool trace_in_part;
static bool trace_registered;
static int trace_mode;

static void trace_discard(void)
{
    if (trace_in_part)
        remove(trace_part);
}

FILE *cal_trace_open(const char *path, int *errnum_p)
{
    struct stat st;
    bool exists = stat(path, &st) == 0;
    FILE *f;
    if (exists && !S_ISREG(st.st_mode)) {
        if (!(f = fopen(path, "w")))
            *errnum_p = errno;
        return f;
    }
    if (strlen(path) >= sizeof(trace_dst)) {
        *errnum_p = ENAMETOOLONG;
        return NULL;
    }
    /* the file a link names is replaced, not the link */
    if (!exists || !realpath(path, trace_dst))
        snprintf(trace_dst, sizeof(trace_dst), "%s", path);
    snprintf(trace_part, sizeof(trace_part), "%s.part~", trace_dst);
    trace_mode = exists ? (int)(st.st_mode & 07777) : -1;
    f = fopen(trace_part, "w");
    if (!f) {
        *errnum_p = errno;
        return NULL;
    }
    trace_in_part = true;
    if (!trace_registered)
        trace_registered = atexit(trace_discard) == 0;
    com_part_guard(trace_part);
    return f;
}

int cal_trace_close(FILE *f)
{
    errno = 0;
    bool bad = fflush(f) != 0 || ferror(f);
    int errnum = errno ? errno : EIO;
    /* the part was created 0666 & ~umask: it gets the mode of the file it
     * replaces */
    if (!bad && trace_in_part && trace_mode >= 0 && fchmod(fileno(f), (mode_t)trace_mode) != 0) {
        bad = true;
        errnum = errno;
    }
    if (fclose(f) != 0 && !bad) {
        bad = true;
        errnum = errno;
    }
    if (!bad && trace_in_part && rename(trace_part, trace_dst) != 0) {
        bad = true;
        errnum = errno;
    }
    if (bad)
        trace_discard();
    trace_in_part = false;
    com_part_unguard(); /* after the rename: a signal before it removes the part */
    return bad ? errnum : 0;
}

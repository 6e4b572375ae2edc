/* gmux-calibrate's chain trace file; see trace_out.h. */
#include "trace_out.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/out_target.h"

/* While trace_in_part is set the run has not finished: the part is removed
 * at exit, and on a signal (com_out_guard). */
static com_out_t trace_out;
static bool trace_in_part;
static bool trace_registered;
/* The folder the last cal_trace_open failed on ("" if none). */
static char trace_folder[PATH_MAX];

static void trace_discard(void)
{
    if (trace_in_part)
        com_out_finish(&trace_out, false, NULL);
    trace_in_part = false;
}

FILE *cal_trace_open(const char *path, int *errnum_p)
{
    trace_folder[0] = '\0';
    int e = com_out_resolve(path, &trace_out);
    if (!e)
        e = com_out_link_folder_check(path, &trace_out, trace_folder);
    if (e) {
        *errnum_p = e;
        return NULL;
    }
    FILE *f = fopen(com_out_dst(&trace_out), "w");
    if (!f) {
        *errnum_p = errno;
        return NULL;
    }
    if (!com_out_replaces(&trace_out))
        return f; /* in place: never removed */
    trace_in_part = true;
    if (!trace_registered)
        trace_registered = atexit(trace_discard) == 0;
    com_out_guard(&trace_out);
    return f;
}

const char *cal_trace_folder(void)
{
    return trace_folder;
}

void cal_trace_abort(FILE *f)
{
    fclose(f);
    trace_discard();
}

int cal_trace_close(FILE *f)
{
    errno = 0;
    bool bad = fflush(f) != 0 || ferror(f);
    int errnum = errno ? errno : EIO;
    if (fclose(f) != 0 && !bad) {
        bad = true;
        errnum = errno;
    }
    if (!trace_in_part)
        return bad ? errnum : 0;
    int e = com_out_finish(&trace_out, !bad, NULL);
    trace_in_part = false;
    if (!bad && e) {
        bad = true;
        errnum = e;
    }
    return bad ? errnum : 0;
}

/* gmux-calibrate's chain trace file; see trace_out.h. */
#include "trace_out.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* While trace_in_part is set the run has not finished: the part is removed
 * at exit and on the signals of trace_sigs (whose dispositions before
 * cal_trace_open are in trace_old; trace_guarded[i]: ours is in place).
 * trace_mode: the permission bits of the regular file replaced, or -1. */
static char trace_part[PATH_MAX + 8], trace_dst[PATH_MAX];
static volatile sig_atomic_t trace_in_part;
static bool trace_registered;
static int trace_mode;
static const int trace_sigs[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction trace_old[3];
static bool trace_guarded[3];

static void trace_discard(void)
{
    if (trace_in_part)
        remove(trace_part);
}

/* Async-signal-safe: unlink, then the signal again with the disposition it
 * had before (blocked until this handler returns). */
static void trace_on_signal(int sig)
{
    if (trace_in_part)
        unlink(trace_part);
    for (int i = 0; i < 3; i++)
        if (trace_sigs[i] == sig)
            sigaction(sig, &trace_old[i], NULL);
    raise(sig);
}

static void trace_guard(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = trace_on_signal;
    sigfillset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        sigaction(trace_sigs[i], NULL, &trace_old[i]);
        /* an ignored signal (nohup) stays ignored */
        trace_guarded[i] = trace_old[i].sa_handler != SIG_IGN;
        if (trace_guarded[i])
            sigaction(trace_sigs[i], &sa, NULL);
    }
}

static void trace_unguard(void)
{
    for (int i = 0; i < 3; i++)
        if (trace_guarded[i])
            sigaction(trace_sigs[i], &trace_old[i], NULL);
    memset(trace_guarded, 0, sizeof(trace_guarded));
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
    trace_in_part = 1;
    if (!trace_registered)
        trace_registered = atexit(trace_discard) == 0;
    trace_guard();
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
    trace_in_part = 0;
    trace_unguard(); /* after the rename: a signal before it removes the part */
    return bad ? errnum : 0;
}

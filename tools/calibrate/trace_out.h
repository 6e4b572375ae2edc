/*
 * gmux-calibrate's --chain-trace FILE (trace_out.c): created before any CUDA
 * call, so that a path that cannot be written fails before the GPU run, not
 * after it, and put in place only when the run ends with the JSON printed.
 *
 * A regular file at the path, or nothing, is written as FILE.part~ and
 * renamed over FILE by cal_trace_close, with the permission bits of the FILE
 * it replaces (a new one gets 0666 & ~umask); until then the part is removed
 * by cal_trace_abort, when the process exits, or when it is ended by SIGINT,
 * SIGTERM or SIGHUP (which then act as before: an ignored one stays
 * ignored), so a failed or stopped run leaves an earlier FILE as it was and
 * no part behind. A symbolic link stays one: the file it names is the FILE
 * replaced (created, for a dangling link), its part beside it; a loop of
 * links or a folder is refused (common/out_target.h, gmux's rule too).
 * Anything else (/dev/null, a FIFO) is written in place and never removed
 * (removing /dev/null, as root, would take it from the system).
 *
 * C, not CUDA, so that its test runs where nvcc is not. Thread-safety: one
 * trace per process, opened and closed by the main thread.
 */
#ifndef GMUX_CALIBRATE_TRACE_OUT_H
#define GMUX_CALIBRATE_TRACE_OUT_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the trace for path: the part file (and installs the signal
 * handlers), or path itself (not a regular file). Returns the stream, or NULL with *errnum_p set
 * (nothing created). */
FILE *cal_trace_open(const char *path, int *errnum_p);

/* After cal_trace_open failed on path given as a link: the folder of the
 * link's target that is missing or not writable (the message names it, as
 * gmux does: the user never typed it); "" otherwise. */
const char *cal_trace_folder(void);

/* Flushes and closes f, the stream cal_trace_open returned, renames the part
 * over FILE with FILE's mode, and puts the signals' dispositions back.
 * Returns 0, or an errno value after removing the part. */
int cal_trace_close(FILE *f);

/* Closes f, the stream cal_trace_open returned, for a run that failed: the
 * part is removed (an earlier FILE stays as it was; a FILE written in place
 * keeps what was written) and the signals act as before. */
void cal_trace_abort(FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* GMUX_CALIBRATE_TRACE_OUT_H */

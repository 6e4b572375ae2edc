/*
 * Running a program under libgmux.so in recording mode, for `gmux trace --
 * CMD` and `gmux profile -- CMD`: the child gets LD_PRELOAD and the
 * GMUX_SHIM_TRACE* settings (docs/shim.md, "Recording") and GMUX_GATE=0 (a
 * recorded program runs alone, never gated by gmuxd), the parent waits.
 */
#ifndef GMUX_SHIM_RECORD_H
#define GMUX_SHIM_RECORD_H

#include <stdbool.h>

/*
 * Runs argv (NULL-terminated) with the shim recording to trace_path in the
 * given form ("text" or "binary"); probe asks for touched ranges after each
 * launch. policy is GMUX_POLICY for the child unless the environment sets it;
 * env (NULL-terminated "NAME=VALUE" strings, may be NULL) is set for the child
 * over anything else.
 * Returns the child's exit code (126/127 if it could not run, 128+signal if
 * killed), or, with a message printed, -1 when the shim was not found and
 * -CLI_EXIT_USAGE when a GMUX_* variable the shim reads (and the recording
 * does not set) is malformed, -(128+N) when gmux got SIGINT, SIGTERM or
 * SIGHUP N (passed on to the program, waited for): the negated exit status
 * for gmux.
 */
/* The check gmux_shim_record makes before it runs anything, for a caller
 * that runs several recordings and must fail before the first one says a
 * word: 0, or CLI_EXIT_USAGE with a message when a GMUX_* variable the shim
 * reads, and neither the recording nor env sets, is malformed. */
int gmux_shim_record_check(const char *cmd, const char *const *env);

int gmux_shim_record(const char *cmd, const char *trace_path, const char *format, bool probe,
                     const char *policy, const char *const *env, char *const argv[]);

#endif /* GMUX_SHIM_RECORD_H */

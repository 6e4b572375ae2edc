/*
 * A part file removed when a signal ends the process: a program that writes
 * FILE as FILE.part~ and renames it over FILE once complete (gmux's
 * out_file.c, gmux-calibrate's trace_out.c) guards the part while it
 * writes, so that SIGINT, SIGTERM or SIGHUP leaves no FILE.part~ behind.
 * The handler unlinks the part (async-signal-safe), puts back the signal's
 * disposition from before the guard and raises it again, so the signal then
 * acts as before: the default ends the process by that signal (as its shell
 * expects), an ignored one (nohup) stays ignored, never guarded.
 * Thread-safety: one guard at a time per process, set and lifted by one
 * thread; the signal may arrive on any.
 */
#ifndef COM_PARTGUARD_H
#define COM_PARTGUARD_H

/* Guards part (copied) until com_part_unguard: 0, or ENAMETOOLONG for a
 * part of PATH_MAX bytes or more (its NUL included), which no call could
 * create nor unlink, not guarded (out_target.c names none so). */
int com_part_guard(const char *part);

/* Lifts the guard: the signals act as before it. Call it after the rename
 * (a signal before it removes the part); nothing when none is set. */
void com_part_unguard(void);

#endif /* COM_PARTGUARD_H */

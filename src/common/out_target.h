/*
 * Where an output file named by a user is written, for the writers that put
 * FILE in place whole: written as a part file, renamed over FILE once
 * complete (gmux's out_file.c, gmux-calibrate's trace_out.c). One rule for
 * both, as `sed -i --follow-symlinks` and editors do:
 *
 *   - a regular file, or nothing, at FILE: FILE.part~ beside it, renamed
 *     over FILE, which keeps its permission bits (a new one gets
 *     0666 & ~umask);
 *   - a symbolic link: the link stays; the file it names is the one
 *     replaced (or created, for a dangling link whose folder exists), its
 *     part beside it in the target's folder, a relative target read from
 *     the link's folder, links to links followed (COM_OUT_MAX_LINKS);
 *   - a loop of links (ELOOP), a folder (EISDIR, through a link too) and a
 *     target that cannot be reached (a folder missing or not searchable:
 *     com_out_folder_check, else found when the part is created) are
 *     errors, with nothing written;
 *   - anything else (a FIFO, a device, /dev/null) is written in place and
 *     never removed.
 *
 * A writer whose processes may write one FILE at once (libgmux.so's
 * GMUX_SHIM_STATS) names its parts FILE.TAG.part~ (com_out_resolve_tagged,
 * its pid as the tag), each process its own; it never guards them (no
 * signal handler in a user's process).
 *
 * A part is removed on SIGINT, SIGTERM or SIGHUP while guarded
 * (com_out_guard, partguard.h), and by com_out_finish when incomplete.
 * Thread-safety: a com_out_t is its caller's; one guard per process.
 */
#ifndef COM_OUT_TARGET_H
#define COM_OUT_TARGET_H

#include <limits.h>
#include <stdbool.h>

/* Links followed from FILE before it is a loop (Linux's own limit). */
#define COM_OUT_MAX_LINKS 40

/* A part's name, FILE "." TAG ".part~" (a tag of up to COM_OUT_TAG_MAX
 * bytes), is a path every call takes: under PATH_MAX bytes, its NUL
 * included; a FILE whose part would be longer is refused (ENAMETOOLONG).
 * Until 2026-12-04 parts were named up to PATH_MAX + 28 bytes, which open()
 * refused later and partguard.c (PATH_MAX + 8) would not have guarded. */
#define COM_OUT_TAG_MAX  20
#define COM_OUT_PART_MAX PATH_MAX

typedef struct com_out {
    char file[PATH_MAX];         /* what is written: FILE, its links followed */
    char part[COM_OUT_PART_MAX]; /* file.part~, or "" when written in place */
    int mode;                    /* permission bits of the regular file replaced; -1: none */
    bool exists;                 /* something was at FILE (a dangling link too) */
} com_out_t;

/* Fills o for path (as the user named it): 0, or an errno value (ELOOP,
 * EISDIR, ENAMETOOLONG: the file's path or its part's, what lstat or
 * readlink said), nothing touched. */
int com_out_resolve(const char *path, com_out_t *o);

/* com_out_resolve with the part named FILE.TAG.part~ (tag at most
 * COM_OUT_TAG_MAX bytes, else ENAMETOOLONG; NULL or "": FILE.part~). */
int com_out_resolve_tagged(const char *path, const char *tag, com_out_t *o);

/* Whether a part can be made in the folder of o->file, where a part is
 * made (a link followed: the target's folder, not the link's): 0, or an
 * errno value (ENOENT: not there, ENOTDIR, EACCES: not writable and
 * searchable, as access() says), with that folder in dir either way ("."
 * for a bare name, "/" for one in the root), for the message, which names
 * it: through a link, the user never typed it. */
int com_out_folder_check(const com_out_t *o, char dir[PATH_MAX]);

/* com_out_folder_check for a FILE replaced through a link (o->file is not
 * path, as the user named it), whose target's folder the user never typed:
 * an errno value with that folder in dir, for the message to name it
 * ("cannot write PATH: DIR: reason"); else 0 with dir "". */
int com_out_link_folder_check(const char *path, const com_out_t *o, char dir[PATH_MAX]);

/* Whether o is written as a part renamed over o->file (else in place). */
bool com_out_replaces(const com_out_t *o);

/* Where to write: o->part, or o->file in place. */
const char *com_out_dst(const com_out_t *o);

/* Removes the part when a signal ends the process, until com_out_finish
 * (partguard.h); nothing when written in place. */
void com_out_guard(const com_out_t *o);

/* Puts a complete part in place (its mode set to o->mode, then renamed over
 * o->file), or removes an incomplete one, and lifts com_out_guard; nothing
 * more when written in place. Returns 0, or an errno value after removing
 * the part, with *call_p (unless NULL) the call that failed ("chmod()",
 * "rename()"). */
int com_out_finish(const com_out_t *o, bool complete, const char **call_p);

#endif /* COM_OUT_TARGET_H */

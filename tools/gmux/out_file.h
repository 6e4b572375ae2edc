/*
 * An output file that appears complete or not at all, for the commands that
 * write one (gmux trace -o, gmux trace convert, gmux profile -o).
 *
 * A regular file at the path, or nothing at all, is written as a sibling
 * "FILE.part~" and renamed over FILE once it is complete: an input or a
 * program that fails half way, a write that fails (a full disk), or gmux
 * killed while it writes, leaves the earlier FILE as it was, and a reader
 * never sees half a file. A file replaced so keeps its permission bits (a
 * new one gets 0666 & ~umask). A symbolic link stays a link: the file it
 * names is replaced (or created, for a dangling one), its part beside it; a
 * loop of links or a folder is refused before anything is written. Anything
 * else at the path (a FIFO, a device) is written in place and never removed.
 * The rules are src/common/out_target.h's, shared with gmux-calibrate.
 *
 * Thread-safety: none needed (one per command).
 */
#ifndef GMUX_OUT_FILE_H
#define GMUX_OUT_FILE_H

#include <stdbool.h>

#include "common/out_target.h"

typedef struct cli_out {
    const char *cmd;  /* the subcommand, for messages */
    const char *path; /* as the user named it */
    const char *dst;  /* where to write: out.part, or path itself (in place) */
    bool exists;      /* something was at path (a dangling link too) */
    com_out_t out;    /* the file written, its part and mode */
} cli_out_t;

/* Chooses o->dst for path; 0, or 1 after saying why ("cannot write PATH: "
 * and the reason: a loop of links, a folder, a path too long; for a link,
 * "cannot write LINK: FOLDER: " and the reason when its target's folder is
 * missing or not writable, as gmux run says it of --stats). */
int cli_out_begin(cli_out_t *o, const char *cmd, const char *path);

/* Whether the part file can be created, tried (and undone) before a long
 * run, so that a run is not lost to an output that cannot be written; 0, or
 * 1 after saying why. Written in place (a FIFO, a device), nothing is tried:
 * opening those can block until someone reads. */
int cli_out_probe(const cli_out_t *o);

/* Whether o->dst is a part file that cli_out_finish renames over path. */
bool cli_out_replaces(const cli_out_t *o);

/* Whether a file was at path (its links followed), which a write that
 * fails leaves as it was; false for nothing there and for a dangling link
 * (o->exists, though no file is there to keep). */
bool cli_out_kept(const cli_out_t *o);

/* Until cli_out_finish, SIGINT, SIGTERM or SIGHUP removes the part file
 * (when o->dst is one) and then acts as before (an ignored one stays
 * ignored): gmux killed while it writes leaves no FILE.part~ behind. For a
 * command that writes the part itself, with no children; one guard at a
 * time. */
void cli_out_guard(const cli_out_t *o);

/* Puts a complete o->dst in place, or removes an incomplete one (never what
 * was there before), and lifts cli_out_guard; 0, or 1 after saying why the
 * rename failed. */
int cli_out_finish(const cli_out_t *o, bool complete);

/* Whether paths a and b name the same existing file (same device and inode:
 * ./x and x, a hard link, a symbolic link to it), for a command that reads
 * one and writes the other. */
bool cli_same_file(const char *a, const char *b);

#endif /* GMUX_OUT_FILE_H */

/* Output files replaced once complete; see out_file.h. */
#include "out_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common/partguard.h"

int cli_out_begin(cli_out_t *o, const char *cmd, const char *path)
{
    struct stat sb;
    o->cmd = cmd;
    o->path = o->dst = path;
    o->real[0] = o->part[0] = '\0';
    o->mode = -1;
    bool target = stat(path, &sb) == 0;          /* the file, or what a link points to */
    o->exists = target || lstat(path, &sb) == 0; /* a dangling link is something */
    if (target && S_ISDIR(sb.st_mode))
        return cli_fail(cmd, "cannot write %s: %s", path, strerror(EISDIR));
    if (target && !S_ISREG(sb.st_mode))
        return 0; /* a FIFO, a device: in place */
    if (o->exists && !target)
        return 0; /* a dangling link: in place, creating its target */
    if (target && !realpath(path, o->real))
        return cli_fail(cmd, "cannot write %s: realpath(): %s", path, strerror(errno));
    if (target)
        o->mode = (int)(sb.st_mode & 07777);
    if (!target && snprintf(o->real, sizeof(o->real), "%s", path) >= (int)sizeof(o->real))
        return cli_fail(cmd, "cannot write %s: %s", path, strerror(ENAMETOOLONG));
    if (snprintf(o->part, sizeof(o->part), "%s.part~", o->real) >= (int)sizeof(o->part))
        return cli_fail(cmd, "cannot write %s: %s", path, strerror(ENAMETOOLONG));
    o->dst = o->part;
    return 0;
}

bool cli_out_replaces(const cli_out_t *o)
{
    return o->dst == o->part;
}

int cli_out_probe(const cli_out_t *o)
{
    if (!cli_out_replaces(o))
        return 0;
    FILE *f = fopen(o->dst, "a");
    if (!f)
        return cli_fail(o->cmd, "cannot write %s: %s", o->path, strerror(errno));
    fclose(f);
    remove(o->dst);
    return 0;
}

void cli_out_guard(const cli_out_t *o)
{
    if (cli_out_replaces(o))
        com_part_guard(o->part);
}

int cli_out_finish(const cli_out_t *o, bool complete)
{
    if (!cli_out_replaces(o))
        return 0; /* in place: whatever is there stays */
    int rc = 0;
    if (!complete) {
        remove(o->dst);
    } else {
        /* the part file was created 0666 & ~umask: it gets the mode of the
         * file it replaces */
        const char *call = o->mode >= 0 && chmod(o->dst, (mode_t)o->mode) != 0 ? "chmod()"
                           : rename(o->dst, o->real) != 0                      ? "rename()"
                                                                               : NULL;
        if (call) {
            int e = errno;
            remove(o->dst);
            rc = cli_fail(o->cmd, "cannot write %s: %s of %s: %s", o->path, call, o->part,
                          strerror(e));
        }
    }
    com_part_unguard(); /* after the rename: an interrupt before it removes the part */
    return rc;
}

bool cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Output files replaced once complete; see out_file.h. */
#include "out_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_out_begin(cli_out_t *o, const char *cmd, const char *path)
{
    o->cmd = cmd;
    o->path = o->dst = path;
    o->exists = false;
    int e = com_out_resolve(path, &o->out);
    if (e)
        return cli_fail(cmd, "cannot write %s: %s", path, strerror(e));
    o->exists = o->out.exists;
    if (!com_out_replaces(&o->out))
        return 0; /* in place, under the name the user gave */
    o->dst = o->out.part;
    char dir[PATH_MAX]; /* a link followed: its target's folder, which path does not show */
    if ((e = com_out_link_folder_check(path, &o->out, dir)) != 0)
        return cli_fail(cmd, "cannot write %s: %s: %s", path, dir, strerror(e));
    return 0;
}

bool cli_out_replaces(const cli_out_t *o)
{
    return com_out_replaces(&o->out);
}

bool cli_out_kept(const cli_out_t *o)
{
    return o->out.mode >= 0; /* a regular file, replaced only once complete */
}

int cli_out_probe(const cli_out_t *o)
{
    if (!cli_out_replaces(o))
        return 0;
    FILE *f = fopen(o->dst, "a");
    if (!f)
        return cli_fail(o->cmd, "cannot write %s: %s", o->path, strerror(errno));
    fclose(f);
    unlink(o->dst);
    return 0;
}

void cli_out_guard(const cli_out_t *o)
{
    com_out_guard(&o->out);
}

int cli_out_finish(const cli_out_t *o, bool complete)
{
    const char *call = NULL;
    int e = com_out_finish(&o->out, complete, &call);
    if (e)
        return cli_fail(o->cmd, "cannot write %s: %s of %s: %s", o->path, call, o->out.part,
                        strerror(e));
    return 0;
}

bool cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

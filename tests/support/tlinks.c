/* A scratch tree for tests of outputs given as links; see tlinks.h. */
#include "tlinks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tdir.h"
#include "tproc.h"

int tlinks_make(tlinks_t *l, const char *name)
{
    memset(l, 0, sizeof(*l));
    snprintf(l->top, sizeof(l->top), "/tmp/gmux-links-XXXXXX");
    if (!mkdtemp(l->top)) {
        perror("tlinks_make: mkdtemp");
        return -1;
    }
    snprintf(l->a, sizeof(l->a), "%s/a", l->top);
    snprintf(l->b, sizeof(l->b), "%s/b", l->top);
    snprintf(l->link, sizeof(l->link), "%s/link", l->a);
    snprintf(l->target, sizeof(l->target), "%s/%.40s", l->b, name);
    snprintf(l->tpart, sizeof(l->tpart), "%s.part~", l->target);
    snprintf(l->lpart, sizeof(l->lpart), "%s.part~", l->link);
    /* chmod after mkdir: the umask leaves the mode alone */
    if (chmod(l->top, 0755) != 0 || mkdir(l->a, 0777) != 0 || chmod(l->a, 0777) != 0 ||
        mkdir(l->b, 0755) != 0 || chmod(l->b, 0755) != 0) {
        perror("tlinks_make");
        return -1;
    }
    return 0;
}

int tlinks_remove(const tlinks_t *l)
{
    chmod(l->b, 0755);
    return tdir_remove(l->top);
}

const char *tlinks_check(const tlinks_t *l)
{
    static char why[512];
    struct stat st;
    if (lstat(l->link, &st) != 0 || !S_ISLNK(st.st_mode))
        snprintf(why, sizeof(why), "%s is no longer a symbolic link", l->link);
    else if (lstat(l->tpart, &st) == 0 || lstat(l->lpart, &st) == 0)
        snprintf(why, sizeof(why), "a part file was left: %s or %s", l->tpart, l->lpart);
    else
        return NULL;
    return why;
}

typedef struct nobody_run {
    int (*fn)(const tlinks_t *l);
    const tlinks_t *l;
} nobody_run_t;

static int as_nobody(int index, void *arg)
{
    const nobody_run_t *r = arg;
    (void)index;
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
        return 99;
    return r->fn(r->l);
}

int tlinks_as_nobody(int (*fn)(const tlinks_t *l), const tlinks_t *l, double timeout_s)
{
    nobody_run_t r = {fn, l};
    int status = -1;
    tproc_fork_all(1, as_nobody, &r, timeout_s, &status);
    return status;
}

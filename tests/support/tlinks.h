/*
 * Test helper: a scratch tree for the tests of an output file given as a
 * symbolic link (tests/tools/test_out_file.c for gmux,
 * test_calibrate_trace.c for gmux-calibrate): top/a holds the link, top/b
 * its target, both reachable by an unprivileged user, so that a folder made
 * read-only refuses a writer that is not root.
 *
 * Thread-safety: none (one tree per test, set up and removed by its thread).
 */
#ifndef GMUX_TESTS_TLINKS_H
#define GMUX_TESTS_TLINKS_H

typedef struct tlinks {
    char top[64];     /* mkdtemp of /tmp/gmux-links-XXXXXX, 0755 */
    char a[80];       /* top/a, 0777: holds link */
    char b[80];       /* top/b, 0755: holds target */
    char link[128];   /* a/link, not made */
    char target[128]; /* b/NAME (NAME cut at 40 bytes), not made */
    char tpart[144];  /* target's part, target.part~ */
    char lpart[144];  /* link.part~, where no part belongs */
} tlinks_t;

/* Makes the tree, target named name: 0, or -1 (said on stderr). */
int tlinks_make(tlinks_t *l, const char *name);

/* Removes the tree (b made writable again first): 0, or -1. */
int tlinks_remove(const tlinks_t *l);

/* After a write through l->link: NULL when the link is still a link and
 * no part is left beside it or its target; else what is wrong (static). */
const char *tlinks_check(const tlinks_t *l);

/* Runs fn(l) in a child that drops root (to uid and gid 65534: a root user
 * writes anywhere); its status as tproc_fork_all gives it. */
int tlinks_as_nobody(int (*fn)(const tlinks_t *l), const tlinks_t *l, double timeout_s);

#endif

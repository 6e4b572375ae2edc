/*
 * gmux-calibrate's --chain-trace file (tools/calibrate/trace_out.c), in
 * process: the program itself reaches the rename only after a GPU run, so
 * its part file is tested here, where no GPU or nvcc is needed. An earlier
 * FILE replaced keeps its permission bits (until 2026-12-03 it got
 * 0666 & ~umask, as a new file does), and SIGINT or SIGTERM before the
 * rename removes FILE.part~ (until 2026-12-03 it was left behind). A FILE
 * given as a symbolic link is kept and the file it names replaced, as gmux
 * does (common/out_target.h; below, test_link_to_file and after).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tlinks.h"
#include "tproc.h"
#include "trace_out.h"

typedef struct dir {
    char path[64], file[96], part[112], link[96];
} dir_t;

static int setup(void **state)
{
    dir_t *d = calloc(1, sizeof(*d));
    assert_non_null(d);
    snprintf(d->path, sizeof(d->path), "/tmp/gmux-calib-trace-XXXXXX");
    assert_non_null(mkdtemp(d->path));
    snprintf(d->file, sizeof(d->file), "%s/chain.txt", d->path);
    snprintf(d->part, sizeof(d->part), "%s.part~", d->file);
    snprintf(d->link, sizeof(d->link), "%s/link", d->path);
    *state = d;
    return 0;
}

static int teardown(void **state)
{
    dir_t *d = *state;
    unlink(d->file);
    unlink(d->part);
    unlink(d->link);
    rmdir(d->path);
    free(d);
    return 0;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

/* The file's first line, and whether it exists. */
static bool read_line(const char *path, char *line, size_t len)
{
    line[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    if (!fgets(line, (int)len, f))
        line[0] = '\0';
    fclose(f);
    return true;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

/* Writes a complete trace to path. */
static void write_trace(const char *path, const char *text)
{
    int errnum = 0;
    FILE *f = cal_trace_open(path, &errnum);
    if (!f)
        fail_msg("cal_trace_open(%s): %s", path, strerror(errnum));
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(cal_trace_close(f), 0);
}

/* A FILE replaced keeps its permission bits, whatever the umask would give
 * a new one (here 0644, 0600 or 0640); a new FILE gets 0666 & ~umask. */
static void test_replace_keeps_mode(void **state)
{
    dir_t *d = *state;
    mode_t old_umask = umask(022);
    static const mode_t modes[] = {0600, 0640, 0604, 0444};
    for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
        write_file(d->file, "an earlier trace\n", modes[k]);
        write_trace(d->file, "gmux-trace 1\n");
        char line[64];
        assert_true(read_line(d->file, line, sizeof(line)));
        assert_string_equal(line, "gmux-trace 1\n");
        if (mode_of(d->file) != modes[k])
            fail_msg("a FILE of mode %04o replaced: mode %04o", (unsigned)modes[k],
                     (unsigned)mode_of(d->file));
        assert_false(exists(d->part));
        assert_int_equal(unlink(d->file), 0);
    }
    /* through a link: the file it names is replaced, keeping its mode, and
     * the link stays a link */
    write_file(d->file, "an earlier trace\n", 0600);
    assert_int_equal(symlink(d->file, d->link), 0);
    write_trace(d->link, "gmux-trace 1\n");
    assert_int_equal(mode_of(d->file), 0600);
    struct stat st;
    assert_int_equal(lstat(d->link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(unlink(d->file), 0);
    /* a new FILE: the umask's */
    umask(027);
    write_trace(d->file, "gmux-trace 1\n");
    assert_int_equal(mode_of(d->file), 0640);
    umask(old_umask);
}

static dir_t *stopped_dir;

/* Child: opens the trace, writes part of it, and is stopped by the signal
 * index names. */
static int open_then_signal(int index, void *arg)
{
    int sig = *(const int *)arg;
    (void)index;
    int errnum = 0;
    FILE *f = cal_trace_open(stopped_dir->file, &errnum);
    if (!f || fputs("gmux-trace 1\n", f) < 0 || fflush(f) != 0 || !exists(stopped_dir->part))
        return 3;
    raise(sig);
    return 4; /* the signal did not end the process */
}

/* SIGINT or SIGTERM before the rename removes the part and ends the
 * process by that signal (as its shell expects); the earlier FILE stays. */
static void test_signal_removes_part(void **state)
{
    dir_t *d = *state;
    stopped_dir = d;
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
        write_file(d->file, "an earlier trace\n", 0644);
        int status = 0;
        int sig = sigs[k];
        tproc_fork_all(1, open_then_signal, &sig, 30.0, &status);
        if (status != 128 + sig)
            fail_msg("signal %d: child status %d, not %d", sig, status, 128 + sig);
        if (exists(d->part))
            fail_msg("signal %d: %s left behind", sig, d->part);
        char line[64];
        assert_true(read_line(d->file, line, sizeof(line)));
        assert_string_equal(line, "an earlier trace\n");
    }
}

/* /dev/null (through a link) is written in place: no part, nothing removed. */
static void test_not_regular_in_place(void **state)
{
    dir_t *d = *state;
    assert_int_equal(symlink("/dev/null", d->link), 0);
    write_trace(d->link, "gmux-trace 1\n");
    assert_true(exists(d->link));
    char part[128];
    snprintf(part, sizeof(part), "%s.part~", d->link);
    assert_false(exists(part));
    assert_false(exists("/dev/null.part~"));
}

/* A run that failed (a CUDA call) closes its trace with cal_trace_abort:
 * the stream is closed (its descriptor too), the part removed, the earlier
 * FILE as it was, and SIGTERM's disposition as before the trace. Until
 * 2026-12-03 gmux-calibrate exited with the stream open and the handlers
 * installed, leaving the part to an atexit handler. */
static void test_abort_closes_and_removes(void **state)
{
    dir_t *d = *state;
    write_file(d->file, "an earlier trace\n", 0644);
    struct sigaction before, after;
    assert_int_equal(sigaction(SIGTERM, NULL, &before), 0);
    int errnum = 0;
    FILE *f = cal_trace_open(d->file, &errnum);
    assert_non_null(f);
    assert_true(fputs("gmux-trace 1\n", f) >= 0);
    assert_int_equal(fflush(f), 0);
    assert_true(exists(d->part));
    int fd = fileno(f);
    cal_trace_abort(f);
    errno = 0;
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    assert_int_equal(errno, EBADF);
    assert_false(exists(d->part));
    char line[64];
    assert_true(read_line(d->file, line, sizeof(line)));
    assert_string_equal(line, "an earlier trace\n");
    assert_int_equal(sigaction(SIGTERM, NULL, &after), 0);
    assert_ptr_equal((void *)after.sa_handler, (void *)before.sa_handler);
}

/* A FILE given as a symbolic link: the link stays, the file it names (its
 * target, a relative one read from the link's folder) is written as
 * TARGET.part~ beside it and renamed over it. Until 2026-12-03 a dangling
 * link, or a loop of links, was replaced by a regular file (the link lost),
 * and the part of a dangling link went to the link's folder. */
typedef tlinks_t links_t;

static int links_setup(void **state)
{
    links_t *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    assert_int_equal(tlinks_make(l, "chain.txt"), 0);
    *state = l;
    return 0;
}

static int links_teardown(void **state)
{
    links_t *l = *state;
    int rc = tlinks_remove(l);
    free(l);
    return rc;
}

/* After a run through l->link: the link is still one, no part left. */
static void link_kept_no_part(const links_t *l)
{
    const char *why = tlinks_check(l);
    if (why)
        fail_msg("%s", why);
}

/* A link to an existing file (absolute, then relative to the link's
 * folder): the file is replaced and keeps its mode. */
static void test_link_to_file(void **state)
{
    links_t *l = *state;
    static const char *const targets[] = {NULL, "../b/chain.txt"};
    for (size_t k = 0; k < 2; k++) {
        write_file(l->target, "an earlier trace\n", 0604);
        assert_int_equal(symlink(targets[k] ? targets[k] : l->target, l->link), 0);
        write_trace(l->link, "gmux-trace 1\n");
        link_kept_no_part(l);
        char line[64];
        assert_true(read_line(l->target, line, sizeof(line)));
        assert_string_equal(line, "gmux-trace 1\n");
        assert_int_equal(mode_of(l->target), 0604);
        assert_int_equal(unlink(l->link), 0);
        assert_int_equal(unlink(l->target), 0);
    }
}

/* A dangling link (absolute, then relative to the link's folder): its
 * target is created, the link kept. */
static void test_dangling_link_creates_target(void **state)
{
    links_t *l = *state;
    static const char *const targets[] = {NULL, "../b/chain.txt"};
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(symlink(targets[k] ? targets[k] : l->target, l->link), 0);
        write_trace(l->link, "gmux-trace 1\n");
        link_kept_no_part(l);
        char line[64];
        if (!read_line(l->target, line, sizeof(line)))
            fail_msg("a dangling link to %s: its target was not created", l->target);
        assert_string_equal(line, "gmux-trace 1\n");
        assert_int_equal(unlink(l->link), 0);
        assert_int_equal(unlink(l->target), 0);
    }
}

/* Opening path fails with errnum, creating nothing, l->link kept. */
static void open_fails(const links_t *l, const char *path, int errnum)
{
    int e = 0;
    FILE *f = cal_trace_open(path, &e);
    if (f) {
        cal_trace_close(f); /* its signal handlers too */
        fail_msg("cal_trace_open(%s) opened it; wanted: %s", path, strerror(errnum));
    }
    if (e != errnum)
        fail_msg("cal_trace_open(%s): '%s', not '%s'", path, strerror(e), strerror(errnum));
    link_kept_no_part(l);
}

/* A loop of links, and a link to a folder, are errors: nothing written. */
static void test_link_loop_and_folder(void **state)
{
    links_t *l = *state;
    char other[96];
    snprintf(other, sizeof(other), "%s/other", l->a);
    assert_int_equal(symlink("other", l->link), 0);
    assert_int_equal(symlink("link", other), 0);
    open_fails(l, l->link, ELOOP);
    struct stat st;
    assert_int_equal(lstat(other, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(unlink(l->link), 0);
    assert_int_equal(symlink(l->b, l->link), 0);
    open_fails(l, l->link, EISDIR);
}

/* As uid 65534: opens the trace through the link into the read-only
 * folder; 0 when refused with EACCES. */
static int open_read_only(const tlinks_t *l)
{
    int e = 0;
    FILE *f = cal_trace_open(l->link, &e);
    if (f) {
        cal_trace_close(f);
        return 4;
    }
    return e == EACCES ? 0 : 5;
}

/* A target in a folder that cannot be written: an error, the target as it
 * was, its mode too. */
static void test_read_only_target_folder(void **state)
{
    links_t *l = *state;
    write_file(l->target, "an earlier trace\n", 0644);
    assert_int_equal(symlink(l->target, l->link), 0);
    assert_int_equal(chmod(l->b, 0555), 0);
    int status = tlinks_as_nobody(open_read_only, l, 30.0);
    if (status != 0)
        fail_msg("through a link into a read-only folder: child status %d, not 0", status);
    link_kept_no_part(l);
    char line[64];
    assert_true(read_line(l->target, line, sizeof(line)));
    assert_string_equal(line, "an earlier trace\n");
    assert_int_equal(mode_of(l->target), 0644);
}

static links_t *signal_links;

/* Child: opens the trace through the link, writes part of it, checks that
 * the part is beside the target, and is stopped by SIGTERM. */
static int open_link_then_signal(int index, void *arg)
{
    (void)index;
    (void)arg;
    int errnum = 0;
    FILE *f = cal_trace_open(signal_links->link, &errnum);
    if (!f || fputs("gmux-trace 1\n", f) < 0 || fflush(f) != 0)
        return 3;
    if (!exists(signal_links->tpart))
        return 4; /* not beside the target */
    raise(SIGTERM);
    return 5;
}

/* SIGTERM during the write through a link (to a file, then dangling): no
 * part left in the target's folder, the target as it was. */
static void test_signal_through_link(void **state)
{
    links_t *l = *state;
    signal_links = l;
    assert_int_equal(symlink(l->target, l->link), 0);
    for (int dangling = 0; dangling < 2; dangling++) {
        if (!dangling)
            write_file(l->target, "an earlier trace\n", 0644);
        int status = 0;
        tproc_fork_all(1, open_link_then_signal, NULL, 30.0, &status);
        if (status != 128 + SIGTERM)
            fail_msg("%s link: child status %d, not %d", dangling ? "dangling" : "a", status,
                     128 + SIGTERM);
        link_kept_no_part(l);
        char line[64];
        if (dangling) {
            assert_false(exists(l->target));
        } else {
            assert_true(read_line(l->target, line, sizeof(line)));
            assert_string_equal(line, "an earlier trace\n");
            assert_int_equal(unlink(l->target), 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replace_keeps_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_removes_part, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_regular_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_closes_and_removes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_to_file, links_setup, links_teardown),
        cmocka_unit_test_setup_teardown(test_dangling_link_creates_target, links_setup,
                                        links_teardown),
        cmocka_unit_test_setup_teardown(test_link_loop_and_folder, links_setup, links_teardown),
        cmocka_unit_test_setup_teardown(test_read_only_target_folder, links_setup, links_teardown),
        cmocka_unit_test_setup_teardown(test_signal_through_link, links_setup, links_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

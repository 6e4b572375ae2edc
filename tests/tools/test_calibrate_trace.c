/*
 * gmux-calibrate's --chain-trace file (tools/calibrate/trace_out.c), in
 * process: the program itself reaches the rename only after a GPU run, so
 * its part file is tested here, where no GPU or nvcc is needed. An earlier
 * FILE replaced keeps its permission bits (until 2026-12-03 it got
 * 0666 & ~umask, as a new file does), and SIGINT or SIGTERM before the
 * rename removes FILE.part~ (until 2026-12-03 it was left behind).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replace_keeps_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_removes_part, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_regular_in_place, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * gmux's output files given as a symbolic link (tools/gmux/out_file.c over
 * src/common/out_target.c), run as a user runs `gmux trace convert IN LINK`
 * and `gmux trace generate -o LINK`: the link stays, and the file it names
 * (a relative target read from the link's folder) is written as
 * TARGET.part~ beside it and renamed over it once complete, keeping its
 * mode. A dangling link's target is created so too. A loop of links, a link
 * to a folder, and a target in a folder that cannot be written are one
 * line naming the file, exit 1, with nothing written and nothing lost.
 * Until 2026-12-03 a dangling link was written in place: a convert that
 * failed, or gmux killed while it wrote, left a half-written target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tlinks.h"
#include "tproc.h"

static char out[16384], err[16384];

static const char good[] = "gmux-trace 1\ntask 0 a\nkernel 0 k\nalloc 0 1 0x200000 2097152\n"
                           "launch 0 0 grid=1,1,1 block=1,1,1 ns=1000 args=p:0x200000 "
                           "touch=r:0x200000+4096\nend\n";

/* The tree of tlinks.h (links in a/, targets in b/), and the inputs in
 * its top folder. */
typedef struct links {
    tlinks_t t;
    char link[128], target[128], in[96], bad[96];
} links_t;

static void put_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static void assert_file(const char *path, const char *text)
{
    char buf[512] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, text);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int setup(void **state)
{
    links_t *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    assert_int_equal(tlinks_make(&l->t, "t.txt"), 0);
    memcpy(l->link, l->t.link, sizeof(l->link));
    memcpy(l->target, l->t.target, sizeof(l->target));
    snprintf(l->in, sizeof(l->in), "%s/in.txt", l->t.top);
    snprintf(l->bad, sizeof(l->bad), "%s/bad.txt", l->t.top);
    put_file(l->in, good, 0644);
    /* the same trace, cut inside its last event */
    put_file(l->bad,
             "gmux-trace 1\ntask 0 a\nkernel 0 k\nalloc 0 1 0x200000 0x200000\n"
             "launch 0 0 grid=1,1,1 block=1,1,1 ns=1000 args=p:0x200000 touch=r:0x2",
             0644);
    *state = l;
    return 0;
}

static int teardown(void **state)
{
    links_t *l = *state;
    int rc = tlinks_remove(&l->t);
    free(l);
    return rc;
}

/* gmux trace convert in OUT --format text: its exit status; out, err. */
static int convert(const char *in, const char *to)
{
    const char *args[] = {"convert", in, to, "--format", "text", NULL};
    return tproc_capture_sub(GMUX_CLI_PATH, "trace", args, 60.0, out, sizeof(out), err,
                             sizeof(err));
}

/* After a run through l->link: the link is still one, no part left. */
static void link_kept_no_part(const links_t *l)
{
    const char *why = tlinks_check(&l->t);
    if (why)
        fail_msg("%s", why);
}

static const char *const targets[] = {NULL, "../b/t.txt"}; /* NULL: l->target */

/* A link to a file (absolute, then relative): the file is replaced, with
 * its mode; a convert that fails leaves it as it was. */
static void test_link_to_file(void **state)
{
    links_t *l = *state;
    for (size_t k = 0; k < 2; k++) {
        put_file(l->target, "precious", 0604);
        assert_int_equal(symlink(targets[k] ? targets[k] : l->target, l->link), 0);
        assert_int_equal(convert(l->bad, l->link), 1);
        link_kept_no_part(l);
        assert_file(l->target, "precious");
        assert_int_equal(convert(l->in, l->link), 0);
        link_kept_no_part(l);
        assert_file(l->target, good);
        struct stat st;
        assert_int_equal(stat(l->target, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0604);
        assert_int_equal(unlink(l->link), 0);
        assert_int_equal(unlink(l->target), 0);
    }
}

/* A dangling link (absolute, then relative): a convert that fails creates
 * nothing; one that succeeds creates the target, the link kept. */
static void test_dangling_link(void **state)
{
    links_t *l = *state;
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(symlink(targets[k] ? targets[k] : l->target, l->link), 0);
        assert_int_equal(convert(l->bad, l->link), 1);
        link_kept_no_part(l);
        if (exists(l->target))
            fail_msg("a failed convert to a dangling link left %s", l->target);
        assert_int_equal(convert(l->in, l->link), 0);
        link_kept_no_part(l);
        assert_file(l->target, good);
        assert_int_equal(unlink(l->link), 0);
        assert_int_equal(unlink(l->target), 0);
    }
}

/* A part that cannot be made (a folder in its place, not empty: gmux
 * removes a part it could not complete), through a link to a
 * file, then a dangling one: exit 1, the message naming the link and what
 * became of its target, left as it was or nothing written. Until
 * 2026-12-04 the dangling link's said "(left as it was)" too, of a file
 * that was never there. */
static void test_write_fails_through_link(void **state)
{
    links_t *l = *state;
    for (int dangling = 0; dangling < 2; dangling++) {
        if (!dangling)
            put_file(l->target, "precious", 0644);
        assert_int_equal(symlink(l->target, l->link), 0);
        char inside[160];
        snprintf(inside, sizeof(inside), "%s/x", l->t.tpart);
        assert_int_equal(mkdir(l->t.tpart, 0755), 0);
        put_file(inside, "x", 0644);
        assert_int_equal(convert(l->in, l->link), 1);
        char want[512];
        snprintf(want, sizeof(want), "gmux trace: %s: %s (%s)\n", l->link, strerror(EISDIR),
                 dangling ? "nothing written" : "left as it was");
        assert_string_equal(err, want);
        assert_int_equal(unlink(inside), 0);
        assert_int_equal(rmdir(l->t.tpart), 0);
        link_kept_no_part(l);
        if (dangling && exists(l->target))
            fail_msg("a failed convert to a dangling link left %s", l->target);
        if (!dangling) {
            assert_file(l->target, "precious");
            assert_int_equal(unlink(l->target), 0);
        }
        assert_int_equal(unlink(l->link), 0);
    }
}

/* err is one line: "gmux trace: cannot write PATH: " and the reason. */
static void said_cannot_write(const char *path, int errnum)
{
    char want[256];
    snprintf(want, sizeof(want), "gmux trace: cannot write %s: %s\n", path, strerror(errnum));
    assert_string_equal(err, want);
}

/* A loop of links, and a link to a folder: one line naming the link, exit
 * 1, nothing written. */
static void test_link_loop_and_folder(void **state)
{
    links_t *l = *state;
    char other[96];
    snprintf(other, sizeof(other), "%s/other", l->t.a);
    assert_int_equal(symlink("other", l->link), 0);
    assert_int_equal(symlink("link", other), 0);
    assert_int_equal(convert(l->in, l->link), 1);
    said_cannot_write(l->link, ELOOP);
    link_kept_no_part(l);
    assert_int_equal(unlink(l->link), 0);
    assert_int_equal(symlink(l->t.b, l->link), 0);
    assert_int_equal(convert(l->in, l->link), 1);
    said_cannot_write(l->link, EISDIR);
    link_kept_no_part(l);
}

/* A dangling link into a folder that is not there (absolute, then
 * relative): one line naming the link and that folder, as gmux run names
 * the folder of --stats; nothing made. Until 2026-12-04 it said
 * "gmux trace: LINK: No such file or directory", the folder unnamed. */
static void test_dangling_link_missing_folder(void **state)
{
    links_t *l = *state;
    char abs_to[128], abs_dir[96], rel_dir[128];
    snprintf(abs_dir, sizeof(abs_dir), "%s/c", l->t.top);
    snprintf(abs_to, sizeof(abs_to), "%s/t.txt", abs_dir);
    snprintf(rel_dir, sizeof(rel_dir), "%s/../c", l->t.a);
    const char *to[] = {abs_to, "../c/t.txt"}, *folder[] = {abs_dir, rel_dir};
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(symlink(to[k], l->link), 0);
        assert_int_equal(convert(l->in, l->link), 1);
        char want[512];
        snprintf(want, sizeof(want), "gmux trace: cannot write %s: %s: %s\n", l->link, folder[k],
                 strerror(ENOENT));
        assert_string_equal(err, want);
        link_kept_no_part(l);
        assert_false(exists(abs_dir));
        assert_int_equal(unlink(l->link), 0);
    }
}

static const links_t *read_only_links;

/* As uid 65534: converts through the link into the read-only folder; 0
 * when refused as wanted. */
static int convert_read_only(const tlinks_t *t)
{
    (void)t;
    const links_t *l = read_only_links;
    if (convert(l->in, l->link) != 1)
        return 4;
    if (!strstr(err, l->link) || !strstr(err, strerror(EACCES)) || strstr(err, "part~"))
        return 5;
    return 0;
}

/* A target in a folder that cannot be written: an error naming the link,
 * the target as it was. */
static void test_read_only_target_folder(void **state)
{
    links_t *l = *state;
    put_file(l->target, "precious", 0644);
    assert_int_equal(symlink(l->target, l->link), 0);
    assert_int_equal(chmod(l->t.b, 0555), 0);
    read_only_links = l;
    int status = tlinks_as_nobody(convert_read_only, &l->t, 90.0);
    if (status != 0)
        fail_msg("convert through a link into a read-only folder: child status %d, not 0", status);
    link_kept_no_part(l);
    assert_file(l->target, "precious");
}

/* gmux trace generate -o LINK stopped by SIGTERM while it writes (to a
 * link to a file, then to a dangling link): no part in the target's folder,
 * the target as it was (none for the dangling link). The part is made a
 * FIFO beside the target, so that the writer is caught mid-write. */
static void test_signal_through_link(void **state)
{
    links_t *l = *state;
    assert_int_equal(symlink("../b/t.txt", l->link), 0);
    char *argv[] = {GMUX_CLI_PATH, "trace", "generate", "--workload", "sci-sparse",
                    "--format",    "text",  "-o",       l->link,      NULL};
    for (int dangling = 0; dangling < 2; dangling++) {
        if (!dangling)
            put_file(l->target, "keep\n", 0644);
        int written = 0;
        int status = tproc_stop_once_written(argv, l->t.tpart, 30.0, &written);
        if (status != 128 + SIGTERM || !written)
            fail_msg("%s link: status %d (not %d), bytes in %s: %d", dangling ? "dangling" : "a",
                     status, 128 + SIGTERM, l->t.tpart, written);
        link_kept_no_part(l);
        if (dangling) {
            if (exists(l->target))
                fail_msg("an interrupted write to a dangling link left %s", l->target);
        } else {
            assert_file(l->target, "keep\n");
            assert_int_equal(unlink(l->target), 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_link_to_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dangling_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_fails_through_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_loop_and_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dangling_link_missing_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_target_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_through_link, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

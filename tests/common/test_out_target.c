/*
 * Where an output file is written (src/common/out_target.c), in process:
 * links followed to the file they name, relative ones from the link's
 * folder (a bare name too), up to COM_OUT_MAX_LINKS and no further; what is
 * written in place; a tagged part's name; a rename that fails removes the part and says so. The
 * writers' behaviour through links: tests/tools/test_out_file.c (gmux) and
 * test_calibrate_trace.c (gmux-calibrate).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/out_target.h"
#include "tdir.h"

static char dir[] = "/tmp/gmux-out-target-XXXXXX";

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
}

/* A chain of links given by a bare name (no folder in it): each relative
 * target read from the link's folder; the part beside the last file. */
static void test_chain_from_bare_name(void **state)
{
    (void)state;
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(dir), 0);
    assert_int_equal(mkdir("sub", 0755), 0);
    touch("sub/file");
    assert_int_equal(chmod("sub/file", 0640), 0);
    assert_int_equal(symlink("file", "sub/l2"), 0); /* relative to sub/ */
    assert_int_equal(symlink("sub/l2", "l1"), 0);
    com_out_t o;
    assert_int_equal(com_out_resolve("l1", &o), 0);
    assert_string_equal(o.file, "sub/file");
    assert_string_equal(o.part, "sub/file.part~");
    assert_int_equal(o.mode, 0640);
    assert_true(o.exists);
    assert_true(com_out_replaces(&o));
    assert_string_equal(com_out_dst(&o), "sub/file.part~");
    /* nothing at all: a new file, no mode to keep */
    assert_int_equal(com_out_resolve("new", &o), 0);
    assert_string_equal(o.file, "new");
    assert_int_equal(o.mode, -1);
    assert_false(o.exists);
    /* tagged (libgmux.so's pid): its own part beside the file; a tag too long
     * is refused */
    assert_int_equal(com_out_resolve_tagged("l1", "4242", &o), 0);
    assert_string_equal(o.file, "sub/file");
    assert_string_equal(o.part, "sub/file.4242.part~");
    assert_int_equal(com_out_resolve_tagged("l1", "", &o), 0);
    assert_string_equal(o.part, "sub/file.part~");
    assert_int_equal(com_out_resolve_tagged("l1", "123456789012345678901", &o), ENAMETOOLONG);
    assert_int_equal(chdir(cwd), 0);
}

/* COM_OUT_MAX_LINKS links are followed; one more is a loop (ELOOP), o
 * untouched. */
static void test_links_bounded(void **state)
{
    (void)state;
    char name[PATH_MAX], to[PATH_MAX];
    snprintf(name, sizeof(name), "%s/end", dir);
    touch(name);
    for (int k = 0; k <= COM_OUT_MAX_LINKS; k++) {
        snprintf(name, sizeof(name), "%s/n%d", dir, k);
        if (k == 0)
            snprintf(to, sizeof(to), "end");
        else
            snprintf(to, sizeof(to), "n%d", k - 1);
        assert_int_equal(symlink(to, name), 0);
    }
    com_out_t o;
    snprintf(name, sizeof(name), "%s/n%d", dir, COM_OUT_MAX_LINKS - 1);
    assert_int_equal(com_out_resolve(name, &o), 0);
    snprintf(to, sizeof(to), "%s/end", dir);
    assert_string_equal(o.file, to);
    memset(&o, 0x5a, sizeof(o));
    snprintf(name, sizeof(name), "%s/n%d", dir, COM_OUT_MAX_LINKS);
    assert_int_equal(com_out_resolve(name, &o), ELOOP);
    assert_int_equal((unsigned char)o.file[0], 0x5a);
}

/* A FIFO (through a link) is written in place: no part; /dev/null alike.
 * A path too long is said so. */
static void test_in_place_and_too_long(void **state)
{
    (void)state;
    char fifo[PATH_MAX], link[PATH_MAX];
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    snprintf(link, sizeof(link), "%s/to-fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink("fifo", link), 0);
    com_out_t o;
    assert_int_equal(com_out_resolve(link, &o), 0);
    assert_false(com_out_replaces(&o));
    assert_string_equal(com_out_dst(&o), fifo);
    assert_int_equal(com_out_finish(&o, true, NULL), 0); /* nothing to do */
    assert_int_equal(com_out_resolve("/dev/null", &o), 0);
    assert_false(com_out_replaces(&o));
    char *longer = malloc(PATH_MAX + 2);
    assert_non_null(longer);
    memset(longer, 'a', PATH_MAX + 1);
    longer[PATH_MAX + 1] = '\0';
    assert_int_equal(com_out_resolve(longer, &o), ENAMETOOLONG);
    free(longer);
}

/* A path of len bytes (folders of 99 bytes, none there) into buf. */
static void long_path(char *buf, size_t len)
{
    memset(buf, 'd', len);
    buf[0] = '/';
    for (size_t i = 100; i < len - 1; i += 100)
        buf[i] = '/';
    buf[len] = '\0';
}

/* A part is a path every call takes (below PATH_MAX bytes, its NUL
 * included): a FILE whose FILE.part~ or FILE.TAG.part~ would be longer is
 * refused (ENAMETOOLONG), o untouched. Until 2026-12-04 its part was named
 * up to COM_OUT_PART_MAX bytes: open() refused it later, and partguard
 * (PATH_MAX + 8 bytes) would not have guarded the longest. */
static void test_part_fits_a_path(void **state)
{
    (void)state;
    static const size_t part_len = sizeof(".part~") - 1;
    char *p = malloc(PATH_MAX);
    assert_non_null(p);
    com_out_t o;
    long_path(p, PATH_MAX - 1 - part_len); /* the longest: a part of PATH_MAX - 1 */
    assert_int_equal(com_out_resolve(p, &o), 0);
    assert_int_equal(strlen(o.part), PATH_MAX - 1);
    long_path(p, PATH_MAX - part_len);
    memset(&o, 0x5a, sizeof(o));
    assert_int_equal(com_out_resolve(p, &o), ENAMETOOLONG);
    assert_int_equal((unsigned char)o.file[0], 0x5a);
    long_path(p, PATH_MAX - 3);
    assert_int_equal(com_out_resolve(p, &o), ENAMETOOLONG);
    /* a pid's tag: ".4242" more */
    long_path(p, PATH_MAX - 1 - part_len - 5);
    assert_int_equal(com_out_resolve_tagged(p, "4242", &o), 0);
    assert_int_equal(strlen(o.part), PATH_MAX - 1);
    assert_int_equal(com_out_resolve_tagged(p, "42424", &o), ENAMETOOLONG);
    assert_int_equal(com_out_resolve_tagged(p, "12345678901234567890", &o), ENAMETOOLONG);
    free(p);
}

/* The folder a part is made in, named for the message: a bare name's is
 * ".", a missing one ENOENT, a file on the way ENOTDIR. */
static void test_folder_check(void **state)
{
    (void)state;
    char path[PATH_MAX], want[PATH_MAX], got[PATH_MAX];
    com_out_t o;
    assert_int_equal(com_out_resolve("bare", &o), 0);
    assert_int_equal(com_out_folder_check(&o, got), access(".", W_OK | X_OK) == 0 ? 0 : EACCES);
    assert_string_equal(got, ".");
    snprintf(path, sizeof(path), "%s/gone/f", dir);
    snprintf(want, sizeof(want), "%s/gone", dir);
    assert_int_equal(com_out_resolve(path, &o), 0);
    assert_int_equal(com_out_folder_check(&o, got), ENOENT);
    assert_string_equal(got, want);
    snprintf(want, sizeof(want), "%s/plain", dir);
    touch(want);
    snprintf(path, sizeof(path), "%s/plain/f", dir);
    assert_int_equal(com_out_resolve(path, &o), ENOTDIR); /* lstat says it first */
    snprintf(o.file, sizeof(o.file), "%s", path);
    assert_int_equal(com_out_folder_check(&o, got), ENOTDIR);
    assert_string_equal(got, want);
    snprintf(o.file, sizeof(o.file), "%s", dir);
    assert_int_equal(com_out_folder_check(&o, got), 0);
    assert_string_equal(got, "/tmp");
}

/* A rename that fails (a folder made at FILE meanwhile) removes the part
 * and names the call; an incomplete part is removed, FILE untouched. */
static void test_finish_failures(void **state)
{
    (void)state;
    char file[PATH_MAX], inner[PATH_MAX + 8];
    snprintf(file, sizeof(file), "%s/late", dir);
    com_out_t o;
    assert_int_equal(com_out_resolve(file, &o), 0);
    touch(o.part);
    assert_int_equal(com_out_finish(&o, false, NULL), 0);
    assert_int_not_equal(access(o.part, F_OK), 0);
    assert_int_not_equal(access(file, F_OK), 0);
    touch(o.part);
    assert_int_equal(mkdir(file, 0755), 0);
    snprintf(inner, sizeof(inner), "%s/x", file);
    touch(inner);
    const char *call = NULL;
    int e = com_out_finish(&o, true, &call);
    assert_true(e == EISDIR || e == ENOTEMPTY || e == EEXIST);
    assert_non_null(call);
    assert_string_equal(call, "rename()");
    assert_int_not_equal(access(o.part, F_OK), 0);
}

/* A folder the user keeps under the part's name is never removed: a write
 * that could not open its part leaves it as it was. */
static void test_finish_keeps_a_folder(void **state)
{
    (void)state;
    char file[PATH_MAX];
    snprintf(file, sizeof(file), "%s/kept", dir);
    com_out_t o;
    assert_int_equal(com_out_resolve(file, &o), 0);
    assert_int_equal(mkdir(o.part, 0755), 0);
    assert_int_equal(com_out_finish(&o, false, NULL), 0);
    struct stat sb;
    assert_int_equal(stat(o.part, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(rmdir(o.part), 0);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_from_bare_name),  cmocka_unit_test(test_links_bounded),
        cmocka_unit_test(test_in_place_and_too_long), cmocka_unit_test(test_part_fits_a_path),
        cmocka_unit_test(test_folder_check),          cmocka_unit_test(test_finish_failures),
        cmocka_unit_test(test_finish_keeps_a_folder),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}

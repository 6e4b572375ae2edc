/* Tests of `gmux trace` as a user runs it: generate, convert, show, errors, help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tproc.h"

static char out[65536], err[16384];

static int gmux(const char *a0, const char *a1, const char *a2, const char *a3, const char *a4,
                const char *a5, const char *a6, const char *a7)
{
    char *argv[] = {GMUX_CLI_PATH, "trace",    (char *)a0, (char *)a1, (char *)a2, (char *)a3,
                    (char *)a4,    (char *)a5, (char *)a6, (char *)a7, NULL};
    return tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err));
}

static void tmp(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "/tmp/gmux-cli-%s-XXXXXX", tag);
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

static void test_help_and_live_recording(void **state)
{
    (void)state;
    assert_int_equal(gmux("--help", 0, 0, 0, 0, 0, 0, 0), 0);
    assert_non_null(strstr(out, "gmux trace generate"));
    assert_non_null(strstr(out, "-o FILE -- CMD"));
    assert_non_null(strstr(out, "llm-decode"));
    assert_non_null(strstr(out, "instances=8"));
    assert_int_equal(gmux("--", "ls", 0, 0, 0, 0, 0, 0), 2);
    assert_non_null(strstr(err, "recording needs -o FILE")); /* recording: tests/shim */
    assert_int_equal(gmux("frob", 0, 0, 0, 0, 0, 0, 0), 2);
    assert_non_null(strstr(err, "'frob'"));
}

static void test_generate_convert_show(void **state)
{
    (void)state;
    char t[64], b[64], t2[64];
    tmp(t, sizeof(t), "t");
    tmp(b, sizeof(b), "b");
    tmp(t2, sizeof(t2), "t2");
    assert_int_equal(
        gmux("generate", "--workload", "sci-stencil", "--set", "nz=64", "--format", "text", "-o"),
        2); /* -o without a value */
    assert_int_equal(
        gmux("generate", "--workload", "sci-stencil", "--set", "nz=64", "-o", t, "--format"), 2);
    char *argv[] = {GMUX_CLI_PATH, "trace", "generate", "--workload", "sci-stencil", "--set",
                    "nz=64",       "--set", "slab=16",  "--set",      "tasks=2",     "--format",
                    "text",        "-o",    t,          NULL};
    assert_int_equal(tproc_capture(argv, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 0);
    FILE *f = fopen(t, "r");
    char line[64] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_string_equal(line, "gmux-trace 1\n");
    assert_int_equal(gmux("convert", t, t, 0, 0, 0, 0, 0), 2); /* would truncate its input */
    assert_non_null(strstr(err, "same file"));
    assert_int_equal(gmux("convert", t, b, 0, 0, 0, 0, 0), 0);
    assert_int_equal(gmux("convert", b, t2, 0, 0, 0, 0, 0), 0);
    assert_int_equal(gmux("show", b, 0, 0, 0, 0, 0, 0), 0);
    assert_non_null(strstr(out, "sci-stencil.0"));
    assert_non_null(strstr(out, "sci-stencil.1"));
    assert_non_null(strstr(out, "peak"));
    /* 64 planes / 16 per slab = 4 slabs x 4 launches x 20 sweeps */
    assert_non_null(strstr(out, "320"));
    assert_int_equal(gmux("show", t2, 0, 0, 0, 0, 0, 0), 0);
    /* bad settings and workloads are usage errors naming the word */
    assert_int_equal(gmux("generate", "--workload", "sci-stencil", "--set", "frob=1", "-o", b, 0),
                     2);
    assert_non_null(strstr(err, "'frob'"));
    assert_int_equal(gmux("generate", "--workload", "nope", "-o", b, 0, 0, 0), 2);
    assert_non_null(strstr(err, "'nope'"));
    /* a malformed file: show names the line */
    f = fopen(t, "a");
    fputs("launch 0 99 grid=1,1,1 block=1,1,1 ns=1 args=- touch=-\n", f);
    fclose(f);
    assert_int_equal(gmux("show", t, 0, 0, 0, 0, 0, 0), 1);
    assert_non_null(strstr(err, "record after the 'end' line"));
    assert_int_equal(gmux("convert", t, b, "--format", "binary", 0, 0, 0), 1);
    assert_int_equal(gmux("show", "/nonexistent/x", 0, 0, 0, 0, 0, 0), 1);
    remove(t), remove(b), remove(t2);
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_file(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, text);
}

/* A convert that fails leaves OUT as it was: a regular file keeps its bytes
 * (it was truncated, then deleted, when the input turned out truncated), a
 * symbolic link keeps its target's bytes and itself, and a FIFO (or a device:
 * run as root, a failed convert to /dev/stdout deleted /dev/stdout) is never
 * removed. */
static void test_failed_convert_keeps_out(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-cli-keep-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[128], bad[128], reg[128], link[128], fifo[128], part[160];
    snprintf(in, sizeof(in), "%s/in.txt", dir);
    snprintf(bad, sizeof(bad), "%s/bad.txt", dir);
    snprintf(reg, sizeof(reg), "%s/old.bin", dir);
    snprintf(link, sizeof(link), "%s/link.bin", dir);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    const char *good = "gmux-trace 1\ntask 0 a\nkernel 0 k\nalloc 0 1 0x200000 2097152\n"
                       "launch 0 0 grid=1,1,1 block=1,1,1 ns=1000 args=p:0x200000 "
                       "touch=r:0x200000+4096\nend\n";
    put_file(in, good);
    /* the same trace, cut inside its last event */
    put_file(bad, "gmux-trace 1\ntask 0 a\nkernel 0 k\nalloc 0 1 0x200000 0x200000\n"
                  "launch 0 0 grid=1,1,1 block=1,1,1 ns=1000 args=p:0x200000 touch=r:0x2");
    put_file(reg, "precious");
    assert_int_equal(gmux("convert", bad, reg, 0, 0, 0, 0, 0), 1);
    assert_non_null(strstr(err, "truncated"));
    assert_file(reg, "precious");
    snprintf(part, sizeof(part), "%s.part~", reg);
    assert_int_equal(access(part, F_OK), -1);
    assert_int_equal(symlink(reg, link), 0);
    assert_int_equal(gmux("convert", bad, link, 0, 0, 0, 0, 0), 1);
    assert_file(reg, "precious");
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    /* success still replaces it, through the link, and keeps its mode (the
     * part file renamed over it had 0666 & ~umask) */
    assert_int_equal(chmod(reg, 0604), 0);
    assert_int_equal(gmux("convert", in, link, "--format", "text", 0, 0, 0), 0);
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_file(reg, good);
    assert_int_equal(stat(reg, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0604);
    /* a binary trace cannot be written to a FIFO (no seeking): the FIFO stays */
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(gmux("convert", in, fifo, "--format", "binary", 0, 0, 0), 1);
    close(rd);
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    unlink(fifo);
    unlink(link);
    unlink(reg);
    unlink(in);
    unlink(bad);
    rmdir(dir);
}

/* A recording whose output cannot be written is refused before the program
 * runs (it ran twice, timing pass and recording pass, then "no complete trace
 * recorded"). */
static void test_record_unwritable_output_first(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-cli-rec-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char marker[128];
    snprintf(marker, sizeof(marker), "%s/ran", dir);
    assert_int_equal(gmux("-o", "/nonexistent/dir/x.bin", "--", "touch", marker, 0, 0, 0), 1);
    assert_non_null(strstr(err, "/nonexistent/dir/x.bin: No such file or directory"));
    assert_null(strstr(err, "pass 1 of 2"));
    assert_int_equal(access(marker, F_OK), -1);
    unlink(marker);
    rmdir(dir);
}

/* A malformed variable the shim reads is reported before anything runs:
 * no "pass 1 of 2" ahead of the error, no run of the program. */
static void test_record_bad_setting_first(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-cli-set-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char marker[128], trace[128];
    snprintf(marker, sizeof(marker), "%s/ran", dir);
    snprintf(trace, sizeof(trace), "%s/x.bin", dir);
    char env[] = "GMUX_BUDGET=lots";
    char *const extra[] = {env, NULL};
    char *argv[] = {GMUX_CLI_PATH, "trace", "-o", trace, "--", "touch", marker, NULL};
    assert_int_equal(tproc_capture(argv, extra, 120.0, out, sizeof(out), err, sizeof(err)), 2);
    assert_non_null(strstr(err, "GMUX_BUDGET='lots'"));
    assert_null(strstr(err, "pass 1 of 2"));
    assert_int_equal(access(marker, F_OK), -1);
    assert_int_equal(access(trace, F_OK), -1);
    unlink(marker);
    rmdir(dir);
}

/* Tasks are address spaces of their own: their peaks add up past 64 bits,
 * and the total saturates and says so (3 x 8 EiB printed as 8.00 EiB). */
static void test_show_total_peak_saturates(void **state)
{
    (void)state;
    char path[64];
    tmp(path, sizeof(path), "peak");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "gmux-trace 1\ntask 0 a\ntask 1 b\ntask 2 c\nkernel 0 k\n");
    for (int t = 0; t < 3; t++)
        fprintf(f, "alloc %d 1 0x1000 0x8000000000000000\n", t);
    fprintf(f, "end\n");
    assert_int_equal(fclose(f), 0);
    assert_int_equal(gmux("show", path, 0, 0, 0, 0, 0, 0), 0);
    const char *total = strstr(out, "\ntotal ");
    assert_non_null(total);
    assert_non_null(strstr(total, ">=16.00 EiB"));
    assert_null(strstr(total, " 8.00 EiB"));
    assert_non_null(strstr(out, "\na ")); /* each task's own peak as it is */
    assert_non_null(strstr(strstr(out, "\na "), " 8.00 EiB"));
    unlink(path);
}

/* gmux trace generate interrupted while it writes: the part file goes with
 * it and FILE stays as it was (a 170 MB FILE.part~ was left behind). The
 * part file is made a FIFO here, so that the writer is caught mid-write
 * whatever the machine's speed: it blocks once the pipe is full (text: the
 * binary writer seeks, which fails on a FIFO). */
static void test_interrupted_generate_leaves_no_part(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-cli-intr-XXXXXX", path[64], part[80];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.bin", dir);
    snprintf(part, sizeof(part), "%s.part~", path);
    put_file(path, "keep\n");
    char *argv[] = {GMUX_CLI_PATH, "trace", "generate", "--workload", "sci-sparse",
                    "--format",    "text",  "-o",       path,         NULL};
    int written;
    assert_int_equal(tproc_stop_once_written(argv, part, 60.0, &written), 128 + SIGTERM);
    assert_true(written); /* the trace's first bytes came before the signal */
    struct stat sb;
    assert_int_not_equal(lstat(part, &sb), 0);
    assert_file(path, "keep\n");
    unlink(part);
    unlink(path);
    rmdir(dir);
}

/* An output that cannot be created is named as the user wrote it: the
 * message named the part file FILE.part~, a name the user never gave. */
static void test_unwritable_output_named(void **state)
{
    (void)state;
    const char *o = "/nonexistent/gmux-dir/t.bin";
    assert_int_equal(gmux("generate", "--workload", "llm-decode", "--set", "tokens=1", "-o", o, 0),
                     1);
    assert_non_null(strstr(err, "gmux trace: /nonexistent/gmux-dir/t.bin: No such file"));
    assert_null(strstr(err, "part~"));
}

/* show of a text trace cut inside a record (and of one cut at a line's end,
 * before its 'end' line) prints no row of a task it could not read whole:
 * it stops at the last whole record, says the file is truncated and after
 * which line, and exits 1, as for a cut binary trace. It printed the header
 * and a row of the events read so far, as if the task were that short. */
static void test_show_truncated_text(void **state)
{
    (void)state;
    char t[64], b[64], cut[64];
    tmp(t, sizeof(t), "t");
    tmp(b, sizeof(b), "b");
    tmp(cut, sizeof(cut), "cut");
    char *gen[] = {GMUX_CLI_PATH, "trace", "generate", "--workload", "sci-stencil",
                   "--set",       "nz=64", "--set",    "slab=16",    "--format",
                   "text",        "-o",    t,          NULL};
    assert_int_equal(tproc_capture(gen, NULL, 120.0, out, sizeof(out), err, sizeof(err)), 0);
    FILE *f = fopen(t, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text), f);
    fclose(f);
    assert_true(n > 2000 && n < sizeof(text));
    for (int at_eol = 0; at_eol < 2; at_eol++) {
        size_t len = n / 2;
        while ((text[len - 1] == '\n') != at_eol) /* inside a line, or just after one */
            len--;
        f = fopen(cut, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        int whole = 0;
        for (size_t i = 0; i < len; i++)
            whole += text[i] == '\n';
        assert_int_equal(gmux("show", cut, 0, 0, 0, 0, 0, 0), 1);
        assert_null(strstr(out, "sci-stencil.0"));
        assert_null(strstr(out, "total"));
        char want[64];
        snprintf(want, sizeof(want), "truncated after line %d", whole);
        assert_non_null(strstr(err, want));
    }
    /* the binary form cut: the same, said at open */
    assert_int_equal(gmux("convert", t, b, "--format", "binary", 0, 0, 0), 0);
    assert_int_equal(truncate(b, 1000), 0);
    assert_int_equal(gmux("show", b, 0, 0, 0, 0, 0, 0), 1);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "truncated"));
    remove(t), remove(b), remove(cut);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_live_recording),
        cmocka_unit_test(test_generate_convert_show),
        cmocka_unit_test(test_show_truncated_text),
        cmocka_unit_test(test_failed_convert_keeps_out),
        cmocka_unit_test(test_record_unwritable_output_first),
        cmocka_unit_test(test_record_bad_setting_first),
        cmocka_unit_test(test_show_total_peak_saturates),
        cmocka_unit_test(test_interrupted_generate_leaves_no_part),
        cmocka_unit_test(test_unwritable_output_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

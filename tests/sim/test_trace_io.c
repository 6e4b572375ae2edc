/* Tests of the trace forms: round trips, per-task streaming, malformed input, the writer's checks.
 */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/trace_proto.h"
#include "sim_test_util.h"

/* Small settings of every workload, so that the suite stays fast. */
static const char *const small_llm[] = {"instances=2", "tokens=2", "layers=3", "batch=2",
                                        "prompt=64"};
static const char *const small_train[] = {"tasks=2", "layers=2", "steps=2", "seq=256"};
static const char *const small_stencil[] = {"tasks=2", "nx=64",   "ny=64",
                                            "nz=256",  "slab=64", "iterations=2"};
static const char *const small_sparse[] = {"tasks=2", "rows=1048576", "block-rows=262144",
                                           "iterations=5", "band=1024"};
static const char *const small_mix[] = {
    "llm-decode.instances=1", "tokens=2", "layers=2", "prompt=64",          "nz=128", "slab=32",
    "iterations=2",           "nx=32",    "ny=32",    "sci-stencil.tasks=2"};
struct wl_case {
    const char *name;
    const char *const *set;
    size_t nset;
};
#define CASE(n, s)                                                                                 \
    {                                                                                              \
        n, s, sizeof(s) / sizeof(s[0])                                                             \
    }
static const struct wl_case cases[] = {
    CASE("llm-decode", small_llm),
    CASE("dl-train", small_train),
    CASE("sci-stencil", small_stencil),
    CASE("sci-sparse", small_sparse),
    CASE("llm-decode+sci-stencil", small_mix),
};

static void test_round_trip_every_workload(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char a[64], b[64], c[64], d[64], err[512];
        tmp_path(a, sizeof(a), "rt-a");
        tmp_path(b, sizeof(b), "rt-b");
        tmp_path(c, sizeof(c), "rt-c");
        tmp_path(d, sizeof(d), "rt-d");
        const struct wl_case *k = &cases[i];
        assert_int_equal(write_workload(k->name, k->set, k->nset, 7, a, SIM_TRACE_TEXT), GMUX_OK);
        assert_int_equal(write_workload(k->name, k->set, k->nset, 7, d, SIM_TRACE_BINARY), GMUX_OK);
        sim_source_t *src;
        assert_int_equal(sim_trace_open(a, &src, err, sizeof(err)), GMUX_OK);
        assert_int_equal(write_source_to(src, b, SIM_TRACE_BINARY, err, sizeof(err)), GMUX_OK);
        sim_source_close(src);
        assert_int_equal(sim_trace_open(b, &src, err, sizeof(err)), GMUX_OK);
        assert_int_equal(write_source_to(src, c, SIM_TRACE_TEXT, err, sizeof(err)), GMUX_OK);
        sim_source_close(src);
        assert_true(files_equal(a, c)); /* text -> binary -> text */
        assert_true(files_equal(b, d)); /* generated binary == converted binary */
        sim_trace_format_t f;
        assert_int_equal(sim_trace_detect(a, &f, err, sizeof(err)), GMUX_OK);
        assert_int_equal(f, SIM_TRACE_TEXT);
        assert_int_equal(sim_trace_detect(b, &f, err, sizeof(err)), GMUX_OK);
        assert_int_equal(f, SIM_TRACE_BINARY);
        remove(a), remove(b), remove(c), remove(d);
    }
}

/* Hashes every task's events: in order task by task, or in a random interleaving. */
static void hash_tasks(sim_source_t *src, uint64_t *h, uint64_t *count, int interleave)
{
    uint32_t n = src->ntasks, left = n;
    int *done = calloc(n, sizeof(int));
    assert_non_null(done);
    for (uint32_t t = 0; t < n; t++)
        h[t] = 0xcbf29ce484222325ull, count[t] = 0;
    uint64_t rng = 12345;
    uint32_t t = 0;
    while (left) {
        if (interleave) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            t = (uint32_t)((rng >> 33) % n);
        }
        if (done[t]) {
            if (!interleave)
                t++;
            continue;
        }
        sim_event_t ev;
        gmux_status_t st = sim_source_next(src, t, &ev);
        if (st == GMUX_ERR_NOT_FOUND) {
            done[t] = 1;
            left--;
            assert_int_equal(sim_source_next(src, t, &ev), GMUX_ERR_NOT_FOUND); /* stays ended */
            continue;
        }
        assert_int_equal(st, GMUX_OK);
        h[t] = hash_event(h[t], &ev);
        count[t]++;
    }
    free(done);
}

static void test_streaming_any_interleaving(void **state)
{
    (void)state;
    const struct wl_case *k = &cases[4];
    char txt[64], bin[64], err[512];
    tmp_path(txt, sizeof(txt), "il-t");
    tmp_path(bin, sizeof(bin), "il-b");
    assert_int_equal(write_workload(k->name, k->set, k->nset, 3, txt, SIM_TRACE_TEXT), GMUX_OK);
    assert_int_equal(write_workload(k->name, k->set, k->nset, 3, bin, SIM_TRACE_BINARY), GMUX_OK);
    uint64_t ref[16], refn[16], h[16], n[16];
    sim_source_t *src;
    assert_int_equal(sim_workload_open(k->name, k->set, k->nset, 3, &src, err, sizeof(err)),
                     GMUX_OK);
    uint32_t ntasks = src->ntasks;
    assert_int_equal(ntasks, 3);
    hash_tasks(src, ref, refn, 0);
    sim_source_close(src);
    const char *paths[2] = {txt, bin};
    for (int p = 0; p < 3; p++) {
        for (int il = 0; il < 2; il++) {
            if (p < 2)
                assert_int_equal(sim_trace_open(paths[p], &src, err, sizeof(err)), GMUX_OK);
            else
                assert_int_equal(
                    sim_workload_open(k->name, k->set, k->nset, 3, &src, err, sizeof(err)),
                    GMUX_OK);
            assert_int_equal(src->ntasks, ntasks);
            hash_tasks(src, h, n, il);
            for (uint32_t t = 0; t < ntasks; t++) {
                assert_true(n[t] > 10);
                assert_int_equal(n[t], refn[t]);
                assert_true(h[t] == ref[t]);
            }
            sim_source_close(src);
        }
    }
    remove(txt), remove(bin);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#define HEAD "gmux-trace 1\n# a comment\ntask 0 a\ntask 1 b\nkernel 0 k0\n"
/* Lines 1-5 are HEAD; line 6 allocates, line 7 launches correctly. */
#define GOOD                                                                                       \
    "alloc 0 1 0x10000 4096\nlaunch 0 0 grid=1,1,1 block=32,1,1 ns=10 args=p:0x10000,v:4 "         \
    "touch=r:0x10000+16\n"

/* Reads task 0 of a text trace; returns events delivered before the error and the error. */
static uint64_t read_bad(const char *text, gmux_status_t want, const char *needle)
{
    char path[64], err[512];
    tmp_path(path, sizeof(path), "bad");
    write_text(path, text);
    sim_source_t *src;
    gmux_status_t st = sim_trace_open(path, &src, err, sizeof(err));
    uint64_t n = 0;
    if (st == GMUX_OK) {
        sim_event_t ev;
        while ((st = sim_source_next(src, 0, &ev)) == GMUX_OK)
            n++;
        snprintf(err, sizeof(err), "%s", src->error);
        /* the error is sticky */
        assert_int_equal(sim_source_next(src, 0, &ev), st);
        sim_source_close(src);
    }
    if (!strstr(err, needle))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, needle);
    assert_int_equal(st, want);
    assert_non_null(strstr(err, needle));
    if (want != GMUX_ERR_NOT_FOUND)
        assert_non_null(strstr(err, path));
    remove(path);
    return n;
}

static void test_text_malformed(void **state)
{
    (void)state;
    /* a valid file first: two events, then the end */
    assert_int_equal(read_bad(HEAD GOOD "end\n", GMUX_ERR_NOT_FOUND, ""), 2);
    assert_int_equal(
        read_bad("gmux-trace 2\ntask 0 a\nend\n", GMUX_ERR_VERSION, ":1: trace version 2"), 0);
    assert_int_equal(read_bad("gmux-trace 1\nend\n", GMUX_ERR_PARSE, ":2: no task"), 0);
    assert_int_equal(
        read_bad(HEAD GOOD "alloc 0 2 0x90000 12x\nend\n", GMUX_ERR_PARSE, ":8: alloc"), 2);
    assert_int_equal(read_bad(HEAD GOOD
                              "launch 0 7 grid=1,1,1 block=1,1,1 ns=1 args=- touch=-\nend\n",
                              GMUX_ERR_PARSE, ":8: launch: unknown kernel id 7"),
                     2);
    assert_int_equal(
        read_bad(HEAD GOOD
                 "launch 0 0 grid=1,1,1 block=1,1,1 ns=1 args=- touch=w:0x10f00+512\nend\n",
                 GMUX_ERR_PARSE, ":8: launch: range 0"),
        2);
    assert_int_equal(read_bad(HEAD GOOD, GMUX_ERR_PARSE, ":7: file ends without its 'end'"), 2);
    assert_int_equal(read_bad(HEAD GOOD "launch 0 0 grid=1,1,1 block=1,1,1 ns=1 args=- to",
                              GMUX_ERR_PARSE, ":8: last line has no newline"),
                     2);
    assert_int_equal(read_bad(HEAD GOOD "end\n# fine\n\nalloc 0 2 0x1 1\n", GMUX_ERR_PARSE,
                              ":11: record after the 'end' line"),
                     2);
    assert_int_equal(read_bad(HEAD GOOD "kernel 1 late\nend\n", GMUX_ERR_PARSE,
                              ":8: 'kernel' declared after the first event"),
                     2);
    assert_int_equal(
        read_bad(HEAD GOOD "free 0 9\nend\n", GMUX_ERR_PARSE, ":8: free: free of allocation id 9"),
        2);
    assert_int_equal(
        read_bad(HEAD GOOD "alloc 3 1 0x1 1\nend\n", GMUX_ERR_PARSE, ":8: bad or undeclared task"),
        2);
    assert_int_equal(
        read_bad(HEAD GOOD "alloc 0 2 0x10800 4096\nend\n", GMUX_ERR_PARSE, "overlaps"), 2);
    assert_int_equal(read_bad(HEAD GOOD
                              "launch 0 0 grid=1,1 block=1,1,1 ns=1 args=- touch=-\nend\n",
                              GMUX_ERR_PARSE, ":8: launch: expected grid=X,Y,Z"),
                     2);
    assert_int_equal(read_bad(HEAD GOOD
                              "launch 0 0 grid=1,1,1 block=1,1,1 ns=1 args=q:1 touch=-\nend\n",
                              GMUX_ERR_PARSE, ":8: launch: argument 0"),
                     2);
    assert_int_equal(
        read_bad(HEAD GOOD "alloc 0 2 0x20000 99999999999999999999\nend\n", GMUX_ERR_PARSE, ":8:"),
        2);
    assert_int_equal(
        read_bad(HEAD "kernel 0 dup\n" GOOD "end\n", GMUX_ERR_PARSE, ":6: id 0 out of order"), 0);
    assert_int_equal(read_bad("hello\n", GMUX_ERR_PARSE, "not a gmux trace"), 0);
}

/* A small valid binary file; returns its path in buf. */
static void small_binary(char *buf, size_t len)
{
    tmp_path(buf, len, "bin");
    assert_int_equal(write_workload("sci-stencil", small_stencil, 6, 1, buf, SIM_TRACE_BINARY),
                     GMUX_OK);
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static void patch(const char *p, long off, const void *bytes, size_t n)
{
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, off, SEEK_SET);
    fwrite(bytes, 1, n, f);
    fclose(f);
}

static void read_byte(const char *p, long off, uint8_t *b, size_t n)
{
    FILE *f = fopen(p, "rb");
    fseek(f, off, SEEK_SET);
    assert_int_equal(fread(b, 1, n, f), n);
    fclose(f);
}

static gmux_status_t read_all(const char *path, char *err, size_t errlen, uint64_t *n)
{
    sim_source_t *src;
    gmux_status_t st = sim_trace_open(path, &src, err, errlen);
    *n = 0;
    if (st != GMUX_OK)
        return st;
    for (uint32_t t = 0; t < src->ntasks; t++) {
        sim_event_t ev;
        while ((st = sim_source_next(src, t, &ev)) == GMUX_OK)
            (*n)++;
        if (st != GMUX_ERR_NOT_FOUND) {
            snprintf(err, errlen, "%s", src->error);
            break;
        }
        st = GMUX_OK;
    }
    sim_source_close(src);
    return st;
}

static void test_binary_malformed(void **state)
{
    (void)state;
    char p[64], err[512];
    uint64_t n, total;
    small_binary(p, sizeof(p));
    assert_int_equal(read_all(p, err, sizeof(err), &total), GMUX_OK);
    assert_true(total > 50);
    long size = file_size(p);

    assert_int_equal(truncate(p, size / 2), 0);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "truncated"));
    assert_non_null(strstr(err, "offset"));

    small_binary(p, sizeof(p));
    uint8_t v = 9;
    patch(p, SIM_BIN_H_VERSION, &v, 1);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_VERSION);
    assert_non_null(strstr(err, "offset 8: trace version 9"));

    small_binary(p, sizeof(p));
    uint8_t zero = 0;
    patch(p, SIM_BIN_H_FLAGS, &zero, 1);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "incomplete"));

    /* task 1's first block: corrupt its first event's kind; task 0 is read whole first */
    small_binary(p, sizeof(p));
    uint8_t e[8];
    read_byte(p, SIM_BIN_HEADER_SIZE + SIM_BIN_TASK_SIZE, e, 8);
    uint64_t blk = sim_get_u64(e);
    uint8_t bad = 9;
    patch(p, (long)blk + SIM_BIN_BLOCK_SIZE, &bad, 1);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_PARSE);
    char want[64];
    snprintf(want, sizeof(want), "offset %llu: unknown event kind",
             (unsigned long long)(blk + SIM_BIN_BLOCK_SIZE));
    assert_non_null(strstr(err, want));
    assert_int_equal(n, total / 2); /* task 0 (half of the events) delivered whole */

    small_binary(p, sizeof(p));
    uint8_t task9 = 9;
    patch(p, (long)blk + SIM_BIN_B_TASK, &task9, 1);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "block belongs to task 9"));

    /* the task table promises more events than the blocks hold */
    small_binary(p, sizeof(p));
    uint8_t more = 0x7f;
    patch(p, SIM_BIN_HEADER_SIZE + SIM_BIN_T_NEVENTS, &more, 1);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "the task table says 127"));
    remove(p);
}

/* A block whose next block is itself: the chain must end in an error, not
 * deliver the same events again and again (each block must lie after the
 * one before; no test reached that check until 2026-12-03). */
static void test_binary_block_points_back(void **state)
{
    (void)state;
    char p[64], err[512];
    uint64_t n, total;
    small_binary(p, sizeof(p));
    assert_int_equal(read_all(p, err, sizeof(err), &total), GMUX_OK);
    uint8_t e[8];
    read_byte(p, SIM_BIN_HEADER_SIZE + SIM_BIN_TASK_SIZE, e, 8); /* task 1's first block */
    uint64_t blk = sim_get_u64(e);
    read_byte(p, (long)blk + SIM_BIN_B_NEXT, e, 8);
    assert_int_equal(sim_get_u64(e), 0); /* its only block */
    sim_put_u64(e, blk);
    patch(p, (long)blk + SIM_BIN_B_NEXT, e, 8);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_PARSE);
    char want[128];
    snprintf(want, sizeof(want),
             "offset %llu: block offset %llu outside the data or not increasing",
             (unsigned long long)(blk + SIM_BIN_B_NEXT), (unsigned long long)blk);
    if (!strstr(err, want))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, want);
    assert_non_null(strstr(err, want));
    assert_int_equal(n, total); /* every event once, none twice */
    remove(p);
}

/* The file shrinks while it is read (a writer rewriting it in place): the
 * block that is gone is a read error, GMUX_ERR_IO naming its offset, and the
 * task goes on failing with that status, as a failed task does (the second
 * call said GMUX_ERR_PARSE until 2026-12-03). */
static void test_binary_shrinks_while_read(void **state)
{
    (void)state;
    char p[64], err[512];
    small_binary(p, sizeof(p));
    uint8_t e[8];
    read_byte(p, SIM_BIN_HEADER_SIZE + SIM_BIN_TASK_SIZE, e, 8); /* task 1's first block */
    uint64_t blk = sim_get_u64(e);
    sim_source_t *src;
    assert_int_equal(sim_trace_open(p, &src, err, sizeof(err)), GMUX_OK);
    assert_int_equal(truncate(p, (off_t)blk), 0);
    sim_event_t ev;
    char want[128];
    snprintf(want, sizeof(want), "offset %llu: read error", (unsigned long long)blk);
    for (int call = 0; call < 2; call++) {
        gmux_status_t st = sim_source_next(src, 1, &ev);
        if (st != GMUX_ERR_IO)
            fprintf(stderr, "call %d: status %d (%s)\n", call, (int)st, src->error);
        assert_int_equal(st, GMUX_ERR_IO);
        if (!strstr(src->error, want))
            fprintf(stderr, "error '%s' lacks '%s'\n", src->error, want);
        assert_non_null(strstr(src->error, want));
    }
    sim_source_close(src);
    remove(p);
}

/* A text trace cut while it is read (a writer rewriting it in place): the
 * task reads on to the cut and fails there as a cut file does, and says the
 * same status and error again on the next call. */
static void test_text_shrinks_while_read(void **state)
{
    (void)state;
    char p[64], err[512];
    static const char *const set[] = {"instances=2", "tokens=24", "layers=3", "batch=2",
                                      "prompt=64"};
    tmp_path(p, sizeof(p), "txt-cut");
    assert_int_equal(write_workload("llm-decode", set, 5, 1, p, SIM_TRACE_TEXT), GMUX_OK);
    long size = file_size(p);
    assert_true(size > 64 * 1024); /* far more than the cursor's stdio buffer */
    char *text = malloc((size_t)size);
    assert_non_null(text);
    read_byte(p, 0, (uint8_t *)text, (size_t)size);
    long cut = size * 3 / 4;
    while (text[cut - 1] != '\n') /* after a whole line */
        cut++;
    uint64_t lines = 0;
    for (long i = 0; i < cut; i++)
        lines += text[i] == '\n';
    free(text);
    sim_source_t *src;
    assert_int_equal(sim_trace_open(p, &src, err, sizeof(err)), GMUX_OK);
    sim_event_t ev;
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_OK);
    assert_int_equal(truncate(p, (off_t)cut), 0);
    gmux_status_t st;
    while ((st = sim_source_next(src, 0, &ev)) == GMUX_OK)
        ;
    char want[128], first[sizeof(src->error)];
    snprintf(want, sizeof(want),
             ":%llu: file ends without its 'end' line: truncated after line %llu",
             (unsigned long long)lines, (unsigned long long)lines);
    if (st != GMUX_ERR_PARSE || !strstr(src->error, want))
        fprintf(stderr, "status %d, error '%s', wanted '%s'\n", (int)st, src->error, want);
    assert_int_equal(st, GMUX_ERR_PARSE);
    assert_non_null(strstr(src->error, want));
    memcpy(first, src->error, sizeof(first));
    assert_int_equal(sim_source_next(src, 0, &ev), GMUX_ERR_PARSE);
    assert_string_equal(src->error, first);
    sim_source_close(src);
    remove(p);
}

/* Points every descriptor this process holds on path at dir instead (dup2),
 * so that the next read(2) of a FILE on path fails (EISDIR); returns how many. */
static int swap_fds_for_dir(const char *path, const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY), n = 0;
    assert_true(dfd >= 0);
    for (int fd = 0; fd < 1024; fd++) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t k = readlink(link, target, sizeof(target) - 1);
        if (k <= 0 || fd == dfd)
            continue;
        target[k] = '\0';
        if (strcmp(target, path) == 0) {
            assert_int_equal(dup2(dfd, fd), fd);
            n++;
        }
    }
    close(dfd);
    return n;
}

/* A read error on a task's file (its descriptor made a folder's): GMUX_ERR_IO
 * naming the line, and the same again on the next call, as the binary reader
 * does (the second call said GMUX_ERR_PARSE until 2026-12-03). */
static void test_text_read_error_is_sticky(void **state)
{
    (void)state;
    char p[64], err[512];
    tmp_path(p, sizeof(p), "txt-eio");
    write_text(p, HEAD GOOD "end\n");
    sim_source_t *src;
    assert_int_equal(sim_trace_open(p, &src, err, sizeof(err)), GMUX_OK);
    assert_int_equal(swap_fds_for_dir(p, "/tmp"), 2); /* one FILE per task */
    sim_event_t ev;
    for (int call = 0; call < 2; call++) {
        gmux_status_t st = sim_source_next(src, 0, &ev);
        if (st != GMUX_ERR_IO || !strstr(src->error, ":5: read error"))
            fprintf(stderr, "call %d: status %d (%s)\n", call, (int)st, src->error);
        assert_int_equal(st, GMUX_ERR_IO);
        assert_non_null(strstr(src->error, ":5: read error"));
        assert_non_null(strstr(src->error, p));
    }
    sim_source_close(src);
    remove(p);
}

/* Copies the worked example of docs/trace-format.md, patches one byte, reads it. */
static void example_patched(long off, uint8_t byte, const char *needle)
{
    char p[64], err[512];
    uint64_t n;
    tmp_path(p, sizeof(p), "ex");
    FILE *in = fopen(CORPUS_BIN "/two_tasks.bin", "rb"), *out = fopen(p, "wb");
    assert_non_null(in);
    assert_non_null(out);
    int c;
    while ((c = fgetc(in)) != EOF)
        fputc(c, out);
    fclose(in);
    fclose(out);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_OK);
    assert_int_equal(n, 7);
    patch(p, off, &byte, 1);
    assert_int_equal(read_all(p, err, sizeof(err), &n), GMUX_ERR_PARSE);
    if (!strstr(err, needle))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, needle);
    assert_non_null(strstr(err, needle));
    assert_int_equal(n, 1); /* the alloc before the bad launch was delivered */
    remove(p);
}

static void test_binary_worked_example(void **state)
{
    (void)state;
    /* task 0's launch starts at 0xa4 (docs/trace-format.md): kernel id at 0xa5 */
    example_patched(0xa5, 5, "offset 164: unknown kernel id 5");
    example_patched(0xb9, 7, "offset 164: range 0 has unknown mode 7");
    example_patched(0xb0, 3, "offset 164: argument 0 has unknown kind 3");
    example_patched(0xaf, 0x40, "offset 164: block ends inside an argument");
}

static void test_writer_rejects_invalid_events(void **state)
{
    (void)state;
    char p[64], err[512];
    tmp_path(p, sizeof(p), "w");
    for (int f = SIM_TRACE_TEXT; f <= SIM_TRACE_BINARY; f++) {
        sim_trace_writer_t *w;
        assert_int_equal(sim_trace_writer_open(p, f, &w, err, sizeof(err)), GMUX_OK);
        assert_int_equal(sim_trace_writer_task(w, 1, "x"), GMUX_ERR_INVALID); /* out of order */
        assert_int_equal(sim_trace_writer_close(w, err, sizeof(err)), GMUX_ERR_INVALID);
        assert_non_null(strstr(err, "out of order"));

        assert_int_equal(sim_trace_writer_open(p, f, &w, err, sizeof(err)), GMUX_OK);
        assert_int_equal(sim_trace_writer_task(w, 0, "t"), GMUX_OK);
        assert_int_equal(sim_trace_writer_kernel(w, 0, " bad name"), GMUX_ERR_INVALID);
        assert_int_equal(sim_trace_writer_close(w, err, sizeof(err)), GMUX_ERR_INVALID);

        assert_int_equal(sim_trace_writer_open(p, f, &w, err, sizeof(err)), GMUX_OK);
        assert_int_equal(sim_trace_writer_task(w, 0, "t"), GMUX_OK);
        sim_event_t ev = {.kind = SIM_EV_ALLOC, .u.alloc = {.id = 1, .base = 4096, .size = 64}};
        assert_int_equal(sim_trace_writer_event(w, 0, &ev), GMUX_OK);
        assert_int_equal(sim_trace_writer_kernel(w, 0, "late"), GMUX_ERR_STATE);
        assert_int_equal(sim_trace_writer_close(w, err, sizeof(err)), GMUX_ERR_STATE);

        assert_int_equal(sim_trace_writer_open(p, f, &w, err, sizeof(err)), GMUX_OK);
        assert_int_equal(sim_trace_writer_task(w, 0, "t"), GMUX_OK);
        sim_range_t r = {.addr = 4096, .len = 65, .mode = ENG_ACCESS_READ};
        sim_event_t l = {.kind = SIM_EV_LAUNCH,
                         .u.launch = {.kernel = 0, .nranges = 1, .ranges = &r}};
        assert_int_equal(sim_trace_writer_event(w, 0, &ev), GMUX_OK);
        assert_int_equal(sim_trace_writer_event(w, 0, &l), GMUX_ERR_PARSE); /* no kernel 0 */
        assert_int_equal(sim_trace_writer_close(w, err, sizeof(err)), GMUX_ERR_PARSE);
        assert_non_null(strstr(err, "unknown kernel id 0"));
    }
    remove(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_workload),
        cmocka_unit_test(test_streaming_any_interleaving),
        cmocka_unit_test(test_text_malformed),
        cmocka_unit_test(test_binary_malformed),
        cmocka_unit_test(test_binary_block_points_back),
        cmocka_unit_test(test_binary_shrinks_while_read),
        cmocka_unit_test(test_text_shrinks_while_read),
        cmocka_unit_test(test_text_read_error_is_sticky),
        cmocka_unit_test(test_binary_worked_example),
        cmocka_unit_test(test_writer_rejects_invalid_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

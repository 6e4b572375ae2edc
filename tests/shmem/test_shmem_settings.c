/*
 * The settings an OpenSHMEM program is told about, in one PE run without a
 * launcher: a malformed GMUX_SHMEM_* variable is said once, by shmem_init
 * (it was said twice: once by the shmem layer's own check, again when the
 * heap's size was read after gmux_comm_init had checked the net library's
 * settings); a malformed net setting once too, by the net library; a
 * malformed GMUX_LOG, which both libraries check, once too (it was said
 * twice: by shmem_init's check in libgmux-shmem.so's copy of src/common,
 * again by gmux_comm_init's in libgmux-net.so's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <shmem.h>

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Runs one PE (init, a heap allocation, finalize) with stderr in out. */
static void run_pe(char *out, size_t len)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    assert_true(saved >= 0 && dup2(fileno(tmp), 2) == 2);
    shmem_init();
    assert_int_equal(shmem_n_pes(), 1);
    long *x = shmem_malloc(sizeof(long)); /* the default heap (64M) serves */
    assert_non_null(x);
    shmem_free(x);
    shmem_finalize();
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, len - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    fprintf(stderr, "%s", out);
}

static void test_malformed_said_once(void **state)
{
    (void)state;
    setenv("GMUX_SHMEM_HEAP", "lots", 1);
    setenv("GMUX_NET_TIMEOUT", "abc", 1);
    setenv("GMUX_LOG", "warn,chatty", 1);
    static char out[8192];
    run_pe(out, sizeof(out));
    assert_int_equal(count(out, "GMUX_SHMEM_HEAP='lots': expected a size"), 1);
    assert_int_equal(count(out, "GMUX_NET_TIMEOUT='abc': expected a finite number"), 1);
    assert_int_equal(count(out, "GMUX_LOG: unknown token 'chatty'"), 1);
}

/* A malformed GMUX_LOG alone: shmem_init says it; gmux_comm_init's check
 * still fails for it (every init does) but has nothing left to say, and
 * says nothing: no warning without its reason. In a child, a PE of its own. */
static void test_malformed_log_alone(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("GMUX_SHMEM_HEAP");
        unsetenv("GMUX_NET_TIMEOUT");
        setenv("GMUX_LOG", "warn,rowdy", 1);
        static char out[8192];
        run_pe(out, sizeof(out));
        int ok = count(out, "GMUX_LOG: unknown token 'rowdy'") == 1 &&
                 count(out, "settings: \n") == 0 && count(out, "settings:  (") == 0;
        _exit(ok ? 0 : 1);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
}

int main(void)
{
    unsetenv("GMUX_RANK");
    unsetenv("GMUX_SIZE");
    unsetenv("GMUX_BOOTSTRAP");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_log_alone),
        cmocka_unit_test(test_malformed_said_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Which shared libraries the gmux CLI loads. A command that does not use the
 * network never loads libfabric: on Debian it brings libpsm_infinipath, whose
 * constructor spends about 200 ms calibrating a clock, and until 2026-12-01
 * every command, `gmux --help` included, paid it (docs/bench/tools.md, "CLI
 * start-up"). The ranks of a net command (gmux-net-rank) do load it.
 *
 * The dynamic loader says what it loaded, dlopen included: LD_DEBUG=libs with
 * LD_DEBUG_OUTPUT writes one file per process (PREFIX.PID), each naming its
 * program ("initialize program: PATH") and the libraries it opened.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tproc.h"

static char out[65536], err[65536];
static char dir[] = "/tmp/gmux-test-libs-XXXXXX";
static char debug_env[sizeof(dir) + 32];

/* Per program (by base name) over the processes of the last run: how many
 * there were, and how many of them loaded libfabric. */
struct tally {
    int gmux, gmux_fabric;
    int rank, rank_fabric;
    int other;
};

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(debug_env, sizeof(debug_env), "LD_DEBUG_OUTPUT=%s/ld", dir);
    return 0;
}

static void clear_logs(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

static int teardown(void **state)
{
    (void)state;
    clear_logs();
    rmdir(dir);
    return 0;
}

/* One log file: its program's base name into prog (empty if none) and
 * whether it names libfabric. */
static bool scan_log(const char *path, char *prog, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    bool fabric = false;
    prog[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        fabric |= strstr(line, "libfabric.so") != NULL;
        const char *p = strstr(line, "initialize program: ");
        if (p && prog[0] == '\0') {
            p += strlen("initialize program: ");
            const char *base = strrchr(p, '/');
            snprintf(prog, cap, "%s", base ? base + 1 : p);
            prog[strcspn(prog, "\n")] = '\0';
        }
    }
    fclose(f);
    return fabric;
}

static struct tally tally_logs(void)
{
    struct tally t = {0};
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[512], prog[256];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        bool fabric = scan_log(path, prog, sizeof(prog));
        if (strcmp(prog, "gmux") == 0) {
            t.gmux++;
            t.gmux_fabric += fabric;
        } else if (strcmp(prog, "gmux-net-rank") == 0) {
            t.rank++;
            t.rank_fabric += fabric;
        } else {
            t.other++;
        }
    }
    closedir(d);
    return t;
}

/* Runs argv with the loader's log on; its exit status. */
static int run_logged(char *const argv[], char *const more_env[])
{
    clear_logs();
    char *env[8] = {"LD_DEBUG=libs", debug_env};
    for (size_t i = 0; more_env && more_env[i] && i < 5; i++)
        env[2 + i] = more_env[i];
    return tproc_capture(argv, env, 120.0, out, sizeof(out), err, sizeof(err));
}

/* Runs argv and checks that gmux ran (one process at least, so the log is
 * read at all) without libfabric; its exit status. */
static int run_without_fabric(char *const argv[], char *const more_env[])
{
    int rc = run_logged(argv, more_env);
    struct tally t = tally_logs();
    if (t.gmux < 1 || t.gmux_fabric != 0)
        fprintf(stderr, "%s %s: %d gmux processes, %d loaded libfabric\n", argv[1],
                argv[2] ? argv[2] : "", t.gmux, t.gmux_fabric);
    assert_true(t.gmux >= 1);
    assert_int_equal(t.gmux_fabric, 0);
    return rc;
}

/* The options of gmux itself and every command's --help, the commands read
 * from `gmux --help` so that a new one is checked too. */
static void test_help_loads_no_fabric(void **state)
{
    (void)state;
    char *top[][3] = {{GMUX_CLI_PATH, "--help", NULL},
                      {GMUX_CLI_PATH, "--version", NULL},
                      {GMUX_CLI_PATH, "--help-settings", NULL}};
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        assert_int_equal(run_without_fabric(top[i], NULL), 0);
    assert_int_equal(run_logged(top[0], NULL), 0);
    char help[sizeof(out)];
    memcpy(help, out, sizeof(help));
    char *cmds = strstr(help, "Commands:\n");
    assert_non_null(cmds);
    int n = 0;
    for (char *line = strchr(cmds, '\n') + 1; strncmp(line, "  ", 2) == 0; n++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        char name[64];
        assert_int_equal(sscanf(line, " %63s", name), 1);
        char *argv[] = {GMUX_CLI_PATH, name, "--help", NULL};
        assert_int_equal(run_without_fabric(argv, NULL), 0);
        line = nl + 1;
    }
    assert_true(n >= 10); /* demo, sim, ..., launch, bench */
}

/* Commands at work: status (no daemon there), a short simulation, and the
 * launcher of a job, which serves the rendezvous without libfabric. */
static void test_local_commands_load_no_fabric(void **state)
{
    (void)state;
    char sock[sizeof(dir) + 32];
    snprintf(sock, sizeof(sock), "GMUX_SOCKET=%s/none", dir);
    char *sock_env[] = {sock, NULL};
    char *status[] = {GMUX_CLI_PATH, "status", NULL};
    assert_int_equal(run_without_fabric(status, sock_env), 1);
    char *sim[] = {GMUX_CLI_PATH, "sim",      "--workload", "llm-decode", "--set",   "instances=2",
                   "--set",       "tokens=2", "--oversub",  "200",        "--quiet", NULL};
    assert_int_equal(run_without_fabric(sim, NULL), 0);
    char *launch[] = {GMUX_CLI_PATH, "launch", "-n", "2", "--timeout", "60", "--", "true", NULL};
    assert_int_equal(run_without_fabric(launch, NULL), 0);
}

/* A net command still runs: gmux bench net's two ranks load libfabric in
 * gmux-net-rank, and the gmux that launched them does not (which also
 * shows that the log sees libfabric where it is loaded). */
static void test_net_ranks_load_fabric(void **state)
{
    (void)state;
    char *argv[] = {GMUX_CLI_PATH, "bench",  "net", "--provider", "shm",
                    "--quick",     "--reps", "1",   "--json",     NULL};
    int rc = run_logged(argv, NULL);
    if (rc != 0)
        fprintf(stderr, "%s", err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"op\":\"put_signal_rtt\""));
    struct tally t = tally_logs();
    assert_int_equal(t.gmux, 1);
    assert_int_equal(t.gmux_fabric, 0);
    assert_int_equal(t.rank, 2);
    assert_int_equal(t.rank_fabric, 2);
}

/* A gmux without its gmux-net-rank beside it (nor in ../libexec/gmux) says
 * so and fails before starting anything. */
static void test_missing_rank_exe_is_clear(void **state)
{
    (void)state;
    char copy[sizeof(dir) + 32];
    snprintf(copy, sizeof(copy), "%s/gmux", dir);
    clear_logs();
    int in = open(GMUX_CLI_PATH, O_RDONLY), fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    assert_true(in >= 0 && fd >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        assert_int_equal(write(fd, buf, (size_t)n), n);
    close(in);
    close(fd);
    char *argv[] = {copy, "bench", "net", "--provider", "shm", "--quick", "--reps", "1", NULL};
    assert_int_equal(tproc_capture(argv, NULL, 60.0, out, sizeof(out), err, sizeof(err)), 1);
    assert_non_null(strstr(err, "gmux bench net: gmux-net-rank not found"));
    assert_non_null(strstr(err, dir));
    assert_string_equal(out, "");
    unlink(copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_loads_no_fabric),
        cmocka_unit_test(test_local_commands_load_no_fabric),
        cmocka_unit_test(test_net_ranks_load_fabric),
        cmocka_unit_test(test_missing_rank_exe_is_clear),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

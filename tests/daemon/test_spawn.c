/*
 * dmn_server_spawn while another process holds the socket's lock and does
 * not answer on the socket: a starter between its lock and its listen(), or
 * a daemon just killed whose exit has not yet let the lock go. The spawn
 * tries again until the lock is free (then a daemon of its own serves), and
 * gives up with GMUX_ERR_PEER when it stays held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/settings.h"
#include "daemon/endpoint.h"
#include "daemon/server.h"
#include "tproc.h"

static char dir[] = "/tmp/gmux-spawn-XXXXXX";
static char sock[128], lock[160];
static pid_t holder;

/* A child that takes the socket's lock, says so on the pipe, keeps it for
 * hold_ms and exits (its exit lets the lock go, as a killed daemon's does). */
static void start_holder(int hold_ms)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    holder = fork();
    assert_true(holder >= 0);
    if (holder == 0) {
        close(p[0]);
        int fd = open(lock, O_RDWR | O_CREAT, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) != 0)
            _exit(1);
        (void)!write(p[1], "h", 1);
        com_clock_sleep_ns((uint64_t)hold_ms * COM_NS_PER_MS);
        _exit(0);
    }
    close(p[1]);
    char b;
    assert_int_equal(read(p[0], &b, 1), 1);
    close(p[0]);
}

static void spawn_opts(dmn_server_opts_t *o, char *path, size_t cap)
{
    setenv("GMUX_SOCKET", sock, 1);
    setenv("GMUX_DAEMON_IDLE_EXIT_S", "5", 1); /* a daemon left behind goes by itself */
    char err[256];
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
    assert_int_equal(dmn_server_opts_from_settings(o, path, cap, 0), GMUX_OK);
}

/* Stops the daemon the lock file names (SIGTERM), waiting until it is gone. */
static void stop_daemon(void)
{
    FILE *f = fopen(lock, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    assert_true(pid > 0);
    assert_int_equal(kill(pid, SIGTERM), 0);
    for (int i = 0; i < 500 && kill(pid, 0) == 0; i++)
        com_clock_sleep_ns(10 * COM_NS_PER_MS);
    assert_int_not_equal(kill(pid, 0), 0);
}

static void test_spawn_waits_for_lock(void **state)
{
    (void)state;
    dmn_server_opts_t o;
    char path[256];
    spawn_opts(&o, path, sizeof(path));
    start_holder(300);
    /* Before, the spawn failed at once: its daemon found the lock taken,
     * and nobody answered on the socket. */
    assert_int_equal(dmn_server_spawn(&o), GMUX_OK);
    int fd;
    assert_int_equal(dmn_endpoint_connect(sock, &fd), GMUX_OK);
    close(fd);
    int st;
    assert_int_equal(waitpid(holder, &st, 0), holder);
    holder = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    stop_daemon();
}

static void test_spawn_gives_up_on_held_lock(void **state)
{
    (void)state;
    dmn_server_opts_t o;
    char path[256];
    spawn_opts(&o, path, sizeof(path));
    start_holder(60000); /* longer than the spawn tries */
    assert_int_equal(dmn_server_spawn(&o), GMUX_ERR_PEER);
    struct stat sb;
    assert_int_not_equal(stat(sock, &sb), 0); /* nobody listens there */
    tproc_kill_reap(&holder);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(sock, sizeof(sock), "%s/gmuxd.sock", dir);
    snprintf(lock, sizeof(lock), "%s.lock", sock);
    return 0;
}

static int kill_holder(void **state)
{
    (void)state;
    tproc_kill_reap(&holder);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(sock);
    unlink(lock);
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_spawn_waits_for_lock, kill_holder),
        cmocka_unit_test_teardown(test_spawn_gives_up_on_held_lock, kill_holder),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

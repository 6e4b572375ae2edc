/*
 * What the shim says when it cannot open its gate (src/shim/gate.c): the
 * warning names what failed, not "gmuxd refused the task" whatever it was.
 * gate_prog runs with the shim preloaded and the driver double as
 * libcuda.so.1 (not under `gmux run`: the shim's is the only connection),
 * and its standard error is read:
 *
 * - a socket path too long for a socket address (GMUX_SOCKET): the shim
 *   says so, and nothing of a refusal;
 * - a daemon (scripted here) that answers REGISTER with REFUSED: the shim
 *   says gmuxd refused the task, with the daemon's reason.
 *
 * Either way the program runs ungated to its end.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/endpoint.h"
#include "daemon/proto.h"
#include "msg_io.h"
#include "tdir.h"
#include "tproc.h"

#define REASON "no room for the test's task"

static char dir[] = "/tmp/gmux-gate-open-XXXXXX";
static char sock[128], outfile[128];
static char out[4096], err[16384];
static pid_t daemon_pid;

/* Runs gate_prog (4 kernels) with the shim preloaded and GMUX_SOCKET=path;
 * its exit status, its standard error in err. */
static int run_prog(const char *path)
{
    static char sock_env[512];
    snprintf(sock_env, sizeof(sock_env), "GMUX_SOCKET=%s", path);
    char *env[] = {"LD_PRELOAD=" GMUX_SHIM, "GMUX_GATE=1", "GMUX_LOG=warn", sock_env, NULL};
    char *argv[] = {GATE_PROG, outfile, "1", "4", "0", NULL};
    return tproc_capture(argv, env, 120.0, out, sizeof(out), err, sizeof(err));
}

/* The scripted daemon: listens on sock, says so on ready, answers the
 * first REGISTER with REFUSED and waits (a minute at most) for the client
 * to close. Exits 0, or the step that failed. */
static int refuser(int ready)
{
    int lfd, lk;
    if (dmn_endpoint_listen(sock, DMN_NO_GROUP, 0, &lfd, &lk, NULL, 0) != GMUX_OK)
        return 10;
    (void)!write(ready, "r", 1);
    close(ready);
    struct pollfd pf = {lfd, POLLIN, 0};
    int fd = poll(&pf, 1, 60000) == 1 ? accept(lfd, NULL, NULL) : -1;
    if (fd < 0)
        return 11;
    struct timeval tv = {60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    dmn_msg_t m;
    if (tmsg_read(fd, buf, &m) != 0 || m.hdr.type != DMN_MSG_REGISTER)
        return 12;
    size_t n = dmn_proto_encode_refused(buf, sizeof(buf), 1, GMUX_ERR_CAPACITY, REASON);
    if (tmsg_write_all(fd, buf, n) != 0)
        return 13;
    while (tmsg_read(fd, buf, &m) == 0) {
    }
    return 0;
}

static int kill_leftover_daemon(void **state)
{
    (void)state;
    tproc_kill_reap(&daemon_pid);
    return 0;
}

static void test_socket_path_too_long(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof(path), "%s/%0200d.sock", dir, 0);
    int rc = run_prog(path);
    print_message("%s", err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "socket path"));
    assert_non_null(strstr(err, "too long"));
    assert_non_null(strstr(err, "running ungated"));
    assert_null(strstr(err, "refused"));
}

static void test_daemon_refuses(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    daemon_pid = fork();
    assert_true(daemon_pid >= 0);
    if (daemon_pid == 0) {
        close(p[0]);
        _exit(refuser(p[1]));
    }
    close(p[1]);
    char b;
    assert_int_equal(read(p[0], &b, 1), 1);
    close(p[0]);
    int rc = run_prog(sock);
    print_message("%s", err);
    assert_int_equal(rc, 0);
    assert_int_equal(tproc_reap(&daemon_pid), 0);
    assert_non_null(strstr(err, REASON));
    assert_non_null(strstr(err, "gmuxd refused the task"));
    assert_non_null(strstr(err, "running ungated"));
    assert_null(strstr(err, "too long"));
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(sock, sizeof(sock), "%s/d.sock", dir);
    snprintf(outfile, sizeof(outfile), "%s/out", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_socket_path_too_long),
        cmocka_unit_test_teardown(test_daemon_refuses, kill_leftover_daemon),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}

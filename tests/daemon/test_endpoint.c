/* Unit tests of the socket path, permissions and credential check
 * (src/daemon/endpoint.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/settings.h"
#include "daemon/endpoint.h"
#include "tdir.h"

static void test_cred_policy(void **state)
{
    (void)state;
    dmn_cred_policy_t owner_only = {1000, DMN_NO_GROUP};
    assert_true(dmn_cred_allowed(&owner_only, 1000, 1000, NULL, 0));
    assert_false(dmn_cred_allowed(&owner_only, 1001, 1000, NULL, 0));
    assert_false(dmn_cred_allowed(&owner_only, 0, 0, NULL, 0)); /* not even root */
    gid_t groups[] = {5, 77, 9};
    assert_false(dmn_cred_allowed(&owner_only, 1001, 77, groups, 3));
    dmn_cred_policy_t with_group = {1000, 77};
    assert_true(dmn_cred_allowed(&with_group, 1001, 77, groups, 0)); /* primary group */
    assert_true(dmn_cred_allowed(&with_group, 1001, 5, groups, 3));  /* supplementary */
    assert_false(dmn_cred_allowed(&with_group, 1001, 5, groups, 1)); /* not a member */
    assert_true(dmn_cred_allowed(&with_group, 1000, 1, groups, 0));  /* owner */
}

/* Connections a uid may hold at once: the owner any number, another uid (a
 * group member) fewer than the cap. */
static void test_cred_room(void **state)
{
    (void)state;
    dmn_cred_policy_t p = {1000, 77};
    assert_true(dmn_cred_room(&p, 1000, 0, 4));
    assert_true(dmn_cred_room(&p, 1000, 4, 4));
    assert_true(dmn_cred_room(&p, 1000, 1 << 20, 4));
    assert_true(dmn_cred_room(&p, 1001, 0, 4));
    assert_true(dmn_cred_room(&p, 1001, 3, 4));
    assert_false(dmn_cred_room(&p, 1001, 4, 4));
    assert_false(dmn_cred_room(&p, 1001, 5, 4));
    assert_false(dmn_cred_room(&p, 0, 4, 4)); /* root is not the owner either */
}

static void test_path(void **state)
{
    (void)state;
    char err[128], path[108];
    assert_int_equal(com_settings_set(COM_SETTING_SOCKET, "/x/y.sock", err, sizeof(err)), GMUX_OK);
    assert_int_equal(dmn_endpoint_path(path, sizeof(path)), GMUX_OK);
    assert_string_equal(path, "/x/y.sock");
    assert_int_equal(com_settings_set(COM_SETTING_SOCKET, "", err, sizeof(err)), GMUX_OK);
    setenv("XDG_RUNTIME_DIR", "/run/user/42", 1);
    assert_int_equal(dmn_endpoint_path(path, sizeof(path)), GMUX_OK);
    assert_string_equal(path, "/run/user/42/gmux/gmuxd.sock");
    unsetenv("XDG_RUNTIME_DIR");
    assert_int_equal(dmn_endpoint_path(path, sizeof(path)), GMUX_OK);
    char want[64];
    snprintf(want, sizeof(want), "/tmp/gmux-%u/gmuxd.sock", (unsigned)getuid());
    assert_string_equal(path, want);
    char longp[200];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = 0;
    assert_int_equal(com_settings_set(COM_SETTING_SOCKET, longp, err, sizeof(err)), GMUX_OK);
    assert_int_equal(dmn_endpoint_path(path, sizeof(path)), GMUX_ERR_RANGE);
    assert_int_equal(com_settings_set(COM_SETTING_SOCKET, "", err, sizeof(err)), GMUX_OK);
}

static void test_listen(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-ep-XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/sub/d.sock", dir);
    int fd, lock, fd2, lock2, c;
    assert_int_equal(dmn_endpoint_connect(path, &c), GMUX_ERR_PEER); /* nobody yet */
    struct stat st;
    char sub[128], why[512] = "";
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    /* a missing directory is made only when asked (the default path's) */
    assert_int_equal(dmn_endpoint_listen(path, DMN_NO_GROUP, 0, &fd, &lock, why, sizeof(why)),
                     GMUX_ERR_NOT_FOUND);
    assert_non_null(strstr(why, sub));
    assert_non_null(strstr(why, strerror(ENOENT)));
    assert_int_not_equal(stat(sub, &st), 0);
    assert_int_equal(
        dmn_endpoint_listen(path, DMN_NO_GROUP, DMN_LISTEN_MAKE_DIR, &fd, &lock, NULL, 0), GMUX_OK);
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    /* One daemon per path. */
    assert_int_equal(dmn_endpoint_listen(path, DMN_NO_GROUP, 0, &fd2, &lock2, why, sizeof(why)),
                     GMUX_ERR_EXISTS);
    assert_non_null(strstr(why, "d.sock.lock")); /* and not removed by the one that failed */
    assert_int_equal(dmn_endpoint_connect(path, &c), GMUX_OK);
    pid_t pid;
    uid_t uid;
    gid_t gid;
    assert_int_equal(dmn_endpoint_peer(c, &pid, &uid, &gid), GMUX_OK);
    assert_int_equal(pid, getpid());
    assert_int_equal(uid, getuid());
    close(c);
    /* A dead daemon leaves its socket file: the next one replaces it. */
    close(fd);
    close(lock);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(dmn_endpoint_listen(path, DMN_NO_GROUP, 0, &fd, &lock, NULL, 0), GMUX_OK);
    assert_int_equal(dmn_endpoint_connect(path, &c), GMUX_OK);
    close(c);
    /* A clean stop removes the socket and the lock file. */
    char lpath_lock[160];
    snprintf(lpath_lock, sizeof(lpath_lock), "%s.lock", path);
    assert_int_equal(stat(lpath_lock, &st), 0);
    dmn_endpoint_unlisten(path, fd, lock, 1);
    assert_int_not_equal(stat(path, &st), 0);
    assert_int_not_equal(stat(lpath_lock, &st), 0);
    /* A lock file at the path that is not the one it holds (its own was
     * removed, another daemon's is there now) is left alone. */
    assert_int_equal(dmn_endpoint_listen(path, DMN_NO_GROUP, 0, &fd, &lock, NULL, 0), GMUX_OK);
    assert_int_equal(unlink(lpath_lock), 0);
    int other = open(lpath_lock, O_RDWR | O_CREAT, 0600);
    assert_true(other >= 0);
    dmn_endpoint_unlisten(path, fd, lock, 1);
    assert_int_equal(stat(lpath_lock, &st), 0);
    close(other);
    assert_int_equal(unlink(lpath_lock), 0);
    /* A socket directory that is a symbolic link is refused. */
    char link[128], lpath[160];
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(symlink("/tmp", link), 0);
    snprintf(lpath, sizeof(lpath), "%s/x.sock", link);
    assert_int_equal(dmn_endpoint_listen(lpath, DMN_NO_GROUP, 0, &fd, &lock, NULL, 0),
                     GMUX_ERR_PERM);
    assert_int_equal(tdir_remove(dir), 0);
}

/* Only a socket left by a dead daemon is replaced: a file of any other kind
 * at the path (a user's file named by mistake with --socket) is refused and
 * kept (it was deleted, "any socket file there is stale"). */
static void test_listen_keeps_other_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-ep-XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/notes.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    assert_int_equal(fclose(f), 0);
    int fd, lock;
    char why[512] = "";
    assert_int_equal(dmn_endpoint_listen(path, DMN_NO_GROUP, 0, &fd, &lock, why, sizeof(why)),
                     GMUX_ERR_INVALID);
    assert_non_null(strstr(why, "not a socket"));
    struct stat st;
    char lockp[160];
    snprintf(lockp, sizeof(lockp), "%s.lock", path);
    assert_int_not_equal(lstat(lockp, &st), 0); /* a failed start leaves no lock file */
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 9);
    /* nor a symbolic link (to a socket or anything else) */
    char link[160];
    snprintf(link, sizeof(link), "%s/l.sock", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(dmn_endpoint_listen(link, DMN_NO_GROUP, 0, &fd, &lock, NULL, 0),
                     GMUX_ERR_INVALID);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(tdir_remove(dir), 0);
}

/* A connect that waits for room in a full queue and is interrupted by a
 * signal (a handler without SA_RESTART: a caller's SIGCHLD or SIGALRM)
 * starts over within the 2 s bound instead of failing with EINTR
 * (gmux status, top, run's connects; a task's client never waits). Until
 * 2026-12-03 it failed (com_status_from_errno(EINTR)). */
static atomic_int sig_in_connect, connecting, stop_signals;
static pthread_t connector;

static void on_usr1(int sig)
{
    (void)sig;
    if (atomic_load(&connecting))
        atomic_fetch_add(&sig_in_connect, 1);
}

static void *signal_connector(void *arg)
{
    (void)arg;
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 20000 && !atomic_load(&stop_signals); i++) { /* at most ~20 s */
        pthread_kill(connector, SIGUSR1);
        nanosleep(&ms, NULL);
    }
    return NULL;
}

struct room_arg {
    int lfd, filler, accepted;
};

/* Makes room once 20 signals came during the connect, then takes it. */
static void *make_room(void *arg)
{
    struct room_arg *r = arg;
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 20000 && atomic_load(&sig_in_connect) < 20; i++)
        nanosleep(&ms, NULL);
    int a = accept(r->lfd, NULL, NULL); /* the filler's */
    if (a >= 0)
        close(a);
    struct pollfd pf = {r->lfd, POLLIN, 0};
    if (poll(&pf, 1, 10000) == 1) /* the connect under test's */
        r->accepted = accept(r->lfd, NULL, NULL);
    return NULL;
}

static void test_connect_interrupted_starts_over(void **state)
{
    (void)state;
    char dir[] = "/tmp/gmux-ep-XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/q.sock", dir);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof(addr.sun_path));
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(lfd, 0), 0); /* one pending connection fills it */
    int filler = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(connect(filler, (struct sockaddr *)&addr, sizeof(addr)), 0);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1; /* no SA_RESTART */
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    connector = pthread_self();
    struct room_arg r = {lfd, filler, -1};
    pthread_t sig_thread, room_thread;
    assert_int_equal(pthread_create(&room_thread, NULL, make_room, &r), 0);
    assert_int_equal(pthread_create(&sig_thread, NULL, signal_connector, NULL), 0);
    int c = -1;
    atomic_store(&connecting, 1);
    gmux_status_t st = dmn_endpoint_connect(path, &c);
    atomic_store(&connecting, 0);
    atomic_store(&stop_signals, 1);
    pthread_join(sig_thread, NULL);
    int in_connect = atomic_load(&sig_in_connect);
    atomic_fetch_add(&sig_in_connect, 20); /* make_room goes on if it still waits */
    pthread_join(room_thread, NULL);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    assert_int_equal(st, GMUX_OK);
    assert_true(in_connect >= 20); /* the wait was interrupted */
    assert_true(r.accepted >= 0);
    assert_int_equal(write(c, "x", 1), 1); /* the connection the server took is this one */
    char b = 0;
    assert_int_equal(read(r.accepted, &b, 1), 1);
    assert_int_equal(b, 'x');
    close(c);
    close(r.accepted);
    close(filler);
    close(lfd);
    assert_int_equal(tdir_remove(dir), 0);
}

int main(void)
{
    char err[256];
    com_settings_init(err, sizeof(err));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cred_policy),
        cmocka_unit_test(test_cred_room),
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_listen_keeps_other_files),
        cmocka_unit_test(test_connect_interrupted_starts_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

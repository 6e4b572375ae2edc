/* Socket path, permissions and peer credentials of gmuxd; see endpoint.h. */
#include "daemon/endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"

gmux_status_t dmn_endpoint_path(char *out, size_t cap)
{
    const char *set = COM_SETTING_STRING(SOCKET);
    int n;
    if (set && set[0])
        n = snprintf(out, cap, "%s", set);
    else if (getenv("XDG_RUNTIME_DIR") && getenv("XDG_RUNTIME_DIR")[0] == '/')
        n = snprintf(out, cap, "%s/gmux/gmuxd.sock", getenv("XDG_RUNTIME_DIR"));
    else
        n = snprintf(out, cap, "/tmp/gmux-%u/gmuxd.sock", (unsigned)getuid());
    if (n < 0 || (size_t)n >= cap || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return GMUX_ERR_RANGE;
    return GMUX_OK;
}

gmux_status_t dmn_endpoint_group(gid_t *group)
{
    const char *name = COM_SETTING_STRING(DAEMON_GROUP);
    if (!name || !name[0]) {
        *group = DMN_NO_GROUP;
        return GMUX_OK;
    }
    struct group *g = getgrnam(name);
    if (!g) {
        COM_ERROR(DAEMON, "GMUX_DAEMON_GROUP: no group '%s'", name);
        return GMUX_ERR_NOT_FOUND;
    }
    *group = g->gr_gid;
    return GMUX_OK;
}

int dmn_cred_allowed(const dmn_cred_policy_t *policy, uid_t uid, gid_t gid, const gid_t *members,
                     int n_members)
{
    if (uid == policy->owner)
        return 1;
    if (policy->group == DMN_NO_GROUP)
        return 0;
    if (gid == policy->group)
        return 1;
    gid_t list[256];
    if (!members) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res)
            return 0;
        n_members = (int)(sizeof(list) / sizeof(list[0]));
        if (getgrouplist(res->pw_name, gid, list, &n_members) < 0)
            return 0;
        members = list;
    }
    for (int i = 0; i < n_members; i++)
        if (members[i] == policy->group)
            return 1;
    return 0;
}

int dmn_cred_room(const dmn_cred_policy_t *policy, uid_t uid, int held, int cap)
{
    return uid == policy->owner || held < cap;
}

gmux_status_t dmn_endpoint_peer(int fd, pid_t *pid, uid_t *uid, gid_t *gid)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return com_status_from_errno(errno);
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return GMUX_OK;
}

static gmux_status_t fill_addr(const char *path, struct sockaddr_un *addr)
{
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(addr->sun_path))
        return GMUX_ERR_RANGE;
    strcpy(addr->sun_path, path);
    return GMUX_OK;
}

/* Says why in why (when given), the way a user reads it: what failed on
 * which path, and the system's reason. */
static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t cap, const char *fmt, ...)
{
    if (!why || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

/* The socket's directory: ours, a real directory, not writable by others;
 * created only with DMN_LISTEN_MAKE_DIR. */
static gmux_status_t make_dir(const char *path, gid_t group, unsigned flags, char *why, size_t cap)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return GMUX_OK; /* relative name or directly under /: nothing to create */
    *slash = '\0';
    mode_t mode = group == DMN_NO_GROUP ? 0700 : 0750;
    if ((flags & DMN_LISTEN_MAKE_DIR) && mkdir(dir, mode) == 0) {
        if (group != DMN_NO_GROUP && (chown(dir, (uid_t)-1, group) != 0 || chmod(dir, mode) != 0)) {
            int e = errno;
            say(why, cap, "cannot give socket folder %s to group %u: %s", dir, (unsigned)group,
                strerror(e));
            return com_status_from_errno(e);
        }
        return GMUX_OK;
    }
    int e = errno;
    if ((flags & DMN_LISTEN_MAKE_DIR) && e != EEXIST) {
        say(why, cap, "cannot create socket folder %s: %s", dir, strerror(e));
        return com_status_from_errno(e);
    }
    struct stat st;
    if (lstat(dir, &st) != 0) {
        e = errno;
        if (e == ENOENT)
            say(why, cap,
                "socket folder %s: %s; only the default socket's folder is created: make it, "
                "or name another socket",
                dir, strerror(e));
        else
            say(why, cap, "socket folder %s: %s", dir, strerror(e));
        return com_status_from_errno(e);
    }
    if (!S_ISDIR(st.st_mode) || (st.st_uid != getuid() && st.st_uid != 0) ||
        ((st.st_mode & 0002) && !(st.st_mode & S_ISVTX))) {
        say(why, cap, "socket folder %s: not a private directory of this user", dir);
        return GMUX_ERR_PERM;
    }
    return GMUX_OK;
}

/* Whether fd is the file at path now (not a removed one). */
static bool same_file(int fd, const char *path)
{
    struct stat held, now;
    return fstat(fd, &held) == 0 && lstat(path, &now) == 0 && held.st_dev == now.st_dev &&
           held.st_ino == now.st_ino;
}

/* Opens PATH.lock and locks it: 1 with *lk_p open, 0 when another process
 * holds it, -1 on an error (errno). A lock file is removed by its holder
 * (dmn_endpoint_unlisten), so a lock taken on a file that is no longer the
 * one at the path locks nothing: try again on the file there now. */
static int take_lock(const char *lock_path, int *lk_p)
{
    for (int tries = 0; tries < 100; tries++) {
        int lk = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lk < 0)
            return -1;
        if (flock(lk, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(lk);
            errno = e;
            return e == EWOULDBLOCK ? 0 : -1;
        }
        if (same_file(lk, lock_path)) {
            *lk_p = lk;
            return 1;
        }
        close(lk); /* removed by the holder that let it go: not ours to hold */
    }
    errno = EAGAIN;
    return -1;
}

/* Removes PATH.lock while lk, its lock, is still held, and only when the
 * file there is still lk's. */
static void drop_lock_file(const char *path, int lk)
{
    char lock_path[PATH_MAX];
    snprintf(lock_path, sizeof(lock_path), "%s.lock", path);
    if (same_file(lk, lock_path))
        (void)unlink(lock_path);
}

gmux_status_t dmn_endpoint_listen(const char *path, gid_t group, unsigned flags, int *listen_fd,
                                  int *lock_fd, char *why, size_t why_cap)
{
    struct sockaddr_un addr;
    char lock_path[PATH_MAX];
    gmux_status_t st = fill_addr(path, &addr);
    if (st != GMUX_OK) {
        say(why, why_cap, "socket path %s is too long (at most %zu bytes)", path,
            sizeof(addr.sun_path) - 1);
        return st;
    }
    if ((st = make_dir(path, group, flags, why, why_cap)) != GMUX_OK)
        return st;
    snprintf(lock_path, sizeof(lock_path), "%s.lock", path);
    int lk = -1, e;
    int got = take_lock(lock_path, &lk);
    if (got <= 0) {
        e = errno;
        if (got == 0) {
            say(why, why_cap, "another daemon holds %s", lock_path);
            return GMUX_ERR_EXISTS;
        }
        say(why, why_cap, "cannot create socket %s: its lock file %s: %s", path, lock_path,
            strerror(e));
        return com_status_from_errno(e);
    }
    /* The lock file names the daemon's pid, for people and tests that stop it. */
    if (ftruncate(lk, 0) == 0)
        dprintf(lk, "%d\n", (int)getpid());
    /* We hold the lock: a socket file there is a dead daemon's, stale. Any
     * other file is someone's (a path named by mistake) and stays. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISSOCK(sb.st_mode)) {
        say(why, why_cap, "%s exists and is not a socket: not replaced", path);
        st = GMUX_ERR_INVALID;
        goto drop_lock;
    }
    (void)unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        e = errno;
        say(why, why_cap, "cannot create socket %s: socket(): %s", path, strerror(e));
        st = com_status_from_errno(e);
        goto drop_lock;
    }
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
    e = errno;
    umask(old);
    if (rc != 0) {
        say(why, why_cap, "cannot create socket %s: %s", path, strerror(e));
        st = com_status_from_errno(e);
        goto close_socket;
    }
    if (group != DMN_NO_GROUP && (chown(path, (uid_t)-1, group) != 0 || chmod(path, 0660) != 0)) {
        e = errno;
        say(why, why_cap, "cannot give socket %s to group %u: %s", path, (unsigned)group,
            strerror(e));
        st = com_status_from_errno(e);
        goto unlink_socket;
    }
    if (listen(fd, 64) != 0) {
        e = errno;
        say(why, why_cap, "cannot listen on socket %s: %s", path, strerror(e));
        st = com_status_from_errno(e);
        goto unlink_socket;
    }
    *listen_fd = fd;
    *lock_fd = lk;
    return GMUX_OK;
unlink_socket:
    unlink(path);
close_socket:
    close(fd);
drop_lock:
    drop_lock_file(path, lk);
    close(lk);
    return st;
}

void dmn_endpoint_unlisten(const char *path, int listen_fd, int lock_fd, int unlink_socket)
{
    if (unlink_socket)
        (void)unlink(path);
    if (listen_fd >= 0)
        close(listen_fd);
    if (lock_fd >= 0) {
        drop_lock_file(path, lock_fd); /* before the lock goes: see take_lock */
        close(lock_fd);
    }
}

int dmn_endpoint_path_default(void)
{
    const char *set = COM_SETTING_STRING(SOCKET);
    return !set || !set[0];
}

static gmux_status_t endpoint_connect(const char *path, int wait, int *fd_out, char *why,
                                      size_t cap)
{
    struct sockaddr_un addr;
    gmux_status_t st = fill_addr(path, &addr);
    if (st != GMUX_OK) {
        say(why, cap, "the socket path is too long (at most %zu bytes)", sizeof(addr.sun_path) - 1);
        return st;
    }
    /* A daemon that is alive but does not read (stopped, swapped out) holds
     * nobody for ever: on a Unix socket the send timeout also bounds a
     * connect that waits for room in a full queue of connections. A signal
     * that interrupts that wait leaves nothing pending at the daemon (unlike
     * TCP's, a Unix socket's connect is not carried on): it starts over on a
     * new socket, within what is left of the bound. */
    uint64_t deadline = com_deadline_after_ns((uint64_t)DMN_ENDPOINT_SEND_WAIT_MS * COM_NS_PER_MS);
    int fd;
    for (;;) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (wait ? 0 : SOCK_NONBLOCK), 0);
        if (fd < 0) {
            int e = errno;
            say(why, cap, "socket(): %s", strerror(e));
            return com_status_from_errno(e);
        }
        uint64_t now = com_clock_ns(), left = deadline > now ? deadline - now : 1000;
        struct timeval tv = {(time_t)(left / COM_NS_PER_S),
                             (suseconds_t)(left % COM_NS_PER_S / 1000)};
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0 &&
            connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
            break;
        int e = errno;
        close(fd);
        if (e == EINTR && !com_deadline_passed(deadline))
            continue;
        if (e == EAGAIN || e == EINPROGRESS || e == EINTR) {
            if (wait)
                say(why, cap, "its queue of connections stayed full for %d ms",
                    DMN_ENDPOINT_SEND_WAIT_MS);
            else
                say(why, cap, "its queue of connections is full");
            return wait ? GMUX_ERR_TIMEOUT : GMUX_ERR_BUSY;
        }
        say(why, cap, "%s", strerror(e));
        return e == ENOENT || e == ECONNREFUSED ? GMUX_ERR_PEER : com_status_from_errno(e);
    }
    /* on a Unix socket a connect that did not fail is complete: blocking from here */
    int fl = wait ? 0 : fcntl(fd, F_GETFL);
    if (fl < 0 || (!wait && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) {
        int e = errno;
        say(why, cap, "fcntl(): %s", strerror(e));
        close(fd);
        return com_status_from_errno(e);
    }
    *fd_out = fd;
    return GMUX_OK;
}

gmux_status_t dmn_endpoint_connect(const char *path, int *fd_out)
{
    return endpoint_connect(path, 1, fd_out, NULL, 0);
}

gmux_status_t dmn_endpoint_connect_why(const char *path, int *fd_out, char *why, size_t why_cap)
{
    return endpoint_connect(path, 1, fd_out, why, why_cap);
}

gmux_status_t dmn_endpoint_connect_nowait(const char *path, int *fd_out)
{
    return endpoint_connect(path, 0, fd_out, NULL, 0);
}

gmux_status_t dmn_endpoint_connect_nowait_why(const char *path, int *fd_out, char *why,
                                              size_t why_cap)
{
    return endpoint_connect(path, 0, fd_out, why, why_cap);
}

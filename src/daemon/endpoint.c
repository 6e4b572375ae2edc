/* Socket path, permissions and peer credentials of gmuxd; see endpoint.h. */
#include "daemon/endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
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

/* The socket's directory: ours, a real directory, not writable by others. */
static gmux_status_t make_dir(const char *path, gid_t group)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return GMUX_OK; /* relative name or directly under /: nothing to create */
    *slash = '\0';
    mode_t mode = group == DMN_NO_GROUP ? 0700 : 0750;
    if (mkdir(dir, mode) == 0) {
        if (group != DMN_NO_GROUP && (chown(dir, (uid_t)-1, group) != 0 || chmod(dir, mode) != 0))
            return com_status_from_errno(errno);
        return GMUX_OK;
    }
    if (errno != EEXIST)
        return com_status_from_errno(errno);
    struct stat st;
    if (lstat(dir, &st) != 0)
        return com_status_from_errno(errno);
    if (!S_ISDIR(st.st_mode) || (st.st_uid != getuid() && st.st_uid != 0) ||
        ((st.st_mode & 0002) && !(st.st_mode & S_ISVTX))) {
        COM_ERROR(DAEMON, "socket directory %s: not a private directory of this user", dir);
        return GMUX_ERR_PERM;
    }
    return GMUX_OK;
}

gmux_status_t dmn_endpoint_listen(const char *path, gid_t group, int *listen_fd, int *lock_fd)
{
    struct sockaddr_un addr;
    char lock_path[PATH_MAX];
    gmux_status_t st = fill_addr(path, &addr);
    if (st != GMUX_OK)
        return st;
    if ((st = make_dir(path, group)) != GMUX_OK)
        return st;
    snprintf(lock_path, sizeof(lock_path), "%s.lock", path);
    int lk = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lk < 0)
        return com_status_from_errno(errno);
    if (flock(lk, LOCK_EX | LOCK_NB) != 0) {
        st = errno == EWOULDBLOCK ? GMUX_ERR_EXISTS : com_status_from_errno(errno);
        goto close_lock;
    }
    /* The lock file names the daemon's pid, for people and tests that stop it. */
    if (ftruncate(lk, 0) == 0)
        dprintf(lk, "%d\n", (int)getpid());
    /* We hold the lock: a socket file there is a dead daemon's, stale. Any
     * other file is someone's (a path named by mistake) and stays. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISSOCK(sb.st_mode)) {
        COM_ERROR(DAEMON, "%s exists and is not a socket: not replaced", path);
        st = GMUX_ERR_INVALID;
        goto close_lock;
    }
    (void)unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        st = com_status_from_errno(errno);
        goto close_lock;
    }
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
    umask(old);
    if (rc != 0) {
        st = com_status_from_errno(errno);
        goto close_socket;
    }
    if (group != DMN_NO_GROUP && (chown(path, (uid_t)-1, group) != 0 || chmod(path, 0660) != 0)) {
        st = com_status_from_errno(errno);
        goto unlink_socket;
    }
    if (listen(fd, 64) != 0) {
        st = com_status_from_errno(errno);
        goto unlink_socket;
    }
    *listen_fd = fd;
    *lock_fd = lk;
    return GMUX_OK;
unlink_socket:
    unlink(path);
close_socket:
    close(fd);
close_lock:
    close(lk);
    return st;
}

static gmux_status_t endpoint_connect(const char *path, int wait, int *fd_out)
{
    struct sockaddr_un addr;
    gmux_status_t st = fill_addr(path, &addr);
    if (st != GMUX_OK)
        return st;
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
        if (fd < 0)
            return com_status_from_errno(errno);
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
        if (e == EAGAIN || e == EINPROGRESS || e == EINTR)
            return wait ? GMUX_ERR_TIMEOUT : GMUX_ERR_BUSY;
        return e == ENOENT || e == ECONNREFUSED ? GMUX_ERR_PEER : com_status_from_errno(e);
    }
    /* on a Unix socket a connect that did not fail is complete: blocking from here */
    int fl = wait ? 0 : fcntl(fd, F_GETFL);
    if (fl < 0 || (!wait && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) {
        st = com_status_from_errno(errno);
        close(fd);
        return st;
    }
    *fd_out = fd;
    return GMUX_OK;
}

gmux_status_t dmn_endpoint_connect(const char *path, int *fd_out)
{
    return endpoint_connect(path, 1, fd_out);
}

gmux_status_t dmn_endpoint_connect_nowait(const char *path, int *fd_out)
{
    return endpoint_connect(path, 0, fd_out);
}

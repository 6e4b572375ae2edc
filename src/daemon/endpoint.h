/*
 * Where gmuxd listens and who may talk to it: the socket path, its directory
 * and permissions, the listening and connecting sockets, and the peer
 * credential check.
 *
 * The socket lives in a directory of its own, refused if it exists with
 * another owner or is a symbolic link. Only the default path's directory is
 * created (0700, or 0750 and owned by the configured group when there is
 * one): a path the user named (--socket, GMUX_SOCKET) must name an existing
 * directory, so that a typo makes no folder. The socket file is 0600 (0660
 * with a group). Every accepted connection is checked with SO_PEERCRED: only
 * the daemon's own uid or a member of the configured group is allowed.
 *
 * One daemon per path: the lock file PATH.lock, locked with flock, holds the
 * daemon's pid. A stale socket of a dead daemon is replaced, a file of
 * another kind at the path never. The lock file is removed by its holder,
 * while it still holds the lock (a failed start, a clean stop); a starter
 * that locks a file checks that it is still the one at the path, and else
 * tries again on the file there now. So a starter that opened the file just
 * before its holder removed it cannot lock the removed file while another
 * locks a new one: two daemons never hold the path at once. A daemon killed
 * (SIGKILL) leaves its lock file, unlocked: harmless, the next start takes it.
 *
 * Thread-safety: all functions are safe from any thread (no shared state).
 */
#ifndef DMN_ENDPOINT_H
#define DMN_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <gmux/status.h>

#define DMN_NO_GROUP ((gid_t)-1)

/* How long a connect or a send to gmuxd may wait for the daemon to make room. */
#define DMN_ENDPOINT_SEND_WAIT_MS 2000

typedef struct dmn_cred_policy {
    uid_t owner;
    gid_t group; /* DMN_NO_GROUP: owner only */
} dmn_cred_policy_t;

/* The socket path: GMUX_SOCKET when set, else the per-user default. */
gmux_status_t dmn_endpoint_path(char *out, size_t cap);

/* Resolves GMUX_DAEMON_GROUP ("" gives DMN_NO_GROUP). */
gmux_status_t dmn_endpoint_group(gid_t *group);

/*
 * Whether a peer with these credentials may connect: uid is the owner, or a
 * group is configured and gid is it or uid is a member (supplementary groups
 * looked up with getgrouplist unless members is non-NULL: then members/n is
 * the peer's group list, for tests).
 */
int dmn_cred_allowed(const dmn_cred_policy_t *policy, uid_t uid, gid_t gid, const gid_t *members,
                     int n_members);

/* Whether a peer of uid that holds `held` connections already may open one more:
 * the owner always, any other uid (a group member) while it holds fewer than cap,
 * so that no member can take every connection the daemon serves. */
int dmn_cred_room(const dmn_cred_policy_t *policy, uid_t uid, int held, int cap);

/* SO_PEERCRED of a connected Unix socket. */
gmux_status_t dmn_endpoint_peer(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/* Whether the socket path is the per-user default (GMUX_SOCKET not set). */
int dmn_endpoint_path_default(void);

/* dmn_endpoint_listen flags. */
#define DMN_LISTEN_MAKE_DIR 1u /* create the socket's directory when missing */

/*
 * Checks (with DMN_LISTEN_MAKE_DIR creates) the directory, takes the lock and
 * listens (non-blocking socket). GMUX_ERR_EXISTS: another daemon holds the
 * path; GMUX_ERR_INVALID: something that is not a socket is at the path (left
 * as it is). On an error why (when not NULL) gets one line for a user: what
 * failed on which path, and the system's reason (strerror); no lock file is
 * left. On success *listen_fd and *lock_fd are open (dmn_endpoint_unlisten
 * stops).
 */
gmux_status_t dmn_endpoint_listen(const char *path, gid_t group, unsigned flags, int *listen_fd,
                                  int *lock_fd, char *why, size_t why_cap);

/* Stops listening: unlinks the socket when unlink_socket (the path still
 * names this listener's socket), closes listen_fd (unless -1), and removes
 * the lock file, while still holding its lock and only when the file there
 * is still the one lock_fd locks, before closing lock_fd (unless -1). */
void dmn_endpoint_unlisten(const char *path, int listen_fd, int lock_fd, int unlink_socket);

/* Connects (blocking socket, close-on-exec). GMUX_ERR_PEER: nobody listening;
 * GMUX_ERR_TIMEOUT: the daemon's queue of connections stayed full for
 * DMN_ENDPOINT_SEND_WAIT_MS. Sends on the socket give up (EAGAIN) after as
 * long without room (SO_SNDTIMEO). */
gmux_status_t dmn_endpoint_connect(const char *path, int *fd);

/* As dmn_endpoint_connect; on an error why gets the reason for a user,
 * without the path: the system's (strerror: "No such file or directory" for
 * a missing socket, "Connection refused" for a dead daemon's), or that the
 * queue of connections stayed full. */
gmux_status_t dmn_endpoint_connect_why(const char *path, int *fd, char *why, size_t why_cap);

/* As dmn_endpoint_connect, but never waits: GMUX_ERR_BUSY at once when the
 * daemon's queue of connections is full. The socket is blocking, with the
 * same send timeout. The _why form says why as dmn_endpoint_connect_why. */
gmux_status_t dmn_endpoint_connect_nowait(const char *path, int *fd);
gmux_status_t dmn_endpoint_connect_nowait_why(const char *path, int *fd, char *why, size_t why_cap);

#endif /* DMN_ENDPOINT_H */

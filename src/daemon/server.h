/*
 * gmuxd's event loop: accepts tasks and CLI queries on the Unix socket,
 * decodes their messages (proto.h), feeds the arbiter (arbiter.h) and sends
 * its decisions: PLAN orders, GRANT, REVOKE, STATUS.
 *
 * Robustness: a connection that sends anything malformed (bad magic,
 * version, length, type, a message of the wrong direction or out of order)
 * is dropped and its task reclaimed; so is one that hangs up (POLLHUP/EOF,
 * seen at once) or whose process is gone (checked every 200 ms by pid), or
 * one that stops reading its socket. Sends never block: what a socket does
 * not take at once is queued for that connection, in order, and sent as the
 * peer reads; a connection whose queue passes 16 MiB is the one dropped for
 * not reading. A connection must send its first whole message (REGISTER, or
 * QUERY for gmux status/top and the connection gmux run holds) within
 * DMN_SERVER_HELLO_MS of being accepted, or it is closed: a peer that connects
 * and says nothing cannot hold one of the DMN_SERVER_MAX_CONNS slots for long.
 * After its first message a connection has no deadline for being silent, but a
 * message it begins must arrive whole within GMUX_DAEMON_MSG_MS (default
 * DMN_SERVER_MSG_MS; else it is dropped, its task reclaimed); a uid other
 * than the daemon's (a GMUX_DAEMON_GROUP member) holds at most
 * DMN_SERVER_MAX_CONNS_PER_UID of the slots and DMN_SERVER_MAX_TASKS_PER_UID
 * tasks, and the members together leave DMN_SERVER_OWNER_CONNS connections and
 * DMN_SERVER_OWNER_TASKS tasks to the owner. Refused connections, and malformed
 * messages, are logged at most once a second per reason, with a count of those
 * not logged; messages of another protocol version at most once a minute (a
 * stale client library retries every second while its task runs). Each poll round handles at most
 * DMN_SERVER_MSGS_PER_ROUND messages of a connection, so a peer that writes without pause cannot
 * hold off the others. The
 * daemon itself only stops on *stop, a listening-socket failure, or its path
 * taken by another daemon: it checks every second that the path still names
 * the socket it bound and, when not (its directory removed), listens there
 * again; it unlinks the path when it stops only while it is still its own.
 *
 * Thread-safety: one server per process, run on one thread.
 */
#ifndef DMN_SERVER_H
#define DMN_SERVER_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include <gmux/status.h>

#include "daemon/arbiter.h"
#include "daemon/placement.h"

/* Connections served at once: two per task (the shim's, and the one `gmux
 * run` leaves its program to keep the daemon from exiting idle), and room for
 * gmux status / top. Further ones are closed at once. */
#define DMN_SERVER_MAX_CONNS (2 * DMN_ARB_MAX_TASKS + 32)
/* What a uid other than the daemon's own (a member of GMUX_DAEMON_GROUP) may
 * hold at once, so that no member takes every slot, of tasks or connections,
 * from the owner and the other members: a quarter of the arbiter's tasks, and
 * two connections per task (the shim's and gmux run's) with 16 more for gmux
 * status / top. A member's REGISTER beyond its tasks is answered REFUSED
 * (GMUX_ERR_CAPACITY, the reason saying which cap) and closed; a connection
 * beyond its connections is closed at once, unanswered. Both are logged, at
 * most a line a second. The owner has no cap of its own. */
#define DMN_SERVER_MAX_TASKS_PER_UID (DMN_ARB_MAX_TASKS / 4)
#define DMN_SERVER_MAX_CONNS_PER_UID (2 * DMN_SERVER_MAX_TASKS_PER_UID + 16)
/* Kept for the owner whatever the members do together: the members' tasks
 * and connections, all uids but the owner's summed, stay below the totals by
 * this much (DMN_ARB_MAX_TASKS - 32 tasks, DMN_SERVER_MAX_CONNS - 80). */
#define DMN_SERVER_OWNER_TASKS 32
#define DMN_SERVER_OWNER_CONNS (2 * DMN_SERVER_OWNER_TASKS + 16)
/* How long an accepted connection may take to send its first whole message.
 * A client sends it right after connecting; 3 s leaves a loaded host ample
 * room and frees a slot held by a silent peer soon. */
#define DMN_SERVER_HELLO_MS 3000
/* Messages handled per connection and poll round. A peer writes faster than
 * the daemon handles (16 bytes of IDLE cost it a decode and an arbiter call),
 * so reading a socket until it was empty let one flooding peer keep the daemon
 * from deciding and from every other peer. 64 is far more than a task says
 * between two of its kernel boundaries. A message is handled in the first
 * round that polls after it arrived: of a connection whose input came at the
 * same time, at most this many are handled before it, whatever the connections'
 * order (test_daemon_faults, test_flood_does_not_starve). */
#define DMN_SERVER_MSGS_PER_ROUND 64
/* How long a message may take to arrive whole once its first byte came, on
 * any connection: a peer that sends part of a header or of a payload and then
 * nothing (its process alive: stopped, hung, hostile) is dropped at this
 * bound and its task reclaimed as if it had been killed, one warning logged;
 * else it would keep its slot for ever, and the turn, when it holds it, until
 * the grace period. Clients write a message in one send; the rest of one the
 * socket did not take follows as soon as the daemon reads (the client library
 * gives up on a daemon that reads nothing for 2 s, DMN_ENDPOINT_SEND_WAIT_MS).
 * 5 s is far more than a live client needs on a loaded host. Counted per
 * message: a slow sender whose every message completes in time is kept. The
 * default of GMUX_DAEMON_MSG_MS (dmn_server_opts_t.msg_ns). */
#define DMN_SERVER_MSG_MS 5000
/* Quantum, grace period, eviction wait and message bound
 * (GMUX_DAEMON_QUANTUM_MS, _GRACE_MS, _EVICT_WAIT_MS, _MSG_MS, --quantum-ms)
 * are below this many milliseconds: an hour. */
#define DMN_SERVER_MAX_MS 3600000

typedef struct dmn_server_opts {
    const char *path; /* socket path */
    gid_t group;      /* DMN_NO_GROUP or the allowed group */
    uint64_t quantum_ns, grace_ns;
    const dmn_placement_t *placement; /* NULL: "none" */
    uint64_t idle_exit_ns;            /* exit after this long without a connection; 0: never */
    /* 1: stderr becomes /dev/null once the socket listens (a daemon spawned
     * in the background says why it could not start on its caller's stderr,
     * and then holds nothing of the caller's) */
    int quiet_when_ready;
    /* At a switch that evicts memory of tasks other than the one granted:
     * how long the GRANT and the fill ahead wait for those tasks' EVICTED
     * (GMUX_DAEMON_EVICT_WAIT_MS); 0: they never wait (nor are EVICTED
     * reports asked for). */
    uint64_t evict_wait_ns;
    /* How long a message may take to arrive whole once its first byte came
     * (GMUX_DAEMON_MSG_MS); 0: DMN_SERVER_MSG_MS. */
    uint64_t msg_ns;
    /* 1: the socket's directory is created when missing (only the default
     * path's: dmn_endpoint_path_default); 0: it must exist. Either way a
     * directory removed while the daemon serves is made again. */
    int make_dir;
    /* When not NULL: why the daemon could not start (listen), one line for
     * a user with the path and the system's reason (dmn_endpoint_listen). */
    char *why;
    size_t why_cap;
} dmn_server_opts_t;

/* Fills all of opts from the settings (GMUX_SOCKET, GMUX_DAEMON_*; quiet_when_ready 0, make_dir
 * when GMUX_SOCKET is not set, why NULL); path points
 * to path_buf. idle_exit_s_default stands for GMUX_DAEMON_IDLE_EXIT_S when that is -1 (not set): 0
 * for `gmux daemon`, 60 for the gmuxd `gmux run` starts. */
gmux_status_t dmn_server_opts_from_settings(dmn_server_opts_t *opts, char *path_buf,
                                            size_t path_cap, int64_t idle_exit_s_default);

/*
 * Listens on opts->path and serves until *stop becomes non-zero (a signal
 * handler sets it). ready_fd >= 0: one byte is written to it once the socket
 * accepts connections, then it is closed (for a parent waiting on a pipe).
 * GMUX_ERR_EXISTS: a daemon already serves this path.
 */
gmux_status_t dmn_server_run(const dmn_server_opts_t *opts, volatile sig_atomic_t *stop,
                             int ready_fd);

/* The longest why a daemon started in the background sends its starter. */
#define DMN_SPAWN_WHY_MAX 512

/* How long dmn_server_spawn tries again while another process holds the
 * socket's lock without answering on it. */
#define DMN_SPAWN_RETRY_MS 3000

/*
 * Starts a daemon for opts->path in the background (fork, setsid, stdin and
 * stdout to /dev/null, stderr too once it listens) and returns once it
 * accepts connections, or at once with GMUX_OK when one already does. A
 * daemon that cannot listen sends its status and why (opts->why, at most
 * DMN_SPAWN_WHY_MAX bytes) back through a pipe; both are returned, why in
 * opts->why when given (GMUX_ERR_PEER when it said nothing within 5 s). The
 * daemon is named gmuxd, in its comm and its command line ("gmuxd --socket
 * PATH", overwriting the caller's argv in the forked copy). While another process
 * holds the socket's lock and nobody answers on it (a starter before its
 * listen(), a killed daemon not yet gone), it tries again for
 * DMN_SPAWN_RETRY_MS, then returns GMUX_ERR_PEER. For `gmux daemon` and
 * `gmux run`.
 */
gmux_status_t dmn_server_spawn(const dmn_server_opts_t *opts);

#endif /* DMN_SERVER_H */

/*
 * gmuxd's connections, the part of the server (server.c) that is not about
 * messages: who may connect (credentials, caps, free slots; refusals logged
 * through refusals.h), the output queue that keeps the daemon from ever
 * waiting on a peer, the first-message and message deadlines, the check for dead pids,
 * and a connection's end, which reclaims its task. Internal to the server:
 * server.c and server_conn.c share these types.
 *
 * Thread-safety: none; the server's one thread owns all of it.
 */
#ifndef DMN_SERVER_CONN_H
#define DMN_SERVER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/arbiter.h"
#include "daemon/endpoint.h"
#include "daemon/proto.h"
#include "daemon/refusals.h"
#include "daemon/server.h"
#include "daemon/server_hold.h"

/* One peer's connection. */
typedef struct dmn_conn {
    int fd;       /* -1: free */
    int slot;     /* arbiter slot once registered, -1 before */
    pid_t pid;    /* from SO_PEERCRED */
    uid_t uid;    /* likewise: DMN_SERVER_MAX_CONNS_PER_UID */
    uint8_t *buf; /* DMN_PROTO_MAX_MSG bytes of input */
    size_t len;
    uint8_t *out; /* what the socket did not take yet, in order: out[out_off, out_len) */
    size_t out_off, out_len, out_cap;
    bool backlog; /* buf holds whole messages left for the next round (DMN_SERVER_MSGS_PER_ROUND) */
    uint64_t request; /* number of the last PENDING read: what a GRANT answers */
    /* closed at this time unless a whole message came by then; 0 once one
     * did (server.h, DMN_SERVER_HELLO_MS) */
    uint64_t hello_by;
    /* closed at this time unless the message begun by then is whole; 0 while
     * buf holds no part of one (server.h, GMUX_DAEMON_MSG_MS) */
    uint64_t msg_by;
    /* refused (dmn_conn_refuse) with its REFUSED still queued: closed once
     * the queue is sent, or at this time; 0 otherwise */
    uint64_t close_by;
} dmn_conn_t;

/* The kinds of refusal logged (refusals.h). */
enum {
    DMN_REFUSE_PEERCRED, /* its credentials (SO_PEERCRED) could not be read */
    DMN_REFUSE_CRED,     /* of a uid neither the owner nor of the allowed group */
    DMN_REFUSE_FULL,
    DMN_REFUSE_UID_CONNS,
    DMN_REFUSE_GROUP_CONNS,
    DMN_REFUSE_TASKS,
    DMN_REFUSE_VERSION,   /* a message of another protocol version (a line a minute) */
    DMN_REFUSE_MALFORMED, /* any other message that does not decode */
    DMN_REFUSE_SILENT,    /* closed: no whole message within DMN_SERVER_HELLO_MS (a minute) */
    DMN_REFUSE_STALLED,   /* dropped: part of a message, not the rest (a line a minute) */
    DMN_REFUSE_NOMEM,     /* ended: no memory for its input buffer or its output queue */
    DMN_REFUSE_ACCEPT,    /* accept4 failed: no descriptor or memory for the connection */
    DMN_REFUSE_UNREAD,    /* closed: its REFUSED not read in time (a line a minute) */
    DMN_REFUSE_KINDS
};

/* The server: its connections, the arbiter they feed, its refusal logs. */
typedef struct dmn_srv {
    const dmn_server_opts_t *opts;
    dmn_cred_policy_t policy;
    int listen_fd, lock_fd;
    /* The socket file as bound (dmn_conn_listen): the path is still this
     * daemon's while stat gives this device and inode. */
    dev_t sock_dev;
    ino_t sock_ino;
    uint64_t next_path_check;
    bool path_lost_said; /* the path could not be listened on again: warned */
    dmn_conn_t conns[DMN_SERVER_MAX_CONNS];
    int conn_of_slot[DMN_ARB_MAX_TASKS];
    dmn_arbiter_t arb;
    dmn_hold_t hold; /* a switch waiting for its evictions (server_hold.h) */
    uint32_t seq;
    uint64_t next_pid_check;
    /* accept4 failed for want of descriptors or memory: the listening socket
     * is not polled before this time (dmn_conn_accepting) */
    uint64_t accept_after;
    dmn_refusals_t refused[DMN_REFUSE_KINDS];
    uint8_t out[DMN_PROTO_MAX_MSG]; /* the message being sent */
    dmn_status_task_t snap[DMN_ARB_MAX_TASKS];
} dmn_srv_t;

/* Listens on s->opts->path (dmn_endpoint_listen with flags: the directory,
 * the lock, the socket; why as there) and notes the socket file it bound. */
gmux_status_t dmn_conn_listen(dmn_srv_t *s, unsigned flags, char *why, size_t why_cap);

/* Whether the path still names the socket this daemon bound (a daemon
 * unlinks it when it stops only then: else it is another daemon's). */
bool dmn_conn_path_ours(const dmn_srv_t *s);

/* Once a second: when the path no longer names this daemon's socket (its
 * directory removed by a cleaner of /tmp or the runtime directory, by hand),
 * listens there again, so new tasks reach this daemon and no second one
 * starts beside it. Returns -1 when another daemon holds the path now: this
 * one must stop (its tasks then go local and join that one); else 0 (a path
 * that cannot be listened on for another reason is warned about once and
 * tried again a second later). */
int dmn_conn_check_path(dmn_srv_t *s, uint64_t now);

/* Ends c (closes it, frees its buffers) and, when it had registered, removes
 * its task from the arbiter; why is logged with the task. c is free after. */
void dmn_conn_drop(dmn_srv_t *s, dmn_conn_t *c, const char *why);

/* Whether bytes wait in c's output queue (poll for POLLOUT). */
bool dmn_conn_has_output(const dmn_conn_t *c);

/* Sends one message (len bytes of s->out), or the part the socket does not
 * take now into c's queue, behind whatever is queued already: the daemon
 * never waits for a peer, and a peer reads its messages whole and in order.
 * A queue that would pass 16 MiB drops c (not reading its socket); so does
 * one that cannot grow for want of memory (a warning, DMN_REFUSE_NOMEM), and
 * a message that did not encode (len 0: an error line). EINTR is EAGAIN here:
 * the rest waits in the queue. Returns 0 when sent or queued; -1 when the
 * connection was dropped. */
int dmn_conn_send(dmn_srv_t *s, dmn_conn_t *c, size_t len);

/* Sends what c's socket takes of its queue (on POLLOUT); frees the queue
 * once empty, and then ends a connection refused (dmn_conn_refuse). May
 * drop c. */
void dmn_conn_flush(dmn_srv_t *s, dmn_conn_t *c);

/* Sends c a REFUSED (len bytes of s->out, as dmn_conn_send) and ends it: at
 * once when the socket took it whole; else once its queue is sent
 * (dmn_conn_flush), so the peer reads the refusal and its reason before the
 * close, and nothing more of its input is read meanwhile. A peer that has
 * not read it all within GMUX_DAEMON_MSG_MS is closed then (a warning,
 * DMN_REFUSE_UNREAD; dmn_conn_check_deadlines). Until 2026-12-03 the
 * connection was closed at once, and a REFUSED the socket did not take
 * whole was lost: the peer read part of it and the end of the stream. */
void dmn_conn_refuse(dmn_srv_t *s, dmn_conn_t *c, size_t len);

/* Whether c was refused and waits for its REFUSED to be sent: it is polled
 * for POLLOUT only, its input left unread. */
bool dmn_conn_closing(const dmn_conn_t *c);

/* Accepts the waiting connections (up to 64 per call) into free slots, or
 * closes those whose credentials cannot be read, of a uid not allowed, over a
 * cap, without a slot or without memory for their input buffer (each logged,
 * refusals.h). A failed accept4 ends the call: after EINTR the listening
 * socket stays readable and the next poll comes back to it; after a failure
 * for want of descriptors or memory it is left alone a while (logged,
 * dmn_conn_accepting). */
void dmn_conn_accept_all(dmn_srv_t *s);

/* Whether the listening socket is polled now: not for 100 ms after accept4
 * failed for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM),
 * which leaves the connection in the listen queue and the socket readable:
 * polling it at once would spin. Until then *next (a poll deadline) is cut
 * to when it is polled again. */
bool dmn_conn_accepting(const dmn_srv_t *s, uint64_t now, uint64_t *next);

/* After c's input was handled (consumed bytes of whole messages taken from
 * its buffer, c->len left): starts the clock of a message begun, or stops it
 * once none is (s->opts->msg_ns, GMUX_DAEMON_MSG_MS). */
void dmn_conn_note_input(const dmn_srv_t *s, dmn_conn_t *c, size_t consumed, uint64_t now);

/* c's next deadline (first message, one begun, or a REFUSED to be read):
 * UINT64_MAX when none. */
uint64_t dmn_conn_deadline(const dmn_conn_t *c);

/* Closes the connections that have not sent a whole message in time: their
 * first (DMN_SERVER_HELLO_MS), or one they began (GMUX_DAEMON_MSG_MS); a
 * registered one's task is reclaimed. Closes too those refused that have
 * not read their REFUSED in time (dmn_conn_refuse). */
void dmn_conn_check_deadlines(dmn_srv_t *s, uint64_t now);

/* Drops, every 200 ms, registered connections whose process is gone. */
void dmn_conn_check_pids(dmn_srv_t *s, uint64_t now);

#endif /* DMN_SERVER_CONN_H */

/*
 * The client library's insides, shared by its two files: client.c (the
 * connection: registration, reconnection with backoff, local mode, the send
 * queue, the calls of client.h) and client_read.c (what comes from the
 * daemon: reading the socket and acting on each message, the grant and the
 * orders handed to the callbacks). Not for other users: client.h is the API.
 *
 * Thread-safety: as client.h (one thread at a time per client).
 */
#ifndef DMN_CLIENT_INTERNAL_H
#define DMN_CLIENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/client.h"
#include "daemon/proto.h"

/* Bytes the client keeps for a daemon that does not read, beyond what its
 * socket buffers: four of the largest messages, in a buffer allocated with
 * the client, so that sending never allocates. More, and it goes local. */
#define QUEUE_MAX (4 * DMN_PROTO_MAX_MSG)

struct dmn_client {
    dmn_client_opts_t opts;
    char path[108];
    char name[DMN_NAME_MAX];
    int fd; /* -1: local mode */
    uint32_t task_id, registrations, seq;
    uint64_t epoch; /* one more at every connection's start and end: dmn_client_epoch */
    int holding, revoked, announced, have_stats;
    int told_ungated; /* a daemon would not register it (the task runs ungated): warned, once */
    uint64_t request; /* PENDING messages sent: the number of the last one */
    uint64_t idle_request; /* request when IDLE was last sent: a GRANT answers a later one */
    uint64_t grant_seq;
    uint32_t grant_flags; /* of that GRANT (proto.h DMN_GRANT_*) */
    /* An EVICTED asked for from inside a read (a callback): sent once the
     * read is over (pump); 0: none. */
    uint64_t evicted_due;
    uint32_t evicted_failed;
    int in_read;
    uint64_t backoff_ns, next_retry_ns;
    uint64_t retry_backoff;     /* backoff_ns when the reconnection under way began */
    uint64_t register_deadline; /* a REGISTER sent and not answered: given up then */
    uint32_t n_launches, n_ranges;
    dmn_msg_stats_t stats;
    size_t in_len;
    /* What the socket did not take yet, in order: q[q_off, q_len) (both 0
     * when nothing waits); since when nothing of it went out (a daemon that
     * reads nothing for STALL_NS while bytes wait is given up). */
    size_t q_off, q_len;
    uint64_t q_stalled_since;
    /* Fixed buffers, none allocated after dmn_client_open: a send or a
     * PENDING that failed for want of memory lost the connection or the
     * working set. The kernel gives their pages as they are first written. */
    uint8_t in[DMN_PROTO_MAX_MSG];
    uint8_t out[DMN_PROTO_MAX_MSG];
    dmn_range_t ranges[DMN_MAX_RANGES]; /* the last PENDING's: sent again at each announce */
    uint8_t q[QUEUE_MAX];
};

/* Connected and registered: launches are gated. Connected with task_id 0,
 * a REGISTER waits for its answer and the client acts as in local mode. */
static inline int dmn_cl_registered(const dmn_client_t *c)
{
    return c->fd >= 0 && c->task_id != 0;
}

static inline int dmn_cl_registering(const dmn_client_t *c)
{
    return c->fd >= 0 && c->task_id == 0;
}

/* client.c: the connection ends (why: in the log), and the client runs in
 * local mode until a reconnection; what was queued for the daemon is
 * dropped. */
void dmn_cl_go_local(dmn_client_t *c, const char *why);
/* dmn_cl_go_local with the reason "what: <errno text>". */
void dmn_cl_go_local_errno(dmn_client_t *c, const char *what, int err);
/* client.c: sends what waits in the queue, as much as the socket takes now.
 * 0, or -1 when the client went local. */
int dmn_cl_flush_queue(dmn_client_t *c);
/* client.c: sends the first len bytes of c->out without ever waiting (what
 * the socket does not take waits in the queue). */
gmux_status_t dmn_cl_send_out(dmn_client_t *c, size_t len);
/* client.c: sends the EVICTED a callback asked for (c->evicted_due). */
gmux_status_t dmn_cl_send_evicted(dmn_client_t *c);

/* client_read.c: receives and processes what has arrived, waiting up to
 * timeout_ms for the first byte, and calls on_read_end once nothing more
 * waits (if a message came; not when the connection ends: its orders are
 * void); then sends the EVICTED a callback asked for during the read.
 * Returns -1 when the connection ended (now in local mode) or when a
 * REFUSED arrived (*refused set, when refused is not NULL). */
int dmn_cl_pump(dmn_client_t *c, int timeout_ms, int *refused);

#endif /* DMN_CLIENT_INTERNAL_H */

/*
 * net_rdv: the rendezvous server of a job, run by the launcher. Ranks
 * connect to it (boot.h), it completes their allgathers and barriers, and it
 * tells every rank when one dies, so that no rank waits for a dead peer.
 *
 * It never blocks on one rank: incoming frames are gathered as bytes
 * arrive, outgoing ones queued per rank and written as each socket takes
 * them. A rank that leaves a frame half sent, or its queue unread past the
 * limits below, is dropped and announced dead like one whose connection
 * closed; a rank that joins after a death is told of it at once. A round
 * the server cannot complete (no memory, a result larger than
 * NET_BOOT_MAX_LEN) is answered on every rank with an ERROR frame.
 *
 * Ownership: net_rdv_create allocates, net_rdv_destroy frees and closes.
 * Thread-safety: single-threaded (the launcher's loop).
 */
#ifndef NET_RDV_H
#define NET_RDV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

typedef struct net_rdv net_rdv_t;

/* Listens on addr (numeric IPv4, 127.0.0.1 for local jobs) for size ranks.
 * On an error why (when not NULL) gets one line for a user
 * (net_sock_listen's, or that memory ran out). */
gmux_status_t net_rdv_create(const char *addr, int size, net_rdv_t **rdv_p, char *why,
                             size_t why_cap);
void net_rdv_destroy(net_rdv_t *rdv);
int net_rdv_port(const net_rdv_t *rdv);

/* How long a rank may read nothing while frames wait for it (default 5 s;
 * a slow reader is kept: reading shows as its socket taking bytes or its
 * kernel acknowledging them, and a rank past it is looked at once more
 * before it is dropped, so that a stall of the server's own loop is not
 * blamed on it), and
 * how many bytes a rank may leave queued and unread (default: the largest
 * frame plus 1 MiB); past either the rank is dropped as dead. Tests move
 * them; 0 keeps a default. */
void net_rdv_set_limits(net_rdv_t *rdv, uint64_t send_ns, size_t queue_max);

/* How long a connection may take to say HELLO, and a frame begun to arrive
 * whole (default 5 s); past it the connection is dropped (a rank's as
 * dead). Tests lengthen it to tell "not held by a stray" from "held until
 * the stray's deadline" without timing anything; 0 keeps the default. */
void net_rdv_set_recv_wait(net_rdv_t *rdv, uint64_t recv_ns);

/* The clock every deadline of the server is read on: now(arg), in
 * nanoseconds, never going back (default com_clock_ns). Tests set one they
 * move by hand, so that what a rank did between two steps decides whether
 * it is dropped, not how the host scheduled the server and the rank; now
 * NULL restores the default. Set it before any rank connects. */
typedef uint64_t (*net_rdv_clock_fn)(void *arg);
void net_rdv_set_clock(net_rdv_t *rdv, net_rdv_clock_fn now, void *arg);

/* fn(arg, rank) is called once for each rank as it is announced gone (it
 * died, or left after a death), whether the server saw its connection close
 * or the launcher reported its exit, before the notices leave: the launcher
 * removes what the rank left in /dev/shm before the others hear of it. */
typedef void (*net_rdv_gone_fn)(void *arg, int rank);
void net_rdv_on_gone(net_rdv_t *rdv, net_rdv_gone_fn fn, void *arg);

/* Waits up to timeout_ms for traffic and handles it. */
void net_rdv_step(net_rdv_t *rdv, int timeout_ms);

/* The launcher saw rank exit; a rank that did not say BYE, or failed, is
 * announced dead to the others, and so is one that said BYE after another
 * rank died (the survivors still running may be addressing it). A failed
 * rank already announced as left (its connection closed after its BYE) is
 * announced again, as died. */
void net_rdv_rank_exited(net_rdv_t *rdv, int rank, bool failed);

/* Reads what an exited rank left in its socket (its BYE may still be there
 * when the launcher sees the exit first); call before net_rdv_said_bye. */
void net_rdv_drain(net_rdv_t *rdv, int rank);

/* Whether rank said BYE (finalised). */
bool net_rdv_said_bye(const net_rdv_t *rdv, int rank);

/* Whether rank's HELLO was ever taken (it joined, whatever came after). */
bool net_rdv_joined(const net_rdv_t *rdv, int rank);

#endif /* NET_RDV_H */

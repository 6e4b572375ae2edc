/*
 * net_sock: blocking TCP helpers with deadlines for the bootstrap (client
 * and server). Only numeric IPv4 addresses are accepted.
 *
 * Thread-safety: stateless; a socket is used by one thread at a time.
 */
#ifndef NET_SOCK_H
#define NET_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

/* Listens on addr (numeric IPv4) with an ephemeral port; *port_p gets it.
 * On an error why (when not NULL) gets one line for a user naming addr:
 * not an IPv4 address (GMUX_ERR_INVALID), or the call that failed and the
 * system's reason (strerror). */
gmux_status_t net_sock_listen(const char *addr, int *fd_p, int *port_p, char *why, size_t why_cap);
/* Accepts a connection on lfd (close-on-exec, TCP_NODELAY); the socket, or
 * -1 with errno set. */
int net_sock_accept(int lfd);
/* Connects to "a.b.c.d:port" (TCP_NODELAY), retrying a refused connect until
 * the deadline. A connect interrupted by a signal is not started over: its
 * handshake goes on, and is waited for (poll, then SO_ERROR). A malformed
 * hostport (GMUX_ERR_INVALID), or a connect that fails for another reason
 * than a refusal, is logged (error level) with the address and the reason. */
gmux_status_t net_sock_connect(const char *hostport, uint64_t deadline_ns, int *fd_p);
/* Writes all of buf; GMUX_ERR_CLOSED when the peer is gone. */
gmux_status_t net_sock_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ns);
/* Reads exactly len bytes; GMUX_ERR_CLOSED on EOF, GMUX_ERR_TIMEOUT at the deadline. */
gmux_status_t net_sock_read_all(int fd, void *buf, size_t len, uint64_t deadline_ns);

#endif /* NET_SOCK_H */

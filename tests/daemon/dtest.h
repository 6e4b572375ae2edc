/*
 * cmocka helpers shared by the daemon's integration tests (with drig.h):
 * raw protocol connections to the rig's daemon (connect, register, a
 * message read with a deadline, a refusal, a QUERY probe, the peer's close),
 * and the daemon started with its stderr in a log (or for group nogroup),
 * the log read back.
 * A helper that fails fails the test with a message naming what failed and
 * the caller's file:line.
 */
#ifndef DTEST_H
#define DTEST_H

#include <stddef.h>
#include <sys/types.h>

#include "daemon/proto.h"
#include "drig.h"

/* A connection to the daemon at sock (not registered). */
#define dtest_connect(sock) dtest_connect_at(__FILE__, __LINE__, (sock))
int dtest_connect_at(const char *file, int line, const char *sock);

/* A connection to the daemon at sock registered as the batch task `name`,
 * its REGISTERED read within 10 s; buf: DMN_PROTO_MAX_MSG bytes of scratch. */
#define dtest_register(sock, name, buf) dtest_register_at(__FILE__, __LINE__, (sock), (name), (buf))
int dtest_register_at(const char *file, int line, const char *sock, const char *name, uint8_t *buf);

/* Connects to sock, sends msg (len bytes) and reads the answer (reads time
 * out after 10 s) into *m (buf: DMN_PROTO_MAX_MSG bytes): it must be REFUSED
 * with status want. Returns the connection. */
#define dtest_refused(sock, msg, len, want, buf, m)                                                \
    dtest_refused_at(__FILE__, __LINE__, (sock), (msg), (len), (want), (buf), (m))
int dtest_refused_at(const char *file, int line, const char *sock, const void *msg, size_t len,
                     gmux_status_t want, uint8_t *buf, dmn_msg_t *m);

/* Reads and decodes one whole message into buf (DMN_PROTO_MAX_MSG bytes) and
 * *m within timeout_s. Returns its type, or -1 on end of file, an error, an
 * undecodable message or the timeout (not a failure: tests expect some). */
int dtest_read(int fd, uint8_t *buf, dmn_msg_t *m, double timeout_s);

/* Reads messages until one of type want came (1) or timeout_s passed (0). */
int dtest_read_until(int fd, uint8_t *buf, int want, double timeout_s);

/* Sends a QUERY on fd: 1 when answered, 0 when the daemon closed it
 * instead, -1 when neither happened within 10 s (no assertion: usable in a
 * forked child). */
int dtest_query_answered(int fd);

/* Whether the peer closes fd within timeout_s (end of file or reset); what
 * it sent before is read and dropped. */
int dtest_closed_by_peer(int fd, double timeout_s);

/* Starts the rig's daemon (quantum 10 ms, placement "none") with its stderr
 * in a file of the rig, whose path goes to log (cap bytes). Returns
 * drig_start_daemon's answer. */
#define dtest_start_logged(r, log, cap) dtest_start_logged_at(__FILE__, __LINE__, (r), (log), (cap))
pid_t dtest_start_logged_at(const char *file, int line, drig_t *r, char *log, size_t cap);

/* drig_init(r), then the rig's daemon (quantum 10 ms, placement "none")
 * started with GMUX_DAEMON_GROUP=nogroup in a directory others may enter,
 * with its stderr in a log as dtest_start_logged when log is not NULL. Skips
 * the test without root or a group 'nogroup'. */
#define dtest_start_group(r, log, cap) dtest_start_group_at(__FILE__, __LINE__, (r), (log), (cap))
void dtest_start_group_at(const char *file, int line, drig_t *r, char *log, size_t cap);

/* The text of the file log so far (one static buffer of 1 MiB, overwritten
 * by the next call). */
#define dtest_log_text(log) dtest_log_text_at(__FILE__, __LINE__, (log))
const char *dtest_log_text_at(const char *file, int line, const char *log);

#endif /* DTEST_H */

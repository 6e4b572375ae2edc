/*
 * Whole protocol messages on a blocking socket, for tests that play one side
 * of gmuxd's protocol themselves (scripted daemons, fake clients). Each read
 * blocks until the message is complete (bound it with SO_RCVTIMEO where a
 * test must not hang).
 *
 * Thread-safety: none beyond the socket's own; buf is the caller's.
 */
#ifndef GMUX_TESTS_MSG_IO_H
#define GMUX_TESTS_MSG_IO_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/proto.h"

/* Reads one whole message into buf (DMN_PROTO_MAX_MSG bytes) and decodes it
 * into *m (which points into buf): 0, or -1 on end of stream, a read error or
 * an undecodable message. */
int tmsg_read(int fd, uint8_t *buf, dmn_msg_t *m);
/* Writes all len bytes: 0, or -1 (short write, error or len 0). */
int tmsg_write_all(int fd, const uint8_t *buf, size_t len);

#endif

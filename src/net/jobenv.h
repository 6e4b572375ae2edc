/*
 * net_jobenv: what gmux launch hands each rank in its environment, read
 * without side effects: the counts GMUX_RANK, GMUX_SIZE and GMUX_NNODES,
 * and GMUX_BOOTSTRAP's "a.b.c.d:port". The callers say what is wrong
 * (comm.c names the variable and the range; sock.c the address). Kept apart
 * from them so that unit tests and fuzz_jobenv reach the parsing alone.
 * Numbers are read as every number a user types (com_parse_i64,
 * common/parse.h): blanks around them and a sign taken, decimal or 0x hex.
 * Until 2026-12-04 they were strtol's, decimal, a leading blank taken and a
 * trailing one refused.
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef NET_JOBENV_H
#define NET_JOBENV_H

#include <netinet/in.h>

#include <gmux/status.h>

/* The largest count net_jobenv_count takes. */
#define NET_JOBENV_COUNT_MAX (1 << 20)

/* A count of the environment: def when text is NULL or empty, else an
 * integer from 0 to NET_JOBENV_COUNT_MAX as com_parse_i64 reads it (blanks
 * alone are no count), else -1. */
int net_jobenv_count(const char *text, int def);

/* "a.b.c.d:port", a numeric IPv4 address (inet_pton's dotted quad, no
 * blank) and a port from 1 to 65535 after the last ':' as com_parse_i64
 * reads it. GMUX_OK with *sa_p filled
 * (AF_INET, network order), else GMUX_ERR_INVALID and *sa_p untouched. */
gmux_status_t net_jobenv_hostport(const char *hostport, struct sockaddr_in *sa_p);

#endif /* NET_JOBENV_H */

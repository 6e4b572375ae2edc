/*
 * gmuxd's log of refused peers (connections whose credentials cannot be
 * read, of a uid not allowed, over a cap, tasks over a group member's cap,
 * messages it cannot read) and of peers it drops (silent, or stalled
 * part-way through a message): each kind logged at most once per its
 * interval (a second unless the kind says otherwise). The first refusal is
 * logged at once; those that come within the interval after a line are
 * counted and said in one line once it has passed (dmn_refusals_flush), so a
 * peer that retries as fast as it can costs the log a line an interval, not
 * one per try. A kind whose peers retry at a steady pace (a client of
 * another protocol version, every second for as long as its task runs) takes
 * an interval well above it.
 *
 * Thread-safety: none (the server's event loop owns them).
 */
#ifndef DMN_REFUSALS_H
#define DMN_REFUSALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Refusals of one kind. */
typedef struct dmn_refusals {
    uint64_t total;    /* since the daemon started */
    uint64_t unsaid;   /* refused since the last line, not logged yet */
    uint64_t said_at;  /* when the last line was logged */
    const char *what;  /* the summary line's subject */
    const char *verb;  /* what was done to them, in the summary; NULL: "refused" */
    uint64_t every_ns; /* at most a line per this long; 0: a second */
} dmn_refusals_t;

/* Counts one refusal of r; whether to log it now (else it is counted for the
 * next summary). */
bool dmn_refusal_say(dmn_refusals_t *r, uint64_t now);

/* Logs, for each of the n kinds in r, the refusals counted and not logged,
 * once its interval has passed since its last line. */
void dmn_refusals_flush(dmn_refusals_t *r, size_t n, uint64_t now);

#endif /* DMN_REFUSALS_H */

/*
 * Monotonic time for the whole runtime: timeouts, rate measurements and
 * time-slice accounting all use this clock, never the wall clock.
 *
 * Thread-safety: all functions are safe from any thread.
 */
#ifndef COM_CLOCK_H
#define COM_CLOCK_H

#include <stdint.h>

#define COM_NS_PER_US 1000ull
#define COM_NS_PER_MS 1000000ull
#define COM_NS_PER_S  1000000000ull

/* Nanoseconds since an arbitrary fixed point (CLOCK_MONOTONIC); never goes back. */
uint64_t com_clock_ns(void);

/* Seconds since the same point, as a double, for reports. */
double com_clock_s(void);

/* Sleeps at least ns nanoseconds (restarting after signals). */
void com_clock_sleep_ns(uint64_t ns);

/* A deadline ns from now; UINT64_MAX for ns == UINT64_MAX (never). */
uint64_t com_deadline_after_ns(uint64_t ns);

/* Whether the deadline has passed. */
int com_deadline_passed(uint64_t deadline_ns);

#endif /* COM_CLOCK_H */

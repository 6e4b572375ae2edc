/* Monotonic clock over clock_gettime(CLOCK_MONOTONIC). */
#include "common/clock.h"

#include <errno.h>
#include <time.h>

uint64_t com_clock_ns(void)
{
    struct timespec ts;
    /* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * COM_NS_PER_S + (uint64_t)ts.tv_nsec;
}

double com_clock_s(void)
{
    return (double)com_clock_ns() / (double)COM_NS_PER_S;
}

void com_clock_sleep_ns(uint64_t ns)
{
    struct timespec req = {.tv_sec = (time_t)(ns / COM_NS_PER_S),
                           .tv_nsec = (long)(ns % COM_NS_PER_S)};
    struct timespec rem;
    while (nanosleep(&req, &rem) != 0 && errno == EINTR)
        req = rem;
}

uint64_t com_deadline_after_ns(uint64_t ns)
{
    uint64_t now = com_clock_ns();
    if (ns == UINT64_MAX || ns > UINT64_MAX - now)
        return UINT64_MAX;
    return now + ns;
}

int com_deadline_passed(uint64_t deadline_ns)
{
    return deadline_ns != UINT64_MAX && com_clock_ns() >= deadline_ns;
}

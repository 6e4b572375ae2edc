/* A part file removed when a signal ends the process; see partguard.h. */
#include "common/partguard.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* The part removed on a signal, and the signals' dispositions before the
 * guard (installed[i]: the guard's handler is in place). */
static char guard_part[PATH_MAX]; /* a path: every call refuses a longer one */
static const int guard_sigs[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction guard_old[3];
static bool guard_installed[3];

static void guard_on_signal(int sig)
{
    unlink(guard_part);
    for (int i = 0; i < 3; i++)
        if (guard_sigs[i] == sig)
            sigaction(sig, &guard_old[i], NULL);
    raise(sig); /* blocked until the handler returns, then as before */
}

int com_part_guard(const char *part)
{
    size_t n = strlen(part);
    if (n >= sizeof(guard_part))
        return ENAMETOOLONG; /* before a byte of guard_part changes */
    memcpy(guard_part, part, n + 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = guard_on_signal;
    sigfillset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        sigaction(guard_sigs[i], NULL, &guard_old[i]);
        guard_installed[i] = guard_old[i].sa_handler != SIG_IGN;
        if (guard_installed[i])
            sigaction(guard_sigs[i], &sa, NULL);
    }
    return 0;
}

void com_part_unguard(void)
{
    for (int i = 0; i < 3; i++)
        if (guard_installed[i])
            sigaction(guard_sigs[i], &guard_old[i], NULL);
    memset(guard_installed, 0, sizeof(guard_installed));
}

#include "client_go.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/parse.h"

/* GMUX_TEST_CLIENT_WAIT_S in ns (whole seconds, 1 to 86400), else 20 s. */
static uint64_t client_wait_ns(void)
{
    const char *env = getenv("GMUX_TEST_CLIENT_WAIT_S");
    uint64_t s;
    if (!env || com_parse_u64(env, &s) != GMUX_OK || s == 0 || s > 86400)
        s = 20;
    return s * COM_NS_PER_S;
}

int client_go_wait(dmn_client_t *c, const char *name)
{
    return client_file_wait(c, name, "GMUX_TEST_CLIENT_GO");
}

int client_file_wait(dmn_client_t *c, const char *name, const char *var)
{
    const char *go = getenv(var);
    uint64_t wait = client_wait_ns(), go_by = com_deadline_after_ns(wait);
    while (go && access(go, F_OK) != 0) {
        if (com_deadline_passed(go_by)) {
            fprintf(stderr, "%s: no %s within %llu s\n", name, go,
                    (unsigned long long)(wait / COM_NS_PER_S));
            return -1;
        }
        (void)dmn_client_poll(c); /* answers the daemon meanwhile */
        com_clock_sleep_ns(2 * COM_NS_PER_MS);
    }
    return 0;
}

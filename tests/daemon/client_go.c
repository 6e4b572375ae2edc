#include "client_go.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"

int client_go_wait(dmn_client_t *c, const char *name)
{
    return client_file_wait(c, name, "GMUX_TEST_CLIENT_GO");
}

int client_file_wait(dmn_client_t *c, const char *name, const char *var)
{
    const char *go = getenv(var);
    uint64_t go_by = com_deadline_after_ns(20 * COM_NS_PER_S);
    while (go && access(go, F_OK) != 0) {
        if (com_deadline_passed(go_by)) {
            fprintf(stderr, "%s: no %s within 20 s\n", name, go);
            return -1;
        }
        (void)dmn_client_poll(c); /* answers the daemon meanwhile */
        com_clock_sleep_ns(2 * COM_NS_PER_MS);
    }
    return 0;
}

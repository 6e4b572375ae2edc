/* The rendezvous server the bootstrap tests start (test_boot,
 * test_boot_stray); include after cmocka.h. */
#ifndef GMUX_TESTS_NET_TBOOT_H
#define GMUX_TESTS_NET_TBOOT_H

#include <stdio.h>

#include "common/clock.h"
#include "net/rdv.h"

static char hostport[64];

/* A rendezvous server for size ranks on loopback; its address in hostport. */
static inline net_rdv_t *rdv_start(int size)
{
    net_rdv_t *rdv;
    assert_int_equal(net_rdv_create("127.0.0.1", size, &rdv, NULL, 0), GMUX_OK);
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%d", net_rdv_port(rdv));
    return rdv;
}

/* A server whose strays would hold it for 10 minutes at their deadline:
 * a rank that joins or hears of a death within its own bound (10-15 s) was
 * not held by them, whatever the machine's load. */
static inline net_rdv_t *rdv_start_patient(int size)
{
    net_rdv_t *rdv = rdv_start(size);
    net_rdv_set_recv_wait(rdv, 600 * COM_NS_PER_S);
    return rdv;
}

#endif /* GMUX_TESTS_NET_TBOOT_H */

/* Tests of a rank's reading of death notices between collectives
 * (net_boot_poll), against a plain socket playing the rendezvous server, so
 * that the bytes of a frame can be sent apart. The server writes a frame's
 * header and its payload in two sends; a rank that read the header used to
 * wait 1 s for the payload and, if it came later (the launcher descheduled),
 * took its connection for lost: every other rank marked dead, no BYE at its
 * finalize, and the launcher named it as a rank that exited without
 * finalizing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "net/boot.h"
#include "net/boot_proto.h"

/* A listening socket on loopback; its port in *port. */
static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t len = sizeof(sa);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* Rank 0 of a 3-rank job connected to a plain listening socket: the
 * rank's end returned, the listener in *lfd and the server's end in *s. */
static net_boot_t *rank0_of_3(int *lfd, int *s)
{
    int port;
    *lfd = listen_any(&port);
    char hp[64];
    snprintf(hp, sizeof(hp), "127.0.0.1:%d", port);
    net_boot_t *b = NULL;
    assert_int_equal(net_boot_open(0, 3, hp, com_deadline_after_ns(5 * COM_NS_PER_S), &b), GMUX_OK);
    *s = accept(*lfd, NULL, NULL);
    assert_true(*s >= 0);
    return b;
}

/* Calls net_boot_poll for about ms milliseconds. */
static void poll_for(net_boot_t *b, int ms)
{
    uint64_t dl = com_deadline_after_ns((uint64_t)ms * COM_NS_PER_MS);
    while (!com_deadline_passed(dl)) {
        net_boot_poll(b);
        com_clock_sleep_ns(COM_NS_PER_MS);
    }
}

/* Rank 0 of 3 is told that rank 1 left after a death, the notice's
 * 4-byte payload 1.5 s after its header (and, in a second notice, the
 * header itself in two parts): the rank keeps polling meanwhile, then
 * reads each whole notice. Only rank 1 is dead; the connection is not
 * taken for lost, so rank 2 is not. */
static void test_notice_in_parts(void **state)
{
    (void)state;
    int lfd, s;
    net_boot_t *b = rank0_of_3(&lfd, &s);
    uint32_t left = NET_BOOT_GONE_LEFT;
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_DEAD, 1, sizeof(left)};
    assert_int_equal(send(s, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    poll_for(b, 1500);
    assert_false(net_boot_dead(b, 1)); /* not read yet: half a frame */
    assert_false(net_boot_dead(b, 2));
    assert_int_equal(send(s, &left, sizeof(left), 0), (ssize_t)sizeof(left));
    poll_for(b, 200);
    assert_true(net_boot_dead(b, 1));
    assert_false(net_boot_dead(b, 2));
    /* rank 2 dies: its notice's header in two parts, 1.5 s apart */
    net_boot_hdr_t h2 = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_DEAD, 2, 0};
    assert_int_equal(send(s, &h2, 5, 0), 5);
    poll_for(b, 1500);
    assert_false(net_boot_dead(b, 2));
    assert_int_equal(send(s, (char *)&h2 + 5, sizeof(h2) - 5, 0), (ssize_t)(sizeof(h2) - 5));
    poll_for(b, 200);
    assert_true(net_boot_dead(b, 2));
    net_boot_close(b, true);
    close(s);
    close(lfd);
}

/* A server that closes the connection half-way through a frame: the rank
 * takes its connection for lost (every other rank dead), as before. */
static void test_closed_mid_frame_is_lost(void **state)
{
    (void)state;
    int lfd, s;
    net_boot_t *b = rank0_of_3(&lfd, &s);
    net_boot_hdr_t h = {NET_BOOT_MAGIC, NET_BOOT_VERSION, NET_BOOT_DEAD, 1, 4};
    assert_int_equal(send(s, &h, sizeof(h), 0), (ssize_t)sizeof(h));
    close(s);
    poll_for(b, 300);
    assert_true(net_boot_dead(b, 1));
    assert_true(net_boot_dead(b, 2));
    net_boot_close(b, true);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notice_in_parts),
        cmocka_unit_test(test_closed_mid_frame_is_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A scripted gmuxd in a forked child: see fake_daemon.h. */
#include "fake_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "msg_io.h"
#include "tproc.h"

/* The child: listen, say so on ctl, take one registration, run the script. */
static int child(const tdmn_t *d, int ctl, uint32_t task_id, tdmn_script_fn script, void *arg)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int lfd, lk;
    if (dmn_endpoint_listen(d->path, DMN_NO_GROUP, 0, &lfd, &lk, NULL, 0) != GMUX_OK)
        return TDMN_ERR_LISTEN;
    if (write(ctl, "r", 1) != 1)
        return TDMN_ERR_LISTEN;
    struct pollfd pf = {lfd, POLLIN, 0};
    int fd = poll(&pf, 1, 20000) == 1 ? accept(lfd, NULL, NULL) : -1;
    dmn_msg_t m;
    if (fd < 0 || tmsg_read(fd, buf, &m) != 0 || m.hdr.type != DMN_MSG_REGISTER)
        return TDMN_ERR_REGISTER;
    dmn_msg_registered_t reg = {task_id, 0, 20 * COM_NS_PER_MS};
    if (tmsg_write_all(fd, buf, dmn_proto_encode_registered(buf, sizeof(buf), 1, &reg)) != 0)
        return TDMN_ERR_ANSWER;
    return script(fd, ctl, arg);
}

static void remove_files(const tdmn_t *d)
{
    char lock[sizeof(d->path) + 8];
    snprintf(lock, sizeof(lock), "%s.lock", d->path);
    unlink(d->path);
    unlink(lock);
}

/* What the child runs: the scripted daemon, or the closer. */
typedef struct child_plan {
    uint32_t task_id;
    tdmn_script_fn script;
    void *arg;
    const uint8_t *answer; /* the closer's (script NULL) */
    size_t len;
    int silent; /* the closer answers nothing and keeps the connection */
} child_plan_t;

/* Connections the silent daemon holds open at once (older ones are closed
 * to make room; a client gives each try up long before). */
#define SILENT_HELD 32

/* Takes the next connection on lfd and reads its REGISTER: 1 when one came
 * (answered with the planned bytes and closed; silent: kept in held, the
 * oldest closed to make room; ending: closed unanswered), 0 when the
 * connection brought none, -1 when no connection waits (lfd non-blocking). */
static int take(int lfd, const child_plan_t *p, int ending, int *held, int *next)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    dmn_msg_t m;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return -1;
    int got = tmsg_read(fd, buf, &m) == 0 && m.hdr.type == DMN_MSG_REGISTER;
    if (got && p->silent && !ending) {
        if (held[*next] >= 0)
            close(held[*next]);
        held[*next] = fd;
        *next = (*next + 1) % SILENT_HELD;
        return 1;
    }
    if (got && p->len && !ending)
        (void)tmsg_write_all(fd, p->answer, p->len);
    close(fd);
    return got;
}

/* The closer: every connection's REGISTER is read, answered with the
 * planned bytes and closed, until ctl ends. Silent (p->silent): every
 * connection's REGISTER is read and left unanswered, the connection open
 * (whatever else comes is read and ignored) until the client closes it.
 * Once ctl ends, the connections still queued are taken too: a client
 * connected and sent its REGISTER before the test ended the child, which
 * the scheduler may have kept from running meanwhile (the count came short:
 * test_client_quiet under load). */
static int closer(const tdmn_t *d, int ctl, const child_plan_t *p)
{
    static uint8_t buf[DMN_PROTO_MAX_MSG];
    int lfd, lk, taken = 0, held[SILENT_HELD], next = 0;
    for (int i = 0; i < SILENT_HELD; i++)
        held[i] = -1;
    if (dmn_endpoint_listen(d->path, DMN_NO_GROUP, 0, &lfd, &lk, NULL, 0) != GMUX_OK)
        return TDMN_ERR_LISTEN;
    if (write(ctl, "r", 1) != 1)
        return TDMN_ERR_LISTEN;
    for (;;) {
        struct pollfd pf[2 + SILENT_HELD] = {{lfd, POLLIN, 0}, {ctl, POLLIN, 0}};
        for (int i = 0; i < SILENT_HELD; i++)
            pf[2 + i] = (struct pollfd){held[i], POLLIN, 0}; /* -1: ignored by poll */
        if (poll(pf, 2 + SILENT_HELD, 20000) <= 0 || pf[1].revents)
            break;
        for (int i = 0; i < SILENT_HELD; i++) /* drained; closed once the client closes */
            if (held[i] >= 0 && pf[2 + i].revents && read(held[i], buf, sizeof(buf)) <= 0) {
                close(held[i]);
                held[i] = -1;
            }
        if (pf[0].revents && take(lfd, p, 0, held, &next) > 0)
            taken += taken < 100;
    }
    if (fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK) == 0)
        for (int r; (r = take(lfd, p, 1, held, &next)) >= 0;)
            taken += r && taken < 100;
    for (int i = 0; i < SILENT_HELD; i++)
        if (held[i] >= 0)
            close(held[i]);
    return TDMN_CLOSER_BASE + taken;
}

static int start(tdmn_t *d, const char *path, const child_plan_t *p)
{
    int sv[2];
    d->pid = 0;
    d->ctl = -1;
    if (snprintf(d->path, sizeof(d->path), "%s", path) >= (int)sizeof(d->path) ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -1;
    d->pid = fork();
    if (d->pid == 0) {
        close(sv[0]);
        _exit(p->script ? child(d, sv[1], p->task_id, p->script, p->arg) : closer(d, sv[1], p));
    }
    close(sv[1]);
    d->ctl = sv[0];
    char b;
    if (d->pid > 0 && read(d->ctl, &b, 1) == 1)
        return 0;
    if (d->pid < 0)
        d->pid = 0;
    tdmn_kill(d); /* it could not listen */
    return -1;
}

int tdmn_start(tdmn_t *d, const char *path, uint32_t task_id, tdmn_script_fn script, void *arg)
{
    child_plan_t p = {task_id, script, arg, NULL, 0, 0};
    return script ? start(d, path, &p) : -1;
}

int tdmn_start_closer(tdmn_t *d, const char *path, const uint8_t *answer, size_t len)
{
    child_plan_t p = {0, NULL, NULL, answer, len, 0};
    return start(d, path, &p);
}

int tdmn_start_silent(tdmn_t *d, const char *path)
{
    child_plan_t p = {0, NULL, NULL, NULL, 0, 1};
    return start(d, path, &p);
}

int tdmn_go(const tdmn_t *d)
{
    return write(d->ctl, "g", 1) == 1 ? 0 : -1;
}

int tdmn_end(tdmn_t *d)
{
    if (d->ctl >= 0)
        close(d->ctl);
    d->ctl = -1;
    int code = tproc_reap(&d->pid);
    remove_files(d);
    return code;
}

void tdmn_kill(tdmn_t *d)
{
    if (d->pid <= 0 && d->ctl < 0)
        return;
    tproc_kill_reap(&d->pid);
    (void)tdmn_end(d);
}

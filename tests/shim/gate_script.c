/* Scripted daemons for the launch-gating tests; see gate_script.h. */
#include "gate_script.h"

#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"
#include "daemon/endpoint.h"

int gs_read_until(int fd, uint8_t *buf, dmn_msg_type_t type, dmn_msg_t *m)
{
    for (int i = 0; i < 10000; i++) {
        if (tmsg_read(fd, buf, m) != 0)
            return -1;
        if (m->hdr.type == type)
            return 0;
    }
    return -1;
}

int gs_read_after(int fd, uint8_t *buf, dmn_msg_type_t after, dmn_msg_type_t type, dmn_msg_t *m)
{
    return gs_read_until(fd, buf, after, m) == 0 ? gs_read_until(fd, buf, type, m) : -1;
}

/* gmux run's connections come first (the probe for a daemon, closed at
 * once; the one it holds, which sends QUERY), then the shim's. */
static int accept_task(int ready, uint8_t *buf, int *fds, int *nfd, dmn_msg_t *m)
{
    int lfd, lk, task = -1;
    if (dmn_endpoint_listen(gh_sock, DMN_NO_GROUP, 0, &lfd, &lk, NULL, 0) != GMUX_OK)
        return -10;
    (void)!write(ready, "r", 1);
    close(ready);
    while (task < 0 && *nfd < 8) {
        struct pollfd pf = {lfd, POLLIN, 0}; /* the listening socket does not block */
        int fd = poll(&pf, 1, 60000) == 1 ? accept(lfd, NULL, NULL) : -1;
        if (fd < 0)
            return -11;
        struct timeval tv = {60, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        fds[(*nfd)++] = fd;
        if (tmsg_read(fd, buf, m) == 0 && m->hdr.type == DMN_MSG_REGISTER)
            task = fd;
    }
    if (task < 0)
        return -12;
    dmn_msg_registered_t r = {1, 0, 20 * COM_NS_PER_MS};
    if (tmsg_write_all(task, buf, dmn_proto_encode_registered(buf, DMN_PROTO_MAX_MSG, 1, &r)) !=
            0 ||
        gs_read_until(task, buf, DMN_MSG_PENDING, m) != 0)
        return -13;
    return task;
}

int gs_accept_big(int ready, uint8_t *buf, int *fds, int *nfd, dmn_msg_t *m, dmn_range_t *big)
{
    int task = accept_task(ready, buf, fds, nfd, m);
    if (task < 0)
        return task;
    *big = (dmn_range_t){0, 0};
    for (uint32_t i = 0; i < m->u.ranges.n_ranges; i++) {
        dmn_range_t x = dmn_proto_range_at(&m->u.ranges, i);
        if (x.len > big->len)
            *big = x;
    }
    return big->len < 1u << 20 ? -14 : task;
}

int gs_grant_to_pause(int ready, uint8_t *buf, int *fds, int *nfd, dmn_range_t *big)
{
    dmn_msg_t m;
    int task = gs_accept_big(ready, buf, fds, nfd, &m, big);
    if (task < 0)
        return task;
    if (gs_grant(task, buf, 2, 1, m.u.ranges.seq) != 0 || gs_wait_file("out0.paused") != 0)
        return -15;
    return task;
}

int gs_conn_paused(int ready, gs_conn_t *c)
{
    c->nfd = 0;
    c->task = gs_grant_to_pause(ready, c->buf, c->fds, &c->nfd, &c->big);
    return c->task < 0 ? -c->task : 0;
}

int gs_conn_released(gs_conn_t *c)
{
    if (gs_batch_send(c->task, &c->w) != 0)
        return -1;
    return gs_read_until(c->task, c->buf, DMN_MSG_RELEASE, &c->m);
}

int gs_conn_regrant(gs_conn_t *c, const char *go, uint32_t seq, uint64_t grant_seq, uint32_t flags)
{
    dmn_msg_t m;
    if (gs_conn_released(c) != 0)
        return -1;
    gh_touch(go);
    if (gs_next_pending(c->task, c->buf, &m) != 0)
        return -1;
    gs_batch_grant_flags(&c->w, seq, grant_seq, m.u.ranges.seq, flags);
    return 0;
}

int gs_conn_send_finish(gs_conn_t *c)
{
    if (gs_batch_send(c->task, &c->w) != 0)
        return 18;
    return gs_finish(c->task, c->buf, c->fds, c->nfd);
}

int gs_grant(int task, uint8_t *buf, uint32_t seq, uint64_t grant_seq, uint64_t request)
{
    dmn_msg_grant_t g = {grant_seq, 20 * COM_NS_PER_MS, request, 0, 0};
    return tmsg_write_all(task, buf,
                          dmn_proto_encode_grant(buf, DMN_PROTO_MAX_MSG, seq, DMN_MSG_GRANT, &g)) ==
                   0
               ? 0
               : -1;
}

int gs_next_pending(int task, uint8_t *buf, dmn_msg_t *m)
{
    if (gs_read_until(task, buf, DMN_MSG_PENDING, m) != 0)
        return -1;
    return gs_read_until(task, buf, DMN_MSG_PENDING, m);
}

int gs_grant_next(int task, uint8_t *buf, uint32_t seq, uint64_t grant_seq)
{
    dmn_msg_t m;
    if (gs_next_pending(task, buf, &m) != 0)
        return -1;
    return gs_grant(task, buf, seq, grant_seq, m.u.ranges.seq);
}

void gs_close(int *fds, int nfd)
{
    unlink(gh_sock);
    for (int i = 0; i < nfd; i++)
        close(fds[i]);
}

int gs_finish(int task, uint8_t *buf, int *fds, int nfd)
{
    dmn_msg_t m;
    while (tmsg_read(task, buf, &m) == 0)
        ;
    gs_close(fds, nfd);
    return 0;
}

static void batch_add(gs_batch_t *w, size_t n)
{
    w->at += n;
    w->failed |= n == 0;
}

void gs_batch_plan(gs_batch_t *w, uint32_t seq, uint32_t kind, uint64_t grant_seq,
                   const dmn_range_t *r, uint32_t n)
{
    batch_add(w, dmn_proto_encode_ranges(w->b + w->at, sizeof(w->b) - w->at, seq, DMN_MSG_PLAN,
                                         kind, grant_seq, r, n));
}

void gs_batch_grant(gs_batch_t *w, uint32_t seq, uint64_t grant_seq, uint64_t request)
{
    gs_batch_grant_flags(w, seq, grant_seq, request, 0);
}

void gs_batch_grant_flags(gs_batch_t *w, uint32_t seq, uint64_t grant_seq, uint64_t request,
                          uint32_t flags)
{
    dmn_msg_grant_t g = {grant_seq, 20 * COM_NS_PER_MS, request, flags, 0};
    batch_add(w,
              dmn_proto_encode_grant(w->b + w->at, sizeof(w->b) - w->at, seq, DMN_MSG_GRANT, &g));
}

void gs_batch_revoke(gs_batch_t *w, uint32_t seq, uint64_t grant_seq)
{
    dmn_msg_grant_t r = {grant_seq, 0, 0, 0, 0};
    batch_add(w,
              dmn_proto_encode_grant(w->b + w->at, sizeof(w->b) - w->at, seq, DMN_MSG_REVOKE, &r));
}

int gs_batch_send(int task, gs_batch_t *w)
{
    int rc = !w->failed && tmsg_write_all(task, w->b, w->at) == 0 ? 0 : -1;
    w->at = 0;
    w->failed = 0;
    return rc;
}

int gs_wait_file(const char *name)
{
    const char *path = gh_path(name);
    struct stat st;
    for (int i = 0; i < 6000 && stat(path, &st) != 0; i++)
        gh_sleep_ms(10);
    return stat(path, &st) == 0 ? 0 : -1;
}

void gs_start_pair(const gh_spec_t *spec, int (*script)(int), pid_t *fake, pid_t *prog)
{
    gs_start_pair_log(spec, script, NULL, fake, prog);
}

void gs_start_pair_log(const gh_spec_t *spec, int (*script)(int), const char *log, pid_t *fake,
                       pid_t *prog)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    *fake = gh_fork();
    if (*fake == 0) {
        close(p[0]);
        _exit(script(p[1]));
    }
    close(p[1]);
    char b;
    assert_int_equal(read(p[0], &b, 1), 1);
    close(p[0]);
    char *const *argv = gh_prog_argv(0, spec, 1);
    *prog = gh_fork();
    if (*prog == 0) {
        int fd = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1;
        if (log && (fd < 0 || dup2(fd, 2) < 0))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    setenv("GMUX_POLICY", "proactive", 1);
    setenv("GMUX_GATE_IDLE_MS", "200", 1);
}

void gs_wait_script(pid_t fake, pid_t prog)
{
    int fs = -1;
    for (int i = 0; i < 12000 && waitpid(fake, &fs, WNOHANG) == 0; i++)
        gh_sleep_ms(10);
    if (!WIFEXITED(fs) || WEXITSTATUS(fs) != 0) {
        kill(fake, SIGKILL);
        kill(prog, SIGKILL);
        waitpid(prog, NULL, 0);
        fail_msg("scripted daemon: status %d", fs);
    }
}

void gs_wait_pair(pid_t fake, pid_t prog)
{
    gs_wait_script(fake, prog);
    int ps = -1;
    assert_int_equal(waitpid(prog, &ps, 0), prog);
    if (!WIFEXITED(ps) || WEXITSTATUS(ps) != 0)
        fail_msg("program: %s %d", WIFEXITED(ps) ? "exit" : "status",
                 WIFEXITED(ps) ? WEXITSTATUS(ps) : ps);
}

gh_out_t *gs_out0(void)
{
    gh_out_t *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    gh_read_out(0, o);
    for (size_t i = 0; i < o->nd; i++)
        print_message("  prefetch %#llx + %llu at %llu\n", o->d[i][1], o->d[i][2], o->d[i][0]);
    for (size_t i = 0; i < o->nh; i++)
        print_message("  evict %#llx + %llu at %llu\n", o->h[i][1], o->h[i][2], o->h[i][0]);
    return o;
}

gh_out_t *gs_run_logged(const gh_spec_t *spec, int (*script)(int), const char *policy)
{
    setenv("GMUX_POLICY", policy, 1);
    setenv("GMUX_GATE_IDLE_MS", "600000", 1);
    pid_t fake, prog;
    gs_start_pair_log(spec, script, gh_path("log0"), &fake, &prog);
    gs_wait_pair(fake, prog);
    return gs_out0();
}

/* Status snapshots for the CLI; see report.h. */
#include "daemon/report.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"

gmux_status_t dmn_report_query(int fd, dmn_report_t *out, int timeout_ms)
{
    return dmn_report_query_why(fd, out, timeout_ms, NULL, 0);
}

gmux_status_t dmn_report_query_why(int fd, dmn_report_t *out, int timeout_ms, char *why,
                                   size_t why_cap)
{
    char none[1];
    if (!why || !why_cap) { /* the reason goes nowhere */
        why = none;
        why_cap = sizeof(none);
    }
    uint8_t q[DMN_PROTO_HDR_SIZE];
    size_t qn = dmn_proto_encode_empty(q, sizeof(q), 1, DMN_MSG_QUERY);
    ssize_t sent = send(fd, q, qn, MSG_NOSIGNAL);
    if (sent != (ssize_t)qn) {
        int e = sent < 0 ? errno : 0;
        if (e == EPIPE)
            snprintf(why, why_cap, "it closed the connection");
        else if (e)
            snprintf(why, why_cap, "cannot send the query: %s", strerror(e));
        else
            snprintf(why, why_cap, "cannot send the query: %zd of %zu bytes went", sent, qn);
        return GMUX_ERR_CLOSED;
    }
    uint8_t *buf = malloc(DMN_PROTO_MAX_MSG);
    if (!buf) {
        snprintf(why, why_cap, "out of memory");
        return GMUX_ERR_NOMEM;
    }
    gmux_status_t st = GMUX_ERR_TIMEOUT;
    size_t len = 0;
    uint64_t deadline = com_deadline_after_ns((uint64_t)timeout_ms * COM_NS_PER_MS);
    while (!com_deadline_passed(deadline)) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        ssize_t n = recv(fd, buf + len, DMN_PROTO_MAX_MSG - len, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            if (n < 0)
                snprintf(why, why_cap, "%s", strerror(errno));
            else
                snprintf(why, why_cap, "it closed the connection");
            st = GMUX_ERR_CLOSED;
            break;
        }
        len += (size_t)n;
        dmn_hdr_t h;
        st = dmn_proto_read_hdr(buf, len, &h);
        if (st == GMUX_ERR_BUSY || (st == GMUX_OK && len < DMN_PROTO_HDR_SIZE + h.length)) {
            st = GMUX_ERR_TIMEOUT;
            continue;
        }
        dmn_msg_t m;
        if (st == GMUX_OK)
            st = dmn_proto_decode(buf, DMN_PROTO_HDR_SIZE + h.length, &m);
        if (st == GMUX_OK && m.hdr.type != DMN_MSG_STATUS)
            st = GMUX_ERR_PARSE;
        if (st != GMUX_OK)
            snprintf(why, why_cap, "its answer is no status report (%s)", gmux_status_str(st));
        if (st == GMUX_OK) {
            pid_t pid = 0;
            uid_t uid;
            gid_t gid;
            out->daemon_pid =
                dmn_endpoint_peer(fd, &pid, &uid, &gid) == GMUX_OK && pid > 0 ? (int32_t)pid : 0;
            out->uptime_ns = m.u.status.uptime_ns;
            out->switches = m.u.status.switches;
            out->reclaimed = m.u.status.reclaimed;
            out->mode = m.u.status.mode;
            out->capacity = m.u.status.capacity;
            out->footprint = m.u.status.footprint;
            out->mode_changes = m.u.status.mode_changes;
            out->evict_bytes = m.u.status.evict_bytes;
            out->fill_bytes = m.u.status.fill_bytes;
            out->ahead_bytes = m.u.status.ahead_bytes;
            out->ahead_plans = m.u.status.ahead_plans;
            out->evict_waits = m.u.status.evict_waits;
            out->evict_timeouts = m.u.status.evict_timeouts;
            out->evict_wait_ns = m.u.status.evict_wait_ns;
            out->evict_wait_max_ns = m.u.status.evict_wait_max_ns;
            out->n_tasks =
                m.u.status.n_tasks < DMN_ARB_MAX_TASKS ? m.u.status.n_tasks : DMN_ARB_MAX_TASKS;
            for (uint32_t i = 0; i < out->n_tasks; i++)
                dmn_proto_status_task_at(&m.u.status, i, &out->tasks[i]);
        }
        break;
    }
    if (st == GMUX_ERR_TIMEOUT) {
        if (timeout_ms % 1000 == 0)
            snprintf(why, why_cap, "no answer within %d s", timeout_ms / 1000);
        else
            snprintf(why, why_cap, "no answer within %d ms", timeout_ms);
    }
    free(buf);
    return st;
}

gmux_status_t dmn_report_fetch(const char *path, dmn_report_t *out, int timeout_ms)
{
    int fd;
    gmux_status_t st = dmn_endpoint_connect(path, &fd);
    if (st != GMUX_OK)
        return st;
    st = dmn_report_query(fd, out, timeout_ms);
    close(fd);
    return st;
}

double dmn_report_share(const dmn_status_task_t *t)
{
    return t->age_ns ? (double)t->run_ns / (double)t->age_ns : 0.0;
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void dmn_report_json(FILE *out, const char *path, const dmn_report_t *r)
{
    fprintf(out, "{\"socket\": ");
    json_string(out, path);
    fprintf(out,
            ", \"daemon_pid\": %d, \"protocol\": %u, \"uptime_s\": %.3f, \"switches\": %llu, "
            "\"reclaimed\": %llu, "
            "\"mode\": \"%s\", \"capacity\": %llu, \"footprint\": %llu, \"mode_changes\": %llu, "
            "\"planned\": {\"evict_bytes\": %llu, \"fill_bytes\": %llu, \"ahead_bytes\": %llu, "
            "\"ahead_plans\": %llu}, \"evict_wait\": {\"switches\": %llu, \"timeouts\": %llu, "
            "\"total_ms\": %.3f, \"max_ms\": %.3f}, \"tasks\": [",
            (int)r->daemon_pid, DMN_PROTO_VERSION, (double)r->uptime_ns / 1e9,
            (unsigned long long)r->switches, (unsigned long long)r->reclaimed,
            dmn_mode_name(r->mode), (unsigned long long)r->capacity,
            (unsigned long long)r->footprint, (unsigned long long)r->mode_changes,
            (unsigned long long)r->evict_bytes, (unsigned long long)r->fill_bytes,
            (unsigned long long)r->ahead_bytes, (unsigned long long)r->ahead_plans,
            (unsigned long long)r->evict_waits, (unsigned long long)r->evict_timeouts,
            (double)r->evict_wait_ns / 1e6, (double)r->evict_wait_max_ns / 1e6);
    for (uint32_t i = 0; i < r->n_tasks; i++) {
        const dmn_status_task_t *t = &r->tasks[i];
        fprintf(out, "%s\n  {\"id\": %u, \"pid\": %u, \"name\": ", i ? "," : "", t->id, t->pid);
        json_string(out, t->name);
        fprintf(out,
                ", \"state\": \"%s\", \"class\": \"%s\", \"priority\": %d, \"budget\": %llu, "
                "\"resident\": %llu, \"pinned\": %llu, \"total\": %llu, \"faults\": %llu, "
                "\"migrated\": %llu, "
                "\"kernels\": %llu, \"footprint\": %llu, \"gpu_time_s\": %.6f, \"age_s\": %.6f, "
                "\"share\": %.4f}",
                dmn_state_name(t->state), dmn_class_name(t->cls), t->priority,
                (unsigned long long)t->budget, (unsigned long long)t->resident,
                (unsigned long long)t->pinned, (unsigned long long)t->total,
                (unsigned long long)t->faults, (unsigned long long)t->migrated,
                (unsigned long long)t->kernels, (unsigned long long)t->footprint,
                (double)t->run_ns / 1e9, (double)t->age_ns / 1e9, dmn_report_share(t));
    }
    fprintf(out, "%s]}\n", r->n_tasks ? "\n" : "");
}

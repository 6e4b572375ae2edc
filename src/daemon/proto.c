/* The gmuxd wire protocol; see proto.h and docs/protocol.md. */
#include "daemon/proto.h"

#include <string.h>

#define REGISTER_SIZE   56u
#define RANGES_HEAD     16u
#define STATS_SIZE      56u
#define REGISTERED_SIZE 16u
#define REFUSED_SIZE    (4u + DMN_REASON_MAX)
#define GRANT_SIZE      32u

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}

static int known_type(uint32_t type)
{
    switch (type) {
#define DMN_CASE_(name, value, dir) case value:
        DMN_MSG_TYPE_LIST(DMN_CASE_)
#undef DMN_CASE_
        return 1;
    default:
        return 0;
    }
}

const char *dmn_msg_type_name(uint32_t type)
{
    switch (type) {
#define DMN_NAME_(name, value, dir)                                                                \
    case value:                                                                                    \
        return #name;
        DMN_MSG_TYPE_LIST(DMN_NAME_)
#undef DMN_NAME_
    default:
        return "?";
    }
}

const char *dmn_class_name(uint32_t cls)
{
    return cls == DMN_CLASS_BATCH ? "batch" : cls == DMN_CLASS_LATENCY ? "latency" : "?";
}

const char *dmn_mode_name(uint32_t mode)
{
    return mode == DMN_MODE_SLICED ? "sliced" : mode == DMN_MODE_SHARED ? "shared" : "?";
}

const char *dmn_state_name(uint32_t state)
{
    static const char *const names[] = {"idle", "pending", "running", "revoked", "held"};
    return state <= DMN_STATE_HELD ? names[state] : "?";
}

gmux_status_t dmn_proto_read_hdr(const uint8_t *buf, size_t avail, dmn_hdr_t *hdr)
{
    if (avail < DMN_PROTO_HDR_SIZE)
        return GMUX_ERR_BUSY;
    dmn_hdr_t h = {get32(buf), get16(buf + 4), get16(buf + 6), get32(buf + 8), get32(buf + 12)};
    if (h.magic != DMN_PROTO_MAGIC)
        return GMUX_ERR_PARSE;
    if (h.version != DMN_PROTO_VERSION)
        return GMUX_ERR_VERSION;
    if (h.length > DMN_PROTO_MAX_PAYLOAD || !known_type(h.type))
        return GMUX_ERR_PARSE;
    *hdr = h;
    return GMUX_OK;
}

/* A name field: NUL-terminated within its width, printable ASCII before. */
static gmux_status_t read_name(const uint8_t *p, size_t width, char *out)
{
    size_t i = 0;
    for (; i < width && p[i] != 0; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return GMUX_ERR_PARSE;
    if (i == width)
        return GMUX_ERR_PARSE;
    memcpy(out, p, i);
    memset(out + i, 0, width - i);
    return GMUX_OK;
}

static void write_name(uint8_t *p, size_t width, const char *name)
{
    memset(p, 0, width);
    for (size_t i = 0; name && i + 1 < width && name[i]; i++) {
        unsigned char c = (unsigned char)name[i];
        p[i] = (c < 0x20 || c > 0x7e) ? '?' : c;
    }
}

static gmux_status_t decode_ranges(const uint8_t *p, uint32_t len, uint32_t type,
                                   dmn_msg_ranges_t *m)
{
    if (len < RANGES_HEAD)
        return GMUX_ERR_PARSE;
    m->count = get32(p);
    m->n_ranges = get32(p + 4);
    m->seq = get64(p + 8);
    if (m->n_ranges > DMN_MAX_RANGES || len != RANGES_HEAD + m->n_ranges * DMN_RANGE_SIZE)
        return GMUX_ERR_PARSE;
    if (type == DMN_MSG_PLAN && m->count > DMN_PLAN_AHEAD)
        return GMUX_ERR_PARSE;
    m->ranges_le = p + RANGES_HEAD;
    for (uint32_t i = 0; i < m->n_ranges; i++) {
        dmn_range_t r = dmn_proto_range_at(m, i);
        if (r.len == 0 || r.base + r.len < r.base)
            return GMUX_ERR_PARSE;
    }
    return GMUX_OK;
}

gmux_status_t dmn_proto_decode(const uint8_t *buf, size_t len, dmn_msg_t *msg)
{
    gmux_status_t st = dmn_proto_read_hdr(buf, len, &msg->hdr);
    if (st == GMUX_ERR_BUSY)
        return GMUX_ERR_PARSE;
    if (st != GMUX_OK)
        return st;
    uint32_t n = msg->hdr.length;
    if (len != DMN_PROTO_HDR_SIZE + (size_t)n)
        return GMUX_ERR_PARSE;
    const uint8_t *p = buf + DMN_PROTO_HDR_SIZE;
    switch (msg->hdr.type) {
    case DMN_MSG_REGISTER: {
        dmn_msg_register_t *r = &msg->u.reg;
        if (n != REGISTER_SIZE)
            return GMUX_ERR_PARSE;
        r->pid = get32(p);
        r->cls = get32(p + 4);
        r->priority = (int32_t)get32(p + 8);
        r->flags = get32(p + 12);
        r->budget = get64(p + 16);
        if (r->cls > DMN_CLASS_LATENCY || r->priority < DMN_PRIORITY_MIN ||
            r->priority > DMN_PRIORITY_MAX || r->flags != 0)
            return GMUX_ERR_PARSE;
        return read_name(p + 24, DMN_NAME_MAX, r->name);
    }
    case DMN_MSG_PENDING:
    case DMN_MSG_PLAN:
        return decode_ranges(p, n, msg->hdr.type, &msg->u.ranges);
    case DMN_MSG_RELEASE:
    case DMN_MSG_IDLE:
    case DMN_MSG_QUERY:
        return n == 0 ? GMUX_OK : GMUX_ERR_PARSE;
    case DMN_MSG_STATS: {
        dmn_msg_stats_t *s = &msg->u.stats;
        if (n != STATS_SIZE)
            return GMUX_ERR_PARSE;
        s->resident = get64(p);
        s->total = get64(p + 8);
        s->faults = get64(p + 16);
        s->migrated = get64(p + 24);
        s->kernels = get64(p + 32);
        s->device = get64(p + 40);
        s->pinned = get64(p + 48);
        return GMUX_OK;
    }
    case DMN_MSG_REGISTERED:
        if (n != REGISTERED_SIZE)
            return GMUX_ERR_PARSE;
        msg->u.registered.task_id = get32(p);
        msg->u.registered.reserved = get32(p + 4);
        msg->u.registered.quantum_ns = get64(p + 8);
        return GMUX_OK;
    case DMN_MSG_REFUSED:
        if (n != REFUSED_SIZE)
            return GMUX_ERR_PARSE;
        msg->u.refused.status = (int32_t)get32(p);
        return read_name(p + 4, DMN_REASON_MAX, msg->u.refused.reason);
    case DMN_MSG_GRANT:
    case DMN_MSG_REVOKE:
        if (n != GRANT_SIZE)
            return GMUX_ERR_PARSE;
        msg->u.grant.grant_seq = get64(p);
        msg->u.grant.quantum_ns = get64(p + 8);
        msg->u.grant.request = get64(p + 16);
        msg->u.grant.flags = get32(p + 24);
        msg->u.grant.reserved = get32(p + 28);
        /* a REVOKE carries no flags; unknown bits are a later version's */
        if ((msg->u.grant.flags & ~(uint32_t)DMN_GRANT_FLAGS_ALL) != 0 ||
            (msg->hdr.type == DMN_MSG_REVOKE && msg->u.grant.flags != 0) ||
            msg->u.grant.reserved != 0)
            return GMUX_ERR_PARSE;
        return GMUX_OK;
    case DMN_MSG_EVICTED:
        if (n != DMN_EVICTED_SIZE)
            return GMUX_ERR_PARSE;
        msg->u.evicted.grant_seq = get64(p);
        msg->u.evicted.failed = get32(p + 8);
        msg->u.evicted.reserved = get32(p + 12);
        return msg->u.evicted.reserved == 0 ? GMUX_OK : GMUX_ERR_PARSE;
    case DMN_MSG_STATUS: {
        dmn_msg_status_t *s = &msg->u.status;
        if (n < DMN_STATUS_HEAD_SIZE)
            return GMUX_ERR_PARSE;
        s->n_tasks = get32(p);
        s->mode = get32(p + 4);
        s->uptime_ns = get64(p + 8);
        s->switches = get64(p + 16);
        s->reclaimed = get64(p + 24);
        s->capacity = get64(p + 32);
        s->footprint = get64(p + 40);
        s->mode_changes = get64(p + 48);
        s->evict_bytes = get64(p + 56);
        s->fill_bytes = get64(p + 64);
        s->ahead_bytes = get64(p + 72);
        s->ahead_plans = get64(p + 80);
        s->evict_waits = get64(p + 88);
        s->evict_timeouts = get64(p + 96);
        s->evict_wait_ns = get64(p + 104);
        s->evict_wait_max_ns = get64(p + 112);
        if (s->n_tasks > DMN_STATUS_MAX_TASKS || s->mode > DMN_MODE_SHARED ||
            n != DMN_STATUS_HEAD_SIZE + s->n_tasks * DMN_STATUS_TASK_SIZE)
            return GMUX_ERR_PARSE;
        s->tasks_le = p + DMN_STATUS_HEAD_SIZE;
        for (uint32_t i = 0; i < s->n_tasks; i++) {
            const uint8_t *t = s->tasks_le + (size_t)i * DMN_STATUS_TASK_SIZE;
            char name[DMN_NAME_MAX];
            if (get32(t + 8) > DMN_STATE_HELD || get32(t + 12) > DMN_CLASS_LATENCY ||
                read_name(t + 88, DMN_NAME_MAX, name) != GMUX_OK)
                return GMUX_ERR_PARSE;
        }
        return GMUX_OK;
    }
    default:
        return GMUX_ERR_PARSE;
    }
}

dmn_range_t dmn_proto_range_at(const dmn_msg_ranges_t *m, uint32_t i)
{
    const uint8_t *p = m->ranges_le + (size_t)i * DMN_RANGE_SIZE;
    dmn_range_t r = {get64(p), get64(p + 8)};
    return r;
}

void dmn_proto_status_task_at(const dmn_msg_status_t *m, uint32_t i, dmn_status_task_t *out)
{
    const uint8_t *t = m->tasks_le + (size_t)i * DMN_STATUS_TASK_SIZE;
    out->id = get32(t);
    out->pid = get32(t + 4);
    out->state = get32(t + 8);
    out->cls = get32(t + 12);
    out->priority = (int32_t)get32(t + 16);
    out->reserved = get32(t + 20);
    uint64_t *fields[] = {&out->budget,   &out->resident, &out->total,  &out->faults,
                          &out->migrated, &out->kernels,  &out->run_ns, &out->age_ns};
    for (int k = 0; k < 8; k++)
        *fields[k] = get64(t + 24 + 8 * k);
    (void)read_name(t + 88, DMN_NAME_MAX, out->name);
    out->footprint = get64(t + 120);
    out->pinned = get64(t + 128);
}

static uint8_t *begin(uint8_t *out, size_t cap, uint32_t seq, dmn_msg_type_t type, size_t len)
{
    if (len > DMN_PROTO_MAX_PAYLOAD || cap < DMN_PROTO_HDR_SIZE + len)
        return NULL;
    put32(out, DMN_PROTO_MAGIC);
    put16(out + 4, DMN_PROTO_VERSION);
    put16(out + 6, (uint16_t)type);
    put32(out + 8, (uint32_t)len);
    put32(out + 12, seq);
    memset(out + DMN_PROTO_HDR_SIZE, 0, len);
    return out + DMN_PROTO_HDR_SIZE;
}

size_t dmn_proto_encode_register(uint8_t *out, size_t cap, uint32_t seq,
                                 const dmn_msg_register_t *m)
{
    if (m->cls > DMN_CLASS_LATENCY || m->priority < DMN_PRIORITY_MIN ||
        m->priority > DMN_PRIORITY_MAX)
        return 0;
    uint8_t *p = begin(out, cap, seq, DMN_MSG_REGISTER, REGISTER_SIZE);
    if (!p)
        return 0;
    put32(p, m->pid);
    put32(p + 4, m->cls);
    put32(p + 8, (uint32_t)m->priority);
    put32(p + 12, 0);
    put64(p + 16, m->budget);
    write_name(p + 24, DMN_NAME_MAX, m->name);
    return DMN_PROTO_HDR_SIZE + REGISTER_SIZE;
}

size_t dmn_proto_encode_ranges(uint8_t *out, size_t cap, uint32_t seq, dmn_msg_type_t type,
                               uint32_t count, uint64_t plan_seq, const dmn_range_t *ranges,
                               uint32_t n_ranges)
{
    if ((type != DMN_MSG_PENDING && type != DMN_MSG_PLAN) || n_ranges > DMN_MAX_RANGES ||
        (type == DMN_MSG_PLAN && count > DMN_PLAN_AHEAD))
        return 0;
    size_t len = RANGES_HEAD + (size_t)n_ranges * DMN_RANGE_SIZE;
    uint8_t *p = begin(out, cap, seq, type, len);
    if (!p)
        return 0;
    put32(p, count);
    put32(p + 4, n_ranges);
    put64(p + 8, plan_seq);
    for (uint32_t i = 0; i < n_ranges; i++) {
        if (ranges[i].len == 0 || ranges[i].base + ranges[i].len < ranges[i].base)
            return 0;
        put64(p + RANGES_HEAD + 16 * (size_t)i, ranges[i].base);
        put64(p + RANGES_HEAD + 16 * (size_t)i + 8, ranges[i].len);
    }
    return DMN_PROTO_HDR_SIZE + len;
}

size_t dmn_proto_encode_empty(uint8_t *out, size_t cap, uint32_t seq, dmn_msg_type_t type)
{
    if (type != DMN_MSG_RELEASE && type != DMN_MSG_IDLE && type != DMN_MSG_QUERY)
        return 0;
    return begin(out, cap, seq, type, 0) ? DMN_PROTO_HDR_SIZE : 0;
}

size_t dmn_proto_encode_stats(uint8_t *out, size_t cap, uint32_t seq, const dmn_msg_stats_t *m)
{
    uint8_t *p = begin(out, cap, seq, DMN_MSG_STATS, STATS_SIZE);
    if (!p)
        return 0;
    put64(p, m->resident);
    put64(p + 8, m->total);
    put64(p + 16, m->faults);
    put64(p + 24, m->migrated);
    put64(p + 32, m->kernels);
    put64(p + 40, m->device);
    put64(p + 48, m->pinned);
    return DMN_PROTO_HDR_SIZE + STATS_SIZE;
}

size_t dmn_proto_encode_registered(uint8_t *out, size_t cap, uint32_t seq,
                                   const dmn_msg_registered_t *m)
{
    uint8_t *p = begin(out, cap, seq, DMN_MSG_REGISTERED, REGISTERED_SIZE);
    if (!p)
        return 0;
    put32(p, m->task_id);
    put64(p + 8, m->quantum_ns);
    return DMN_PROTO_HDR_SIZE + REGISTERED_SIZE;
}

size_t dmn_proto_encode_refused(uint8_t *out, size_t cap, uint32_t seq, gmux_status_t status,
                                const char *reason)
{
    uint8_t *p = begin(out, cap, seq, DMN_MSG_REFUSED, REFUSED_SIZE);
    if (!p)
        return 0;
    put32(p, (uint32_t)(int32_t)status);
    write_name(p + 4, DMN_REASON_MAX, reason);
    return DMN_PROTO_HDR_SIZE + REFUSED_SIZE;
}

size_t dmn_proto_encode_grant(uint8_t *out, size_t cap, uint32_t seq, dmn_msg_type_t type,
                              const dmn_msg_grant_t *m)
{
    if ((type != DMN_MSG_GRANT && type != DMN_MSG_REVOKE) ||
        (m->flags & ~(uint32_t)DMN_GRANT_FLAGS_ALL) != 0 || (type == DMN_MSG_REVOKE && m->flags))
        return 0;
    uint8_t *p = begin(out, cap, seq, type, GRANT_SIZE);
    if (!p)
        return 0;
    put64(p, m->grant_seq);
    put64(p + 8, m->quantum_ns);
    put64(p + 16, m->request);
    put32(p + 24, m->flags);
    put32(p + 28, 0);
    return DMN_PROTO_HDR_SIZE + GRANT_SIZE;
}

size_t dmn_proto_encode_evicted(uint8_t *out, size_t cap, uint32_t seq, const dmn_msg_evicted_t *m)
{
    uint8_t *p = begin(out, cap, seq, DMN_MSG_EVICTED, DMN_EVICTED_SIZE);
    if (!p)
        return 0;
    put64(p, m->grant_seq);
    put32(p + 8, m->failed);
    return DMN_PROTO_HDR_SIZE + DMN_EVICTED_SIZE;
}

size_t dmn_proto_encode_status(uint8_t *out, size_t cap, uint32_t seq, const dmn_msg_status_t *head,
                               const dmn_status_task_t *tasks, uint32_t n_tasks)
{
    if (n_tasks > DMN_STATUS_MAX_TASKS || head->mode > DMN_MODE_SHARED)
        return 0;
    size_t len = DMN_STATUS_HEAD_SIZE + (size_t)n_tasks * DMN_STATUS_TASK_SIZE;
    uint8_t *p = begin(out, cap, seq, DMN_MSG_STATUS, len);
    if (!p)
        return 0;
    put32(p, n_tasks);
    put32(p + 4, head->mode);
    put64(p + 8, head->uptime_ns);
    put64(p + 16, head->switches);
    put64(p + 24, head->reclaimed);
    put64(p + 32, head->capacity);
    put64(p + 40, head->footprint);
    put64(p + 48, head->mode_changes);
    put64(p + 56, head->evict_bytes);
    put64(p + 64, head->fill_bytes);
    put64(p + 72, head->ahead_bytes);
    put64(p + 80, head->ahead_plans);
    put64(p + 88, head->evict_waits);
    put64(p + 96, head->evict_timeouts);
    put64(p + 104, head->evict_wait_ns);
    put64(p + 112, head->evict_wait_max_ns);
    for (uint32_t i = 0; i < n_tasks; i++) {
        const dmn_status_task_t *s = &tasks[i];
        uint8_t *t = p + DMN_STATUS_HEAD_SIZE + (size_t)i * DMN_STATUS_TASK_SIZE;
        if (s->state > DMN_STATE_HELD || s->cls > DMN_CLASS_LATENCY)
            return 0;
        put32(t, s->id);
        put32(t + 4, s->pid);
        put32(t + 8, s->state);
        put32(t + 12, s->cls);
        put32(t + 16, (uint32_t)s->priority);
        const uint64_t fields[] = {s->budget,   s->resident, s->total,  s->faults,
                                   s->migrated, s->kernels,  s->run_ns, s->age_ns};
        for (int k = 0; k < 8; k++)
            put64(t + 24 + 8 * k, fields[k]);
        write_name(t + 88, DMN_NAME_MAX, s->name);
        put64(t + 120, s->footprint);
        put64(t + 128, s->pinned);
    }
    return DMN_PROTO_HDR_SIZE + len;
}

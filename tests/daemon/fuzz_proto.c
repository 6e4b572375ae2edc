/*
 * libFuzzer harness for the gmuxd message parser: the input is a byte stream
 * as a connection would deliver it, framed exactly as the server frames it
 * (header, then the whole message). No input may crash the parser, and every
 * message it accepts must re-encode to the same bytes (so the decoder never
 * accepts something the encoder could not have produced).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t again[DMN_PROTO_MAX_MSG];
static dmn_range_t ranges[DMN_MAX_RANGES];
static dmn_status_task_t tasks[DMN_STATUS_MAX_TASKS];

static size_t reencode(const dmn_msg_t *m)
{
    size_t cap = sizeof(again);
    uint32_t seq = m->hdr.seq;
    switch (m->hdr.type) {
    case DMN_MSG_REGISTER:
        return dmn_proto_encode_register(again, cap, seq, &m->u.reg);
    case DMN_MSG_PENDING:
    case DMN_MSG_PLAN:
        for (uint32_t i = 0; i < m->u.ranges.n_ranges; i++)
            ranges[i] = dmn_proto_range_at(&m->u.ranges, i);
        return dmn_proto_encode_ranges(again, cap, seq, (dmn_msg_type_t)m->hdr.type,
                                       m->u.ranges.count, m->u.ranges.seq, ranges,
                                       m->u.ranges.n_ranges);
    case DMN_MSG_RELEASE:
    case DMN_MSG_IDLE:
    case DMN_MSG_QUERY:
        return dmn_proto_encode_empty(again, cap, seq, (dmn_msg_type_t)m->hdr.type);
    case DMN_MSG_STATS:
        return dmn_proto_encode_stats(again, cap, seq, &m->u.stats);
    case DMN_MSG_REGISTERED:
        return dmn_proto_encode_registered(again, cap, seq, &m->u.registered);
    case DMN_MSG_REFUSED:
        return dmn_proto_encode_refused(again, cap, seq, (gmux_status_t)m->u.refused.status,
                                        m->u.refused.reason);
    case DMN_MSG_GRANT:
    case DMN_MSG_REVOKE:
        return dmn_proto_encode_grant(again, cap, seq, (dmn_msg_type_t)m->hdr.type, &m->u.grant);
    case DMN_MSG_EVICTED:
        return dmn_proto_encode_evicted(again, cap, seq, &m->u.evicted);
    case DMN_MSG_STATUS:
        for (uint32_t i = 0; i < m->u.status.n_tasks; i++)
            dmn_proto_status_task_at(&m->u.status, i, &tasks[i]);
        return dmn_proto_encode_status(again, cap, seq, &m->u.status, tasks, m->u.status.n_tasks);
    default:
        abort(); /* decode accepted a type it does not know */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        dmn_hdr_t h;
        gmux_status_t st = dmn_proto_read_hdr(data + off, size - off, &h);
        if (st != GMUX_OK)
            return 0; /* incomplete (wait for more) or fatal (drop): both stop here */
        size_t whole = DMN_PROTO_HDR_SIZE + (size_t)h.length;
        if (size - off < whole)
            return 0;
        dmn_msg_t m;
        if (dmn_proto_decode(data + off, whole, &m) != GMUX_OK)
            return 0;
        /* Reserved fields are ignored on the way in and zero on the way out,
         * so compare what is meaningful: the re-encoded message decodes to the
         * same header and length. */
        size_t n = reencode(&m);
        if (n != whole)
            abort();
        dmn_msg_t m2;
        if (dmn_proto_decode(again, n, &m2) != GMUX_OK || m2.hdr.type != m.hdr.type ||
            m2.hdr.seq != m.hdr.seq)
            abort();
        /* The fields the share mode reads (v2), the planned bytes (v4) and the
         * request a GRANT answers (v5) survive the round trip. */
        if (m.hdr.type == DMN_MSG_STATS && m2.u.stats.device != m.u.stats.device)
            abort();
        if ((m.hdr.type == DMN_MSG_GRANT || m.hdr.type == DMN_MSG_REVOKE) &&
            m2.u.grant.request != m.u.grant.request)
            abort();
        if ((m.hdr.type == DMN_MSG_PENDING || m.hdr.type == DMN_MSG_PLAN) &&
            m2.u.ranges.seq != m.u.ranges.seq)
            abort();
        if (m.hdr.type == DMN_MSG_STATUS &&
            (m2.u.status.mode != m.u.status.mode || m2.u.status.capacity != m.u.status.capacity ||
             m2.u.status.footprint != m.u.status.footprint ||
             m2.u.status.mode_changes != m.u.status.mode_changes ||
             m2.u.status.evict_bytes != m.u.status.evict_bytes ||
             m2.u.status.fill_bytes != m.u.status.fill_bytes ||
             m2.u.status.ahead_bytes != m.u.status.ahead_bytes ||
             m2.u.status.ahead_plans != m.u.status.ahead_plans ||
             m2.u.status.evict_waits != m.u.status.evict_waits ||
             m2.u.status.evict_timeouts != m.u.status.evict_timeouts ||
             m2.u.status.evict_wait_ns != m.u.status.evict_wait_ns ||
             m2.u.status.evict_wait_max_ns != m.u.status.evict_wait_max_ns))
            abort();
        if (m.hdr.type == DMN_MSG_EVICTED && (m2.u.evicted.grant_seq != m.u.evicted.grant_seq ||
                                              m2.u.evicted.failed != m.u.evicted.failed))
            abort();
        off += whole;
    }
    return 0;
}

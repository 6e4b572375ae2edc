/* Unit tests of the gmuxd wire protocol (src/daemon/proto.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include <dirent.h>
#include <stdio.h>

#include "daemon/proto.h"

static uint8_t buf[DMN_PROTO_MAX_MSG + 64];

static void test_header_layout(void **state)
{
    (void)state;
    size_t n = dmn_proto_encode_empty(buf, sizeof(buf), 0x01020304u, DMN_MSG_IDLE);
    assert_int_equal(n, 16);
    const uint8_t want[16] = {'G', 'M', 'X', 'D', 9, 0, DMN_MSG_IDLE, 0, 0, 0, 0, 0, 4, 3, 2, 1};
    assert_memory_equal(buf, want, 16);
    dmn_hdr_t h;
    assert_int_equal(dmn_proto_read_hdr(buf, 15, &h), GMUX_ERR_BUSY);
    assert_int_equal(dmn_proto_read_hdr(buf, 16, &h), GMUX_OK);
    assert_int_equal(h.type, DMN_MSG_IDLE);
    assert_int_equal(h.seq, 0x01020304u);
}

static void test_register_round_trip(void **state)
{
    (void)state;
    dmn_msg_register_t r = {4242, DMN_CLASS_LATENCY, -7, 0, 3ull << 32, "trainer"};
    size_t n = dmn_proto_encode_register(buf, sizeof(buf), 9, &r);
    assert_int_equal(n, 16 + 56);
    assert_int_equal(buf[16 + 8], 0xf9); /* -7, little-endian two's complement */
    dmn_msg_t m;
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.hdr.type, DMN_MSG_REGISTER);
    assert_int_equal(m.u.reg.pid, 4242);
    assert_int_equal(m.u.reg.cls, DMN_CLASS_LATENCY);
    assert_int_equal(m.u.reg.priority, -7);
    assert_int_equal(m.u.reg.budget, 3ull << 32);
    assert_string_equal(m.u.reg.name, "trainer");
    /* One byte too many or too few is not the same message. */
    assert_int_equal(dmn_proto_decode(buf, n - 1, &m), GMUX_ERR_PARSE);
    assert_int_equal(dmn_proto_decode(buf, n + 1, &m), GMUX_ERR_PARSE);
}

static void test_register_rejects(void **state)
{
    (void)state;
    dmn_msg_register_t r = {1, DMN_CLASS_BATCH, 0, 0, 0, "x"};
    dmn_msg_t m;
    size_t n = dmn_proto_encode_register(buf, sizeof(buf), 1, &r);
    buf[16 + 4] = 2; /* class */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    n = dmn_proto_encode_register(buf, sizeof(buf), 1, &r);
    buf[16 + 8] = 21; /* priority above the range */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    n = dmn_proto_encode_register(buf, sizeof(buf), 1, &r);
    buf[16 + 12] = 1; /* flags */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    n = dmn_proto_encode_register(buf, sizeof(buf), 1, &r);
    memset(buf + 16 + 24, 'a', DMN_NAME_MAX); /* name without NUL */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    n = dmn_proto_encode_register(buf, sizeof(buf), 1, &r);
    buf[16 + 24] = '\n'; /* unprintable */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    r.priority = 99;
    assert_int_equal(dmn_proto_encode_register(buf, sizeof(buf), 1, &r), 0);
    /* Names are sanitised on the way out. */
    dmn_msg_register_t s = {1, DMN_CLASS_BATCH, 0, 0, 0, "a\tb"};
    n = dmn_proto_encode_register(buf, sizeof(buf), 1, &s);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_string_equal(m.u.reg.name, "a?b");
}

static void test_header_rejects(void **state)
{
    (void)state;
    dmn_hdr_t h;
    size_t n = dmn_proto_encode_empty(buf, sizeof(buf), 1, DMN_MSG_QUERY);
    buf[3] = 'E';
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_PARSE);
    n = dmn_proto_encode_empty(buf, sizeof(buf), 1, DMN_MSG_QUERY);
    buf[4] = 1; /* version 1: no share mode; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 2; /* version 2: no PLAN ahead; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 3; /* version 3: a shorter STATUS; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 4; /* version 4: a GRANT that does not say which request it answers; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 5; /* version 5: no EVICTED; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 6; /* version 6: would drop a STATUS with a task held; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 7; /* version 7: a GRANT without flags; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 8; /* version 8: a STATS without the pinned bytes; refused */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    buf[4] = 10;
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_VERSION);
    n = dmn_proto_encode_empty(buf, sizeof(buf), 1, DMN_MSG_QUERY);
    buf[6] = 8; /* no type 8 */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_PARSE);
    n = dmn_proto_encode_empty(buf, sizeof(buf), 1, DMN_MSG_QUERY);
    buf[8] = 1, buf[10] = 1; /* 65537 bytes: one above the limit */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_ERR_PARSE);
    buf[8] = 0; /* exactly the limit is a valid header */
    assert_int_equal(dmn_proto_read_hdr(buf, n, &h), GMUX_OK);
    dmn_msg_t m;
    n = dmn_proto_encode_empty(buf, sizeof(buf), 1, DMN_MSG_QUERY);
    buf[8] = 4; /* QUERY carries nothing */
    memset(buf + 16, 0, 4);
    assert_int_equal(dmn_proto_decode(buf, 20, &m), GMUX_ERR_PARSE);
    assert_int_equal(dmn_proto_decode(buf, 10, &m), GMUX_ERR_PARSE);
    assert_int_equal(dmn_proto_encode_empty(buf, sizeof(buf), 1, DMN_MSG_GRANT), 0);
}

static void test_ranges(void **state)
{
    (void)state;
    dmn_range_t r[3] = {{0x1000, 0x2000}, {1ull << 40, 5}, {UINT64_MAX - 10, 10}};
    size_t n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PLAN, DMN_PLAN_FILL, 77, r, 3);
    assert_int_equal(n, 16 + 16 + 48);
    dmn_msg_t m;
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.ranges.count, DMN_PLAN_FILL);
    assert_int_equal(m.u.ranges.seq, 77);
    assert_int_equal(m.u.ranges.n_ranges, 3);
    for (uint32_t i = 0; i < 3; i++) {
        dmn_range_t g = dmn_proto_range_at(&m.u.ranges, i);
        assert_int_equal(g.base, r[i].base);
        assert_int_equal(g.len, r[i].len);
    }
    buf[16 + 4] = 4; /* says 4 ranges, carries 3 */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PLAN, DMN_PLAN_AHEAD, 78, r, 2);
    assert_int_equal(n, 16 + 16 + 32);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.ranges.count, DMN_PLAN_AHEAD);
    assert_int_equal(m.u.ranges.seq, 78);
    assert_int_equal(dmn_proto_range_at(&m.u.ranges, 1).base, r[1].base);
    assert_int_equal(dmn_proto_range_at(&m.u.ranges, 1).len, r[1].len);
    buf[16] = 3; /* plan kind 3 */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    assert_int_equal(
        dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PLAN, DMN_PLAN_AHEAD + 1, 1, r, 1), 0);
    n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 5, 42, r, 3);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.ranges.seq, 42); /* the request number a GRANT echoes (v5) */
    buf[n - 8] = 11;                      /* the last range now wraps around */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 5, 0, r, 3);
    memset(buf + n - 8, 0, 8); /* empty range */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    dmn_range_t zero = {1, 0};
    assert_int_equal(dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 1, 0, &zero, 1),
                     0);
    /* The largest range list fits exactly; one more does not. */
    static dmn_range_t many[DMN_MAX_RANGES + 1];
    for (uint32_t i = 0; i <= DMN_MAX_RANGES; i++)
        many[i] = (dmn_range_t){(uint64_t)i << 21, 1u << 21};
    n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 1, 0, many, DMN_MAX_RANGES);
    assert_true(n > 0 && n <= DMN_PROTO_MAX_MSG);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PENDING, 1, 0, many,
                                             DMN_MAX_RANGES + 1),
                     0);
    assert_int_equal(dmn_proto_encode_ranges(buf, 40, 1, DMN_MSG_PENDING, 1, 0, r, 3), 0);
}

static void test_small_messages(void **state)
{
    (void)state;
    dmn_msg_t m;
    dmn_msg_stats_t s = {1, 2, 3, 4, 5, 6, 7};
    size_t n = dmn_proto_encode_stats(buf, sizeof(buf), 1, &s);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.stats.resident, 1);
    assert_int_equal(m.u.stats.kernels, 5);
    assert_int_equal(m.u.stats.device, 6);
    assert_int_equal(m.u.stats.pinned, 7); /* v9 */
    assert_int_equal(n, 16 + 56);
    buf[8] = 48; /* a STATS of version 8's size */
    assert_int_equal(dmn_proto_decode(buf, 16 + 48, &m), GMUX_ERR_PARSE);
    dmn_msg_registered_t reg = {12, 0, 20000000};
    n = dmn_proto_encode_registered(buf, sizeof(buf), 1, &reg);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.registered.task_id, 12);
    assert_int_equal(m.u.registered.quantum_ns, 20000000);
    n = dmn_proto_encode_refused(buf, sizeof(buf), 1, GMUX_ERR_CAPACITY, "too many tasks");
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.refused.status, GMUX_ERR_CAPACITY);
    assert_string_equal(m.u.refused.reason, "too many tasks");
    dmn_msg_grant_t g = {99, 5, 0, 0, 0};
    n = dmn_proto_encode_grant(buf, sizeof(buf), 1, DMN_MSG_REVOKE, &g);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.hdr.type, DMN_MSG_REVOKE);
    assert_int_equal(m.u.grant.grant_seq, 99);
    assert_int_equal(m.u.grant.flags, 0);
    g = (dmn_msg_grant_t){100, 5, 0x1122334455667788ull, 0, 0};
    n = dmn_proto_encode_grant(buf, sizeof(buf), 1, DMN_MSG_GRANT, &g);
    assert_int_equal(n, DMN_PROTO_HDR_SIZE + 32);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.grant.request, 0x1122334455667788ull); /* the PENDING it answers (v5) */
    assert_int_equal(m.u.grant.flags, 0);
    buf[8] = 24; /* the payload of a version 7 GRANT */
    assert_int_equal(dmn_proto_decode(buf, n - 8, &m), GMUX_ERR_PARSE);
    buf[8] = 16; /* the payload of a version 4 GRANT */
    assert_int_equal(dmn_proto_decode(buf, n - 16, &m), GMUX_ERR_PARSE);
    assert_string_equal(dmn_msg_type_name(DMN_MSG_REVOKE), "REVOKE");
    assert_string_equal(dmn_msg_type_name(200), "?");
}

/* The GRANT's flags (v8): PLANNED round-trips at its place (u32 at payload
 * offset 24); unknown bits, flags on a REVOKE and a reserved word that is
 * not 0 are refused, by the decoder and the encoder. */
static void test_grant_flags(void **state)
{
    (void)state;
    dmn_msg_t m;
    dmn_msg_grant_t g = {7, 5, 3, DMN_GRANT_PLANNED, 0};
    size_t n = dmn_proto_encode_grant(buf, sizeof(buf), 1, DMN_MSG_GRANT, &g);
    assert_int_equal(n, DMN_PROTO_HDR_SIZE + 32);
    assert_int_equal(buf[16 + 24], DMN_GRANT_PLANNED);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.grant.flags, DMN_GRANT_PLANNED);
    assert_int_equal(m.u.grant.request, 3);
    buf[16 + 24] = 2; /* a bit no version defines */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    buf[16 + 24] = DMN_GRANT_PLANNED;
    buf[16 + 31] = 1; /* reserved */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    buf[16 + 31] = 0;
    buf[6] = DMN_MSG_REVOKE; /* a REVOKE with flags */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    buf[6] = DMN_MSG_GRANT;
    buf[8] = 28; /* short: the flags without the reserved word */
    assert_int_equal(dmn_proto_decode(buf, n - 4, &m), GMUX_ERR_PARSE);
    buf[8] = 32;
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(dmn_proto_encode_grant(buf, sizeof(buf), 1, DMN_MSG_REVOKE, &g), 0);
    g.flags = 2;
    assert_int_equal(dmn_proto_encode_grant(buf, sizeof(buf), 1, DMN_MSG_GRANT, &g), 0);
    g.flags = DMN_GRANT_PLANNED;
    assert_int_equal(dmn_proto_encode_grant(buf, DMN_PROTO_HDR_SIZE + 31, 1, DMN_MSG_GRANT, &g), 0);
}

static void test_status(void **state)
{
    (void)state;
    dmn_status_task_t t[2];
    memset(t, 0, sizeof(t));
    t[0] = (dmn_status_task_t){
        7, 100, DMN_STATE_RUNNING, DMN_CLASS_BATCH, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8, "a", 17, 19};
    t[1] = (dmn_status_task_t){
        8,    101, DMN_STATE_IDLE, DMN_CLASS_LATENCY, -1, 0, 9, 10, 11, 12, 13, 14, 15, 16,
        "bb", 18,  1ull << 34};
    dmn_msg_status_t head = {.mode = DMN_MODE_SHARED,
                             .uptime_ns = 1000,
                             .switches = 5,
                             .reclaimed = 2,
                             .capacity = 1u << 30,
                             .footprint = 35,
                             .mode_changes = 3,
                             .evict_bytes = 1ull << 33,
                             .fill_bytes = 77,
                             .ahead_bytes = 1ull << 40,
                             .ahead_plans = 9,
                             .evict_waits = 11,
                             .evict_timeouts = 12,
                             .evict_wait_ns = 1ull << 35,
                             .evict_wait_max_ns = 14};
    size_t n = dmn_proto_encode_status(buf, sizeof(buf), 1, &head, t, 2);
    assert_int_equal(n, 16 + 120 + 2 * 136); /* v9: each record ends in its pinned bytes */
    assert_int_equal(buf[16 + 120 + 128], 19);
    assert_int_equal(buf[16 + 120 + 136 + 128 + 4], 4); /* 1 << 34, little-endian */
    dmn_msg_t m;
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.status.n_tasks, 2);
    assert_int_equal(m.u.status.switches, 5);
    assert_int_equal(m.u.status.reclaimed, 2);
    assert_int_equal(m.u.status.mode, DMN_MODE_SHARED);
    assert_int_equal(m.u.status.capacity, 1u << 30);
    assert_int_equal(m.u.status.footprint, 35);
    assert_int_equal(m.u.status.mode_changes, 3);
    assert_int_equal(m.u.status.evict_bytes, 1ull << 33);
    assert_int_equal(m.u.status.fill_bytes, 77);
    assert_int_equal(m.u.status.ahead_bytes, 1ull << 40);
    assert_int_equal(m.u.status.ahead_plans, 9);
    assert_int_equal(m.u.status.evict_waits, 11); /* v6 */
    assert_int_equal(m.u.status.evict_timeouts, 12);
    assert_int_equal(m.u.status.evict_wait_ns, 1ull << 35);
    assert_int_equal(m.u.status.evict_wait_max_ns, 14);
    dmn_status_task_t g;
    dmn_proto_status_task_at(&m.u.status, 1, &g);
    assert_int_equal(g.id, 8);
    assert_int_equal(g.priority, -1);
    assert_int_equal(g.budget, 9);
    assert_int_equal(g.age_ns, 16);
    assert_string_equal(g.name, "bb");
    assert_int_equal(g.footprint, 18);
    assert_int_equal(g.pinned, 1ull << 34);
    buf[16 + 4] = 2; /* mode 2 */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    buf[16 + 4] = 1;
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    buf[16 + 120 + 8] = DMN_STATE_HELD; /* v7 */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    dmn_proto_status_task_at(&m.u.status, 0, &g);
    assert_int_equal(g.state, DMN_STATE_HELD);
    assert_string_equal(dmn_state_name(g.state), "held");
    buf[16 + 120 + 8] = 5; /* state 5 */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    assert_string_equal(dmn_state_name(5), "?");
    head.mode = 2;
    assert_int_equal(dmn_proto_encode_status(buf, sizeof(buf), 1, &head, t, 2), 0);
}

/* EVICTED (v6): the grant whose evictions are done, 16 bytes, reserved 0. */
static void test_evicted(void **state)
{
    (void)state;
    dmn_msg_evicted_t e = {0x0102030405060708ull, 3, 0};
    size_t n = dmn_proto_encode_evicted(buf, sizeof(buf), 9, &e);
    assert_int_equal(n, 16 + 16);
    assert_int_equal(buf[6], DMN_MSG_EVICTED);
    assert_int_equal(buf[16], 0x08); /* little-endian grant sequence first */
    assert_int_equal(buf[24], 3);
    dmn_msg_t m;
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.hdr.type, DMN_MSG_EVICTED);
    assert_int_equal(m.u.evicted.grant_seq, 0x0102030405060708ull);
    assert_int_equal(m.u.evicted.failed, 3);
    assert_string_equal(dmn_msg_type_name(DMN_MSG_EVICTED), "EVICTED");
    buf[28] = 1; /* reserved */
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_ERR_PARSE);
    buf[28] = 0;
    buf[8] = 8; /* a payload of 8 bytes */
    assert_int_equal(dmn_proto_decode(buf, 16 + 8, &m), GMUX_ERR_PARSE);
    assert_int_equal(dmn_proto_encode_evicted(buf, 31, 9, &e), 0); /* no room */
    /* the empty EVICT PLAN that asks for it encodes and decodes */
    n = dmn_proto_encode_ranges(buf, sizeof(buf), 1, DMN_MSG_PLAN, DMN_PLAN_EVICT, 5, NULL, 0);
    assert_int_equal(n, 16 + 16);
    assert_int_equal(dmn_proto_decode(buf, n, &m), GMUX_OK);
    assert_int_equal(m.u.ranges.n_ranges, 0);
    assert_int_equal(m.u.ranges.seq, 5);
}

/* Every seed of the fuzzer's corpus is a stream of whole, valid messages of
 * the current version (a version bump that forgets the corpus leaves the
 * fuzzer starting from inputs the parser rejects at the first byte). */
static void test_corpus_is_current(void **state)
{
    (void)state;
    DIR *d = opendir(CORPUS_DIR);
    assert_non_null(d);
    int files = 0, kinds = 0;
    uint64_t seen = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", CORPUS_DIR, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        size_t len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        size_t off = 0;
        while (off < len) {
            dmn_hdr_t h;
            assert_int_equal(dmn_proto_read_hdr(buf + off, len - off, &h), GMUX_OK);
            size_t whole = DMN_PROTO_HDR_SIZE + (size_t)h.length;
            assert_true(whole <= len - off);
            dmn_msg_t m;
            assert_int_equal(dmn_proto_decode(buf + off, whole, &m), GMUX_OK);
            assert_true(h.type < 64);
            kinds += !(seen & (1ull << h.type));
            seen |= 1ull << h.type;
            off += whole;
        }
        files++;
    }
    closedir(d);
    assert_true(files >= 13);
    assert_true(kinds >= 13); /* every message type has a seed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_layout),    cmocka_unit_test(test_register_round_trip),
        cmocka_unit_test(test_register_rejects), cmocka_unit_test(test_header_rejects),
        cmocka_unit_test(test_ranges),           cmocka_unit_test(test_small_messages),
        cmocka_unit_test(test_status),           cmocka_unit_test(test_corpus_is_current),
        cmocka_unit_test(test_evicted),          cmocka_unit_test(test_grant_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

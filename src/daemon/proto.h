/*
 * The gmuxd wire protocol: every message between a task (client.h), the
 * daemon (server.h) and the CLI (`gmux top`, `gmux status`), declared once.
 *
 * A message is a 16-byte header followed by `length` payload bytes. Every
 * field is fixed-width little-endian, encoded and decoded byte by byte (never
 * by casting a struct), so the layout does not depend on the compiler:
 *
 *   offset size field
 *   0      4    magic    DMN_PROTO_MAGIC ("GMXD" in memory order)
 *   4      2    version  DMN_PROTO_VERSION; a mismatch drops the connection
 *   6      2    type     dmn_msg_type_t
 *   8      4    length   payload bytes, at most DMN_PROTO_MAX_PAYLOAD
 *   12     4    seq      sender's message counter (diagnostics only)
 *
 * The payload layouts are in docs/protocol.md and in the DMN_*_SIZE constants
 * below. The decoder checks, for each type, the exact (or, for messages that
 * carry address ranges, the exactly implied) payload length, the value range
 * of every enumerated field and the NUL termination of names; anything else
 * is GMUX_ERR_PARSE and the daemon drops the sender.
 *
 * Ownership: decoded messages point into the caller's buffer for their range
 * lists (read them with dmn_proto_range_at) and are valid as long as it is.
 * Thread-safety: all functions are pure.
 */
#ifndef DMN_PROTO_H
#define DMN_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

/* Version 2: STATS device bytes, STATUS mode and footprints; 3: PLAN kind AHEAD;
 * 4: STATUS planned bytes; 5: PENDING numbered, GRANT names the PENDING it answers;
 * 6: EVICTED, the empty EVICT PLAN that asks for it, STATUS evict-wait counters;
 * 7: STATUS task state HELD; 8: GRANT flags (DMN_GRANT_PLANNED); 9: STATS and STATUS
 * records carry the pinned bytes. */
#define DMN_PROTO_MAGIC       0x44584d47u /* 'G' 'M' 'X' 'D' */
#define DMN_PROTO_VERSION     9u
#define DMN_PROTO_HDR_SIZE    16u
#define DMN_PROTO_MAX_PAYLOAD 65536u
#define DMN_PROTO_MAX_MSG     (DMN_PROTO_HDR_SIZE + DMN_PROTO_MAX_PAYLOAD)
#define DMN_NAME_MAX          32u /* bytes of a task name on the wire, NUL included */
#define DMN_REASON_MAX        64u
#define DMN_RANGE_SIZE        16u
#define DMN_MAX_RANGES        ((DMN_PROTO_MAX_PAYLOAD - 16u) / DMN_RANGE_SIZE)
#define DMN_STATUS_HEAD_SIZE  120u
#define DMN_STATUS_TASK_SIZE  136u
#define DMN_EVICTED_SIZE      16u
#define DMN_STATUS_MAX_TASKS  ((DMN_PROTO_MAX_PAYLOAD - DMN_STATUS_HEAD_SIZE) / DMN_STATUS_TASK_SIZE)

/* X(NAME, value, direction): c = client to daemon, d = daemon to client. */
#define DMN_MSG_TYPE_LIST(X)                                                                       \
    X(REGISTER, 1, c)    /* a task joins: pid, class, priority, budget, name */                    \
    X(PENDING, 2, c)     /* launches are queued: count and predicted ranges */                     \
    X(RELEASE, 3, c)     /* the holder gives the turn back (after a REVOKE) */                     \
    X(IDLE, 4, c)        /* nothing queued; gives the turn back if held */                         \
    X(STATS, 5, c)       /* memory and fault counters of the task */                               \
    X(QUERY, 6, c)       /* asks for a STATUS reply (CLI; no REGISTER needed) */                   \
    X(EVICTED, 7, c)     /* the evictions of a switch are done on the GPU (v6) */                  \
    X(REGISTERED, 32, d) /* registration accepted: task id, quantum */                             \
    X(REFUSED, 33, d)    /* registration refused: status and reason; then closed */                \
    X(GRANT, 34, d)      /* the task may launch until REVOKE */                                    \
    X(REVOKE, 35, d)     /* stop launching at the next kernel boundary, then RELEASE */            \
    X(PLAN, 36, d)       /* evict or fill orders (address ranges) for this task */                 \
    X(STATUS, 37, d)     /* every task's state and counters */

#define DMN_MSG_ENUM_(name, value, dir) DMN_MSG_##name = (value),
typedef enum dmn_msg_type { DMN_MSG_TYPE_LIST(DMN_MSG_ENUM_) } dmn_msg_type_t;
#undef DMN_MSG_ENUM_

typedef enum dmn_class {
    DMN_CLASS_BATCH = 0,   /* best effort, round robin by priority */
    DMN_CLASS_LATENCY = 1, /* takes the GPU from batch tasks at the next kernel boundary */
} dmn_class_t;

typedef enum dmn_task_state {
    DMN_STATE_IDLE = 0,    /* registered, nothing queued */
    DMN_STATE_PENDING = 1, /* launches queued, waiting for the turn */
    DMN_STATE_RUNNING = 2, /* holds the turn */
    DMN_STATE_REVOKED = 3, /* holds the turn, asked to give it back */
    DMN_STATE_HELD = 4,    /* granted, but its GRANT waits for evictions to end (v7):
                              the daemon counts it a holder; it may not launch yet */
} dmn_task_state_t;

typedef enum dmn_mode {
    DMN_MODE_SLICED = 0, /* one task holds the GPU at a time (time slices) */
    DMN_MODE_SHARED = 1, /* the footprints fit: every waiting task of the top class holds it */
} dmn_mode_t;

/* A PLAN of kind EVICT with no ranges (v6) ends the evictions of its grant
 * sent to this task: the daemon holds that switch's GRANT and fill ahead
 * until the task answers EVICTED for the grant (once an event recorded after
 * those evictions completed on the GPU), or a bound passed (docs/daemon-evict.md).
 */
typedef enum dmn_plan_kind {
    DMN_PLAN_EVICT = 0, /* move these ranges to host memory */
    DMN_PLAN_FILL = 1,  /* move these ranges to the device */
    DMN_PLAN_AHEAD = 2, /* fill for your next turn, into free memory; may be applied while
                           waiting (v3) */
} dmn_plan_kind_t;

#define DMN_PRIORITY_MIN (-20)
#define DMN_PRIORITY_MAX 20

typedef struct dmn_range {
    uint64_t base;
    uint64_t len;
} dmn_range_t;

typedef struct dmn_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length;
    uint32_t seq;
} dmn_hdr_t;

typedef struct dmn_msg_register { /* 56 bytes */
    uint32_t pid;
    uint32_t cls;     /* dmn_class_t */
    int32_t priority; /* DMN_PRIORITY_MIN..MAX, higher runs first */
    uint32_t flags;   /* 0 in version 1 */
    uint64_t budget;  /* device bytes the task asks for, 0: unspecified */
    char name[DMN_NAME_MAX];
} dmn_msg_register_t;

typedef struct dmn_msg_ranges { /* PENDING (count = launches) and PLAN (count = kind) */
    uint32_t count;
    uint32_t n_ranges;
    uint64_t seq;             /* PLAN: the grant it belongs to; PENDING: the sender's request
                                 number, counted from 1 over its PENDING messages (v5) */
    const uint8_t *ranges_le; /* n_ranges * 16 bytes in the caller's buffer */
} dmn_msg_ranges_t;

typedef struct dmn_msg_stats { /* 56 bytes */
    uint64_t resident;         /* device bytes resident now, pinned ones included */
    uint64_t total;            /* bytes allocated, pinned ones included */
    uint64_t faults;           /* demand faults so far */
    uint64_t migrated;         /* bytes moved either way so far */
    uint64_t kernels;          /* kernels launched so far */
    uint64_t device;           /* device memory of the task's GPU in bytes, 0: unknown (v2) */
    uint64_t pinned;           /* device bytes no plan can move: not managed (v9; daemon.md) */
} dmn_msg_stats_t;

typedef struct dmn_msg_registered { /* 16 bytes */
    uint32_t task_id;
    uint32_t reserved;
    uint64_t quantum_ns;
} dmn_msg_registered_t;

typedef struct dmn_msg_refused { /* 68 bytes */
    int32_t status;              /* gmux_status_t */
    char reason[DMN_REASON_MAX];
} dmn_msg_refused_t;

/* GRANT flags (v8). PLANNED: the placement planned the task's memory for
 * this turn (opt, chunk): its fills (this grant's FILL and the fills ahead
 * sent since the task's last grant) are all it moves in, and what it
 * evicted of the task and does not fill is left to demand paging, so the
 * task's own policy must not prefetch that again (docs/shim-gate.md). Without
 * it (swap, none, a plan that failed) the policy prefetches what the daemon
 * evicted at its next use. Other bits drop the connection. */
#define DMN_GRANT_PLANNED   1u
#define DMN_GRANT_FLAGS_ALL DMN_GRANT_PLANNED

typedef struct dmn_msg_grant { /* GRANT and REVOKE, 32 bytes */
    uint64_t grant_seq;
    uint64_t quantum_ns;
    uint64_t request;  /* GRANT: the number of the last PENDING read before it (v5); REVOKE: 0 */
    uint32_t flags;    /* GRANT: DMN_GRANT_* (v8); REVOKE: 0 */
    uint32_t reserved; /* 0 */
} dmn_msg_grant_t;

typedef struct dmn_msg_evicted { /* 16 bytes */
    uint64_t grant_seq; /* the grant whose EVICT orders (ended by an empty EVICT PLAN) are done */
    uint32_t failed;    /* ranges the task did not move (the driver refused them, or a graph
                           capture put them off: they go later); the answer counts all the same */
    uint32_t reserved;  /* 0 */
} dmn_msg_evicted_t;

typedef struct dmn_status_task { /* 136 bytes on the wire */
    uint32_t id, pid, state, cls;
    int32_t priority;
    uint32_t reserved;
    uint64_t budget, resident, total, faults, migrated, kernels;
    uint64_t run_ns; /* time holding the turn */
    uint64_t age_ns; /* time since registration */
    char name[DMN_NAME_MAX];
    uint64_t footprint; /* device bytes the daemon counts for the task (arbiter.h) (v2) */
    uint64_t pinned;    /* of resident, the bytes no plan can move (STATS pinned) (v9) */
} dmn_status_task_t;

typedef struct dmn_msg_status {
    uint32_t n_tasks;
    uint32_t mode; /* dmn_mode_t (v2) */
    uint64_t uptime_ns;
    uint64_t switches;          /* grants that went, a task granted again included */
    uint64_t reclaimed;         /* tasks whose connection ended: exit, death, protocol error */
    uint64_t capacity;          /* device bytes the mode is decided against, 0: unknown (v2) */
    uint64_t footprint;         /* sum of the tasks' footprints (v2) */
    uint64_t mode_changes;      /* switches between sliced and shared so far (v2) */
    uint64_t evict_bytes;       /* planned so far: evictions (v4) */
    uint64_t fill_bytes;        /* fills at a switch (v4) */
    uint64_t ahead_bytes;       /* fills ahead (v4) */
    uint64_t ahead_plans;       /* switches that planned a fill ahead (v4) */
    uint64_t evict_waits;       /* switches whose GRANT waited for EVICTED reports (v6) */
    uint64_t evict_timeouts;    /* of those, the ones that gave up waiting (v6) */
    uint64_t evict_wait_ns;     /* time they waited in all (v6) */
    uint64_t evict_wait_max_ns; /* the longest of those waits (v6) */
    const uint8_t *tasks_le;    /* n_tasks * 136 bytes in the caller's buffer */
} dmn_msg_status_t;

typedef struct dmn_msg {
    dmn_hdr_t hdr;
    union {
        dmn_msg_register_t reg;
        dmn_msg_ranges_t ranges;
        dmn_msg_stats_t stats;
        dmn_msg_registered_t registered;
        dmn_msg_refused_t refused;
        dmn_msg_grant_t grant;
        dmn_msg_evicted_t evicted;
        dmn_msg_status_t status;
    } u;
} dmn_msg_t;

/*
 * Reads a header from buf. GMUX_OK: *hdr is valid and the whole message is
 * DMN_PROTO_HDR_SIZE + hdr->length bytes. GMUX_ERR_BUSY: fewer than 16 bytes
 * yet. GMUX_ERR_PARSE: bad magic, length or type; GMUX_ERR_VERSION: other
 * version. Errors are final: the stream cannot be resynchronised.
 */
gmux_status_t dmn_proto_read_hdr(const uint8_t *buf, size_t avail, dmn_hdr_t *hdr);

/* Decodes one whole message (header and payload, len bytes). On error *msg is
 * unspecified. Pointers in *msg point into buf. */
gmux_status_t dmn_proto_decode(const uint8_t *buf, size_t len, dmn_msg_t *msg);

/* The i-th range of a PENDING or PLAN message (i < n_ranges). */
dmn_range_t dmn_proto_range_at(const dmn_msg_ranges_t *m, uint32_t i);

/* The i-th task of a STATUS message (i < n_tasks). */
void dmn_proto_status_task_at(const dmn_msg_status_t *m, uint32_t i, dmn_status_task_t *out);

/*
 * Encoders: write one whole message into out (capacity cap) and return its
 * size, or 0 when it does not fit or an argument is out of range. Ranges and
 * tasks are given as arrays of host structs.
 */
size_t dmn_proto_encode_register(uint8_t *out, size_t cap, uint32_t seq,
                                 const dmn_msg_register_t *m);
size_t dmn_proto_encode_ranges(uint8_t *out, size_t cap, uint32_t seq, dmn_msg_type_t type,
                               uint32_t count, uint64_t plan_seq, const dmn_range_t *ranges,
                               uint32_t n_ranges);
size_t dmn_proto_encode_empty(uint8_t *out, size_t cap, uint32_t seq, dmn_msg_type_t type);
size_t dmn_proto_encode_stats(uint8_t *out, size_t cap, uint32_t seq, const dmn_msg_stats_t *m);
size_t dmn_proto_encode_registered(uint8_t *out, size_t cap, uint32_t seq,
                                   const dmn_msg_registered_t *m);
size_t dmn_proto_encode_refused(uint8_t *out, size_t cap, uint32_t seq, gmux_status_t status,
                                const char *reason);
size_t dmn_proto_encode_grant(uint8_t *out, size_t cap, uint32_t seq, dmn_msg_type_t type,
                              const dmn_msg_grant_t *m);
size_t dmn_proto_encode_evicted(uint8_t *out, size_t cap, uint32_t seq, const dmn_msg_evicted_t *m);
/* STATUS: the head fields of *head (its n_tasks and tasks_le are ignored). */
size_t dmn_proto_encode_status(uint8_t *out, size_t cap, uint32_t seq, const dmn_msg_status_t *head,
                               const dmn_status_task_t *tasks, uint32_t n_tasks);

const char *dmn_msg_type_name(uint32_t type); /* "REGISTER", or "?" */
const char *dmn_class_name(uint32_t cls);     /* "batch", "latency", or "?" */
const char *dmn_state_name(uint32_t state);   /* "idle", "pending", "running", "revoked", "held" */
const char *dmn_mode_name(uint32_t mode);     /* "sliced", "shared", or "?" */

#endif /* DMN_PROTO_H */

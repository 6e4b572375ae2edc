/*
 * Bootstrap wire format, version 2: frames between each rank and the
 * launcher's rendezvous server over TCP (127.0.0.1 for local jobs).
 *
 * Every frame: a 16-byte header then len payload bytes, little endian.
 *   HELLO      rank -> server   payload: size (u32); first frame of a rank
 *   ALLGATHER  rank -> server   payload: this rank's blob
 *              server -> rank   payload: for each rank r: len (u32) then blob
 *   BYE        rank -> server   the rank finalised; its exit is not a failure
 *   DEAD       server -> rank   header rank: a rank that is gone; collectives
 *                                are aborted. payload: none when it died
 *                                (exited without BYE, failed, or was killed),
 *                                or a u32 NET_BOOT_GONE_LEFT when it said BYE
 *                                after a death (it left in order; announced so
 *                                that nobody waits for it). A rank ignores a
 *                                payload it does not know. A rank announced
 *                                as left that then fails (exits non-zero) is
 *                                announced again, without payload.
 *   ERROR      server -> rank   header rank: a gmux_status_t, negated (so
 *                                positive); the collective in progress failed
 *                                on every rank (the server could not make its
 *                                result), and the next one starts afresh
 * Collectives are matched by order: every rank issues the same sequence, and
 * a rank cannot start the next before the previous one completed.
 *
 * Version 2 added ERROR: a version 1 rank would skip it and wait for a
 * result that never comes. DEAD's payload came later within version 2: a
 * rank that predates it reads and drops the payload, and says "died".
 */
#ifndef NET_BOOT_PROTO_H
#define NET_BOOT_PROTO_H

#include <stdint.h>

#define NET_BOOT_MAGIC   0x474d5842u /* "GMXB" */
#define NET_BOOT_VERSION 2u
#define NET_BOOT_MAX_LEN (64u << 20)

enum net_boot_type {
    NET_BOOT_HELLO = 1,
    NET_BOOT_ALLGATHER = 2,
    NET_BOOT_BYE = 3,
    NET_BOOT_DEAD = 4,
    NET_BOOT_ERROR = 5,
};

typedef struct net_boot_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t rank;
    uint32_t len;
} net_boot_hdr_t;

_Static_assert(sizeof(net_boot_hdr_t) == 16, "bootstrap header is 16 bytes");

/* DEAD's payload: why the rank is gone */
#define NET_BOOT_GONE_LEFT 1u /* it finalized (BYE) after another rank died */

/* Environment set by the launcher for each rank. */
#define NET_ENV_RANK      "GMUX_RANK"
#define NET_ENV_SIZE      "GMUX_SIZE"
#define NET_ENV_BOOTSTRAP "GMUX_BOOTSTRAP" /* host:port of the rendezvous server */
#define NET_ENV_JOB       "GMUX_JOB"       /* a name unique to the job */
/* shm endpoints are named NET_SHM_PREFIX<job>-<rank>[suffix]; their regions
 * live in /dev/shm under that name until every rank joined (then each rank
 * unlinks its own, comm.c), and the launcher removes those of ranks that
 * died before. */
#define NET_SHM_PREFIX "gmux-"

#endif /* NET_BOOT_PROTO_H */

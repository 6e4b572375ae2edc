/*
 * Stopping a rank of net_rank_audit.c (quiet2, fetchlate) for a while:
 * rank 0 asks through a word in the header page of the rank's shared file,
 * the rank stops itself (SIGSTOP) at a point where no thread of it is inside
 * libfabric, and rank 0 resumes it with SIGCONT. Included by
 * net_rank_audit.c alone (comm and CHECK from net_rank.h).
 */
#ifndef RANK_STOP_H
#define RANK_STOP_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/clock.h"
#include "net/internal.h"
#include "net_rank.h"

#define STOP_REQ    64 /* offset of the request word in the header page */
#define STOP_WAIT_S 20

/* The rank that is to be stopped stops itself, holding its progress lock:
 * no thread of it is then inside libfabric. shm holds a rank's region spin
 * lock while it progresses (src/net/shmguard.h): a SIGSTOP from outside
 * could catch its proxy thread inside fi_cq_read, and every send of rank 0
 * to it would then spin in libfabric for good, never reaching the SIGCONT.
 * Waits for the request in its own shared file's header (mine); returns
 * once resumed. */
static void stop_self(uint8_t *mine)
{
    _Atomic uint32_t *req = (_Atomic uint32_t *)(mine + STOP_REQ);
    uint64_t end = com_clock_ns() + STOP_WAIT_S * COM_NS_PER_S;
    while (!atomic_load(req) && com_clock_ns() < end)
        usleep(100);
    CHECK(atomic_load(req), "never asked to stop");
    net_progress_lock_wait(comm);
    raise(SIGSTOP);
    pthread_mutex_unlock(&comm->progress_lock);
}

/* Asks the owner of theirs (pid) to stop (stop_self) and waits until it is
 * (state T in /proc). */
static void stop_rank(uint8_t *theirs, pid_t pid)
{
    atomic_store((_Atomic uint32_t *)(theirs + STOP_REQ), 1);
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    uint64_t end = com_clock_ns() + STOP_WAIT_S * COM_NS_PER_S;
    do {
        FILE *f = fopen(path, "r");
        CHECK(f, "%s", path);
        size_t k = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[k] = 0;
        const char *s = strrchr(buf, ')');
        if (s && s[1] == ' ' && (s[2] == 'T' || s[2] == 't'))
            return;
        usleep(1000);
    } while (com_clock_ns() < end);
    CHECK(0, "rank did not stop");
}

#endif

/*
 * What the parts of net_rank share: the job, this rank, and the checks that
 * end the rank with a message.
 */
#ifndef NET_RANK_H
#define NET_RANK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <gmux/net.h>

extern gmux_comm_t *comm;
extern int me, n;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", me, __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define OK(call)                                                                                   \
    do {                                                                                           \
        gmux_status_t st_ = (call);                                                                \
        CHECK(st_ == GMUX_OK, "%s", gmux_status_name(st_));                                        \
    } while (0)

/* net_rank_mixed.c: direct and ring-path operations of several threads on
 * one stream (src/net/proxy.c, net_progress_direct). */
int mode_mixed(uint64_t rounds, int threads);

#endif /* NET_RANK_H */

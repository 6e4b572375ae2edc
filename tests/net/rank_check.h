/*
 * Checks that end a test rank with a message naming the rank, the place and
 * the failed condition: CHECK(cond, fmt, ...) and OK(call) for gmux_status_t
 * calls. The including file has an int `me` (the rank) in scope. Used by
 * net_rank (C) and netdev_rank (CUDA).
 */
#ifndef RANK_CHECK_H
#define RANK_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <gmux/status.h>

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

#endif /* RANK_CHECK_H */

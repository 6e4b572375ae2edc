/*
 * What the engine knows about one kernel launch: the launch values the
 * predictor reads (pointer and scalar arguments, grid and block) and, where
 * known, the byte ranges the launch touched. Shared by the predictor
 * (templates), the timeline and placement; filled by the simulator from
 * traces and by the shim from real cuLaunchKernel calls.
 *
 * Ownership: eng_launch_t points to arrays owned by the caller for the
 * duration of the call it is passed to; nothing here allocates.
 */
#ifndef ENG_LAUNCH_H
#define ENG_LAUNCH_H

#include <stdint.h>

typedef enum eng_arg_kind {
    ENG_ARG_PTR = 1, /* a device address (may point into the middle of a region) */
    ENG_ARG_VAL = 2, /* a scalar launch value (size, count, stride, ...) */
} eng_arg_kind_t;

typedef struct eng_arg {
    uint8_t kind; /* eng_arg_kind_t */
    uint64_t value;
} eng_arg_t;

typedef enum eng_access {
    ENG_ACCESS_READ = 1,
    ENG_ACCESS_WRITE = 2,
    ENG_ACCESS_RW = 3,
} eng_access_t;

typedef struct eng_range {
    uint64_t addr; /* absolute device address */
    uint64_t len;  /* bytes */
    uint8_t mode;  /* eng_access_t */
} eng_range_t;

typedef struct eng_launch {
    uint32_t kernel;   /* kernel identity (index into the caller's kernel table) */
    uint32_t grid[3];  /* grid dimensions */
    uint32_t block[3]; /* block dimensions */
    uint32_t nargs;
    const eng_arg_t *args; /* in parameter order */
} eng_launch_t;

#endif /* ENG_LAUNCH_H */

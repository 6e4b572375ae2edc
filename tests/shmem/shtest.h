/*
 * Tiny helpers of the OpenSHMEM test programs: each program uses only
 * shmem.h and the C library, runs on any number of PEs >= 2 and exits 0
 * when every check held (a failed check prints it and exits 1 through
 * shmem_global_exit).
 */
#ifndef SHTEST_H
#define SHTEST_H

#include <stdio.h>
#include <stdlib.h>

#include <shmem.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s\n", shmem_my_pe(), __FILE__, __LINE__, \
                    #cond);                                                                        \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

#endif /* SHTEST_H */

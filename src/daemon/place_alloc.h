/*
 * The allocation seam of the placements (placement.c's plans, place_opt.c,
 * place_chunk.c, chunk_runs.c, chunk_victims.c): every allocation they make
 * while planning a switch first asks dmn_place_alloc_fails(), and so does the
 * arbiter's copy of a task's ranges (dmn_arb_pending). Built with
 * DMN_PLACE_TEST_ALLOC (only tests/daemon/test_place_fail.c, which compiles
 * these files itself), the test defines it and fails the allocations it
 * chooses, to check that a switch that fails part-way leaves the model as it
 * was (placement.h); every other build has no seam.
 */
#ifndef DMN_PLACE_ALLOC_H
#define DMN_PLACE_ALLOC_H

#include <stdbool.h>

#ifdef DMN_PLACE_TEST_ALLOC
bool dmn_place_alloc_fails(void);
#else
#define dmn_place_alloc_fails() false
#endif

#endif /* DMN_PLACE_ALLOC_H */

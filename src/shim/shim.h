/*
 * libgmux.so internals: the dispatch table of the real driver, the hook
 * declarations (both generated from syms.h), the mode and the process-wide
 * state every hook reads.
 *
 * The real driver is only ever called as SHIM_REAL(sym)(...). The table is
 * filled once, by shim_ensure_init(), through the real driver's own
 * cuGetProcAddress at each entry's listed version (dlsym of the exported
 * name where the driver has no cuGetProcAddress). Entries the driver lacks
 * stay NULL and their hooks answer CUDA_ERROR_NOT_FOUND.
 *
 * Thread-safety: shim_ensure_init() is safe from any thread (each racing
 * thread looks the driver up with no lock held, the first publishes under
 * the init lock); after it returns the table and the mode are read-only.
 */
#ifndef SHIM_SHIM_H
#define SHIM_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shim/kname.h"
#include "shim/regions.h"
#include "shim/syms.h"

typedef enum shim_mode {
    SHIM_MODE_OFF = 0,       /* pass-through: track, never redirect or prefetch */
    SHIM_MODE_DEMAND = 1,    /* managed memory, no prefetch (unified-memory baseline) */
    SHIM_MODE_PROACTIVE = 2, /* managed memory, predicted ranges prefetched per launch */
} shim_mode_t;

#define SHIM_REAL_FIELD_(sym, base, ver, pfn, pt) pfn real_##sym;
typedef struct shim_real {
    SHIM_HOOK_LIST(SHIM_REAL_FIELD_)
    SHIM_CALL_LIST(SHIM_REAL_FIELD_)
} shim_real_t;
#undef SHIM_REAL_FIELD_

/*
 * Hooks are named shim_hook_<sym> in C; their symbol (asm label) is <sym>,
 * exported, so a program linked against libcuda binds to them under
 * LD_PRELOAD. The C names never clash with cuda.h's declarations.
 */
#define SHIM_HOOK_DECL_(sym, base, ver, pfn, pt)                                                   \
    __typeof__(*(pfn)0) shim_hook_##sym __asm__(#sym) __attribute__((visibility("default")));
SHIM_HOOK_LIST(SHIM_HOOK_DECL_)
#undef SHIM_HOOK_DECL_

extern shim_real_t shim_real;
#define SHIM_REAL(sym) (shim_real.real_##sym)

/* Calls the real sym (pasted, never expanded: cuda.h renames some names), or answers
 * CUDA_ERROR_NOT_FOUND where the driver lacks it. */
#define SHIM_CALL(sym, ...)                                                                        \
    (shim_real.real_##sym ? shim_real.real_##sym(__VA_ARGS__) : CUDA_ERROR_NOT_FOUND)

typedef struct shim_state {
    shim_mode_t mode;
    bool managed;    /* redirect plain allocations to managed memory */
    uint64_t budget; /* 0: none */
    shim_regions_t regions;
} shim_state_t;

extern shim_state_t shim_state;
extern atomic_bool shim_ready_;

void shim_init_slow(void);

/* The name of the kernel launched as f (a function or a library kernel), in
 * shim_kernel_name's form; "" when the driver gives none. */
void shim_func_name(CUfunction f, char out[SHIM_KNAME_MAX + 1]);

/*
 * Whether the calling process is a fork() child of the one that initialised
 * the shim. Its counters, trace and locks are copies of the parent's (a lock
 * another thread held at the fork stays held), so its exit writes none of the
 * parent's files: they stay the parent's.
 */
bool shim_forked_child(void);

/* Makes sure settings are read and the dispatch table is filled. */
static inline void shim_ensure_init(void)
{
    if (!atomic_load_explicit(&shim_ready_, memory_order_acquire))
        shim_init_slow();
}

/* Whether plain allocations go to managed memory in the current mode. */
static inline bool shim_redirects(void)
{
    return shim_state.mode != SHIM_MODE_OFF && shim_state.managed;
}

#endif /* SHIM_SHIM_H */

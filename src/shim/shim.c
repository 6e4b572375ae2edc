/*
 * libgmux.so core: initialisation, the dispatch table, and the two lookup
 * paths by which programs reach driver functions without naming them at link
 * time: dlsym() on the driver's handle, and cuGetProcAddress(). Both hand
 * out the hooks generated from syms.h.
 */
#include "shim/cupti.h"
#include "shim/shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/export.h"
#include "common/log.h"
#include "common/settings.h"
#include "shim/params.h"
#include "shim/stats.h"
#include "shim/streams.h"

shim_real_t shim_real;
shim_state_t shim_state;
atomic_bool shim_ready_;

typedef struct shim_entry {
    const char *sym;
    const char *base;
    int version;
    int per_thread;
    void *hook;       /* NULL for entries the shim only calls */
    void **real_slot; /* its field in shim_real */
} shim_entry_t;

#define SHIM_HOOK_ENTRY_(sym, base, ver, pfn, pt)                                                  \
    {#sym, #base, ver, pt, (void *)shim_hook_##sym, (void **)&shim_real.real_##sym},
#define SHIM_CALL_ENTRY_(sym, base, ver, pfn, pt)                                                  \
    {#sym, #base, ver, pt, NULL, (void **)&shim_real.real_##sym},
static const shim_entry_t shim_entries[] = {SHIM_HOOK_LIST(SHIM_HOOK_ENTRY_)
                                                SHIM_CALL_LIST(SHIM_CALL_ENTRY_)};
#undef SHIM_HOOK_ENTRY_
#undef SHIM_CALL_ENTRY_
#define SHIM_ENTRY_COUNT (sizeof(shim_entries) / sizeof(shim_entries[0]))

typedef void *(*shim_dlsym_fn)(void *, const char *);
static shim_dlsym_fn shim_real_dlsym_;
static pthread_mutex_t shim_init_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread bool shim_in_init;
static pid_t shim_pid; /* the process that initialised the shim; written before shim_ready_ */
static const char *const shim_mode_names[] = {"off", "demand", "proactive"};

/* --- the real dlsym ------------------------------------------------------- */

/*
 * The dlsym path runs before a sanitizer runtime is initialised (its own
 * start-up looks functions up with dlsym(RTLD_NEXT)), so it is built without
 * instrumentation and calls nothing a sanitizer intercepts (no strcmp, no
 * dlopen).
 */
#define SHIM_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

SHIM_NO_SANITIZE static shim_dlsym_fn shim_real_dlsym(void)
{
    shim_dlsym_fn fn = __atomic_load_n(&shim_real_dlsym_, __ATOMIC_ACQUIRE);
    if (fn)
        return fn;
    /* dlvsym is not interposed; GLIBC_2.34 is where dlsym moved into libc. */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && !fn; i++)
        fn = (shim_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    __atomic_store_n(&shim_real_dlsym_, fn, __ATOMIC_RELEASE);
    return fn;
}

/* --- initialisation ------------------------------------------------------- */

static CUresult shim_func_info(void *f, size_t i, size_t *off, size_t *size)
{
    return SHIM_CALL(cuFuncGetParamInfo, (CUfunction)f, i, off, size);
}

static CUresult shim_kernel_info(void *k, size_t i, size_t *off, size_t *size)
{
    return SHIM_CALL(cuKernelGetParamInfo, (CUkernel)k, i, off, size);
}

void shim_func_name(CUfunction f, char out[SHIM_KNAME_MAX + 1])
{
    const char *drv = NULL;
    /* a library kernel (CUkernel, as the runtime launches lazily loaded
     * modules' kernels) is not a function to cuFuncGetName */
    if (SHIM_CALL(cuFuncGetName, &drv, f) != CUDA_SUCCESS &&
        SHIM_CALL(cuKernelGetName, &drv, (CUkernel)f) != CUDA_SUCCESS)
        drv = NULL;
    shim_kernel_name(drv, out);
}

static void shim_read_settings(void)
{
    char err[512];
    /* only the shim's own: a malformed variable of gmuxd or the net library
     * is no concern of the program's */
    if (com_settings_init_scoped(COM_SCOPE_SHIM, err, sizeof(err)) != GMUX_OK && err[0])
        COM_WARN(SHIM, "%s (defaults used)", err); /* empty: said already */
    const char *policy = COM_SETTING_STRING(POLICY);
    shim_state.mode = SHIM_MODE_OFF;
    size_t i;
    for (i = 0; i < sizeof(shim_mode_names) / sizeof(shim_mode_names[0]); i++)
        if (strcmp(policy, shim_mode_names[i]) == 0)
            break;
    if (i < sizeof(shim_mode_names) / sizeof(shim_mode_names[0]))
        shim_state.mode = (shim_mode_t)i;
    else
        COM_ERROR(SHIM, "GMUX_POLICY='%s' is not off, demand or proactive: running as off", policy);
    shim_state.managed = COM_SETTING_BOOL(SHIM_MANAGED);
    shim_state.budget = COM_SETTING_SIZE(BUDGET);
}

/* Looks every entry up in the real driver into found[], loading
 * libcuda.so.1; false when there is no driver. Takes the dynamic loader's
 * lock (dlopen, dlsym), so never called with shim_init_lock held. */
static bool shim_find_driver(void *found[])
{
    shim_dlsym_fn real_dlsym = shim_real_dlsym();
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver || !real_dlsym)
        return false;
    PFN_cuGetProcAddress_v12000 gpa2 =
        (PFN_cuGetProcAddress_v12000)real_dlsym(driver, "cuGetProcAddress_v2");
    PFN_cuGetProcAddress_v11030 gpa1 =
        (PFN_cuGetProcAddress_v11030)real_dlsym(driver, "cuGetProcAddress");
    for (size_t i = 0; i < SHIM_ENTRY_COUNT; i++) {
        const shim_entry_t *e = &shim_entries[i];
        cuuint64_t flags = e->per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                         : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
        void *p = NULL;
        CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (gpa2 && gpa2(e->base, &p, e->version, flags, &q) != CUDA_SUCCESS)
            p = NULL;
        else if (!gpa2 && gpa1 && gpa1(e->base, &p, e->version, flags) != CUDA_SUCCESS)
            p = NULL;
        if (!p)
            p = real_dlsym(driver, e->sym);
        found[i] = p;
    }
    return true;
}

static void shim_fill_table(bool have_driver, void *const found[])
{
    if (!have_driver) {
        COM_INFO(SHIM, "no CUDA driver (libcuda.so.1): nothing to intercept");
        return;
    }
    for (size_t i = 0; i < SHIM_ENTRY_COUNT; i++) {
        *shim_entries[i].real_slot = found[i];
        if (!found[i])
            COM_DEBUG(SHIM, "driver has no %s (v%d)", shim_entries[i].sym, shim_entries[i].version);
    }
}

/*
 * The driver is looked up before shim_init_lock is taken. Looking it up takes
 * the dynamic loader's lock, and a library constructor (run inside dlopen,
 * under that lock) may make its first driver call while another thread
 * initialises: holding shim_init_lock across the lookup deadlocked the two
 * (test_shim_init). Threads that race here each look the driver up (the same
 * answers); the first to take the lock publishes them.
 */
void shim_init_slow(void)
{
    if (shim_in_init)
        return; /* re-entered from the driver's own loading: table not ready yet */
    if (atomic_load(&shim_ready_))
        return;
    shim_in_init = true;
    void *found[SHIM_ENTRY_COUNT];
    bool have_driver = shim_find_driver(found);
    pthread_mutex_lock(&shim_init_lock);
    if (!atomic_load(&shim_ready_)) {
        shim_pid = getpid();
        shim_read_settings();
        if (shim_regions_init(&shim_state.regions) != GMUX_OK)
            COM_ERROR(SHIM, "cannot initialise the region table");
        shim_fill_table(have_driver, found);
        shim_params_set_info(shim_func_info, shim_kernel_info);
        COM_INFO(SHIM, "libgmux ready: policy %s, managed %d, budget %llu",
                 shim_mode_names[shim_state.mode], (int)shim_state.managed,
                 (unsigned long long)shim_state.budget);
        atomic_store_explicit(&shim_ready_, true, memory_order_release);
    }
    pthread_mutex_unlock(&shim_init_lock);
    shim_in_init = false;
}

bool shim_forked_child(void)
{
    return atomic_load(&shim_ready_) && getpid() != shim_pid;
}

__attribute__((destructor)) static void shim_fini(void)
{
    if (!atomic_load(&shim_ready_) || shim_forked_child())
        return;
    const char *pattern = COM_SETTING_STRING(SHIM_STATS);
    shim_cupti_flush(); /* CUPTI's pending counters into the stats */
    atomic_store(&shim_stats.streams_live, (uint64_t)shim_streams_count());
    if (!pattern || !pattern[0])
        return;
    char path[4096], dir[PATH_MAX]; /* dir: a link's target's folder, named when at fault */
    int e;
    if (shim_stats_path(pattern, (long)getpid(), path, sizeof(path)) != 0)
        COM_WARN(SHIM, "GMUX_SHIM_STATS file name too long: %s", pattern);
    else if ((e = shim_stats_write(path, shim_mode_names[shim_state.mode], dir)) != 0)
        COM_WARN(SHIM, "cannot write GMUX_SHIM_STATS file %s: %s%s%s", path, dir,
                 dir[0] ? ": " : "", strerror(e));
}

/* --- lookup by name ------------------------------------------------------- */

SHIM_NO_SANITIZE static bool shim_name_eq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* The hook exported as sym, or NULL. */
SHIM_NO_SANITIZE static void *shim_hook_by_sym(const char *sym)
{
    if (sym[0] != 'c' || sym[1] != 'u')
        return NULL;
    for (size_t i = 0; i < SHIM_ENTRY_COUNT; i++)
        if (shim_entries[i].hook && shim_name_eq(shim_entries[i].sym, sym))
            return shim_entries[i].hook;
    return NULL;
}

/*
 * The hook entry a driver would resolve (base, version, flags) to: the
 * highest listed version <= version, the per-thread variant when flags ask
 * for it and one exists at that version or below. -1 when none is listed.
 */
static long shim_resolve(const char *base, int version, cuuint64_t flags)
{
    bool want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    long best = -1;
    for (size_t i = 0; i < SHIM_ENTRY_COUNT; i++) {
        const shim_entry_t *e = &shim_entries[i];
        if (!e->hook || e->version > version || strcmp(e->base, base) != 0)
            continue;
        if (e->per_thread && !want_pt)
            continue;
        if (best < 0 || e->version > shim_entries[best].version ||
            (e->version == shim_entries[best].version && e->per_thread))
            best = (long)i;
    }
    return best;
}

/* Replaces the driver's answer *pfn by the matching hook when it is one we wrap. */
static void shim_wrap_proc(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    if (!symbol || !pfn || !*pfn)
        return;
    long i = shim_resolve(symbol, version, flags);
    if (i < 0)
        return;
    const shim_entry_t *e = &shim_entries[i];
    if (*pfn != *e->real_slot) {
        /* The driver resolved to an ABI this list does not describe: hand it out unwrapped. */
        COM_DEBUG(SHIM, "cuGetProcAddress(%s, %d, %#llx) is not %s: not wrapped", symbol, version,
                  (unsigned long long)flags, e->sym);
        return;
    }
    *pfn = e->hook;
}

CUresult shim_hook_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGetProcAddress, symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS)
        shim_wrap_proc(symbol, pfn, version, flags);
    return r;
}

CUresult shim_hook_cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                       cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    shim_ensure_init();
    CUresult r = SHIM_CALL(cuGetProcAddress_v2, symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS)
        shim_wrap_proc(symbol, pfn, version, flags);
    return r;
}

/* --- dlsym ---------------------------------------------------------------- */

/*
 * dlsym has two kinds of callers. With RTLD_NEXT or RTLD_DEFAULT the answer
 * depends on who calls (glibc reads the return address), and the global
 * lookup order already finds libgmux.so's hooks first, so these go straight
 * to the real dlsym by a tail jump that keeps the caller's return address.
 * With a real handle (the runtime's dlopen of libcuda.so.1), the real answer
 * for a hooked name is replaced by the hook.
 */
void *shim_dlsym_real_fn(void);
void *shim_dlsym_handle(void *handle, const char *name);

__attribute__((visibility("hidden"), used, noinline)) SHIM_NO_SANITIZE void *
shim_dlsym_real_fn(void)
{
    return (void *)shim_real_dlsym();
}

__attribute__((visibility("hidden"), used)) SHIM_NO_SANITIZE void *
shim_dlsym_handle(void *handle, const char *name)
{
    shim_dlsym_fn real = shim_real_dlsym();
    void *p = real ? real(handle, name) : NULL;
    if (!p)
        return NULL;
    void *hook = shim_hook_by_sym(name);
    if (!hook)
        return p;
    shim_ensure_init();
    return hook;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
#ifdef __CET__
        "    endbr64\n"
#endif
        "    cmpq $-1, %rdi\n" /* RTLD_NEXT */
        "    je 1f\n"
        "    testq %rdi, %rdi\n" /* RTLD_DEFAULT */
        "    jne shim_dlsym_handle\n"
        "1:  pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"
        "    call shim_dlsym_real_fn\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    testq %rax, %rax\n"
        "    jz 2f\n"
        "    jmp *%rax\n"
        "2:  ret\n"
        ".size dlsym, .-dlsym\n");
#else
/* Other architectures: RTLD_NEXT and RTLD_DEFAULT are answered as if libgmux.so asked. */
GMUX_API void *dlsym(void *restrict handle, const char *restrict name)
{
    return shim_dlsym_handle(handle, name);
}
#endif

/*
 * libgmux.so core: initialisation, the dispatch table, and the two lookup
 * paths by which programs reach driver functions without naming them at link
 * time: dlsym() on the driver's handle, and cuGetProcAddress(). Both hand
 * out the hooks generated from syms.h.
 */
#include "shim/shim.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/export.h"
#include "common/log.h"
#include "common/settings.h"
#include "shim/params.h"
#include "shim/stats.h"

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
static const char *const shim_mode_names[] = {"off", "demand", "proactive"};

/* --- the real dlsym ------------------------------------------------------- */

static shim_dlsym_fn shim_real_dlsym(void)
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

static void shim_read_settings(void)
{
    char err[512];
    if (com_settings_init(err, sizeof(err)) != GMUX_OK)
        COM_WARN(SHIM, "%s (defaults used)", err);
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

static void shim_fill_table(void)
{
    shim_dlsym_fn real_dlsym = shim_real_dlsym();
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver || !real_dlsym) {
        COM_INFO(SHIM, "no CUDA driver (libcuda.so.1): nothing to intercept");
        return;
    }
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
        *e->real_slot = p;
        if (!p)
            COM_DEBUG(SHIM, "driver has no %s (v%d)", e->sym, e->version);
    }
}

void shim_init_slow(void)
{
    if (shim_in_init)
        return; /* re-entered from the driver's own loading: table not ready yet */
    pthread_mutex_lock(&shim_init_lock);
    if (!atomic_load(&shim_ready_)) {
        shim_in_init = true;
        shim_read_settings();
        if (shim_regions_init(&shim_state.regions) != GMUX_OK)
            COM_ERROR(SHIM, "cannot initialise the region table");
        shim_fill_table();
        shim_params_set_info(shim_func_info, shim_kernel_info);
        COM_INFO(SHIM, "libgmux ready: policy %s, managed %d, budget %llu",
                 shim_mode_names[shim_state.mode], (int)shim_state.managed,
                 (unsigned long long)shim_state.budget);
        shim_in_init = false;
        atomic_store_explicit(&shim_ready_, true, memory_order_release);
    }
    pthread_mutex_unlock(&shim_init_lock);
}

__attribute__((destructor)) static void shim_fini(void)
{
    if (!atomic_load(&shim_ready_))
        return;
    const char *path = COM_SETTING_STRING(SHIM_STATS);
    if (path && path[0] && shim_stats_write(path, shim_mode_names[shim_state.mode]) != 0)
        COM_WARN(SHIM, "cannot write GMUX_SHIM_STATS file %s", path);
}

/* --- lookup by name ------------------------------------------------------- */

/* The hook exported as sym, or NULL. */
static void *shim_hook_by_sym(const char *sym)
{
    if (sym[0] != 'c' || sym[1] != 'u')
        return NULL;
    for (size_t i = 0; i < SHIM_ENTRY_COUNT; i++)
        if (shim_entries[i].hook && strcmp(shim_entries[i].sym, sym) == 0)
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

/* The link map of the object containing addr, or NULL. */
static struct link_map *shim_object_of(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
        return NULL;
    return lm;
}

/*
 * dlsym(RTLD_NEXT) on behalf of caller: the real dlsym would search after
 * libgmux.so, not after the caller, so walk the objects loaded after the
 * caller and take the first that defines name itself (a link_map is not a
 * handle every object accepts, so each is reopened with RTLD_NOLOAD).
 */
static void *shim_dlsym_next(shim_dlsym_fn real, const char *name, const void *caller)
{
    struct link_map *lm = shim_object_of(caller);
    for (struct link_map *l = lm ? lm->l_next : NULL; l; l = l->l_next) {
        if (!l->l_name || !l->l_name[0])
            continue; /* the vDSO and the like: no handle to search */
        void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        void *p = real(h, name);
        dlclose(h);
        if (p && shim_object_of(p) == l)
            return p;
    }
    return NULL;
}

GMUX_API void *dlsym(void *restrict handle, const char *restrict name)
{
    const void *caller = __builtin_return_address(0);
    shim_dlsym_fn real = shim_real_dlsym();
    if (!real)
        return NULL;
    void *p;
    if (handle == RTLD_NEXT) {
        p = shim_dlsym_next(real, name, caller);
    } else {
        p = real(handle, name);
        if (!p && handle == RTLD_DEFAULT) {
            /* the caller's own scope (an RTLD_LOCAL library looking up its dependencies) */
            struct link_map *lm = shim_object_of(caller);
            void *h = lm && lm->l_name && lm->l_name[0]
                          ? dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD)
                          : NULL;
            if (h) {
                p = real(h, name);
                dlclose(h);
            }
        }
    }
    if (!p)
        return NULL;
    void *hook = shim_hook_by_sym(name);
    if (!hook)
        return p;
    shim_ensure_init();
    return hook;
}

/*
 * OpenSHMEM setup and query: joining the gmux net job, the two symmetric
 * windows (heap and the program's data), failing loudly, and translating
 * symmetric addresses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/settings.h"
#include "shmem/internal.h"

shm_state_t shm_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

GMUX_API struct shmem_ctx_s shmem_ctx_default_obj_ = {.team = &shmem_team_world_obj_, .used = true};
GMUX_API struct shmem_team_s shmem_team_world_obj_ = {.predefined = true};
GMUX_API struct shmem_team_s shmem_team_shared_obj_ = {.predefined = true};

void shm_die(const char *call, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "gmux shmem: PE %d: %s: %s\n", shm_state.me, call, msg);
    fflush(stderr);
    _exit(1);
}

/* Whether another PE's shmem_global_exit left its status here. */
static bool global_exit_left(int *status)
{
    if (!shm_state.heap)
        return false;
    uint64_t v = __atomic_load_n((uint64_t *)(shm_state.heap + SHM_SCRATCH_EXIT), __ATOMIC_ACQUIRE);
    *status = (int)(uint32_t)v;
    return (v & SHM_EXIT_MARK) != 0;
}

void shm_check(gmux_status_t st, const char *call)
{
    int exit_status;
    if (st == GMUX_OK)
        return;
    if (st == GMUX_ERR_PEER && global_exit_left(&exit_status)) {
        /* the PE that died ended the job on purpose, with this status */
        fflush(stdout);
        fflush(stderr);
        _exit(exit_status);
    }
    if (st == GMUX_ERR_PEER)
        shm_die(call, "a PE of the job died (%s)", gmux_status_str(st));
    shm_die(call, "%s", gmux_status_str(st));
}

void shm_need_init(const char *call)
{
    if (!shm_state.initialized || shm_state.finalized)
        shm_die(call, "called outside shmem_init .. shmem_finalize");
}

bool shm_is_symmetric(const void *addr, size_t len, shm_addr_t *out)
{
    const char *a = addr;
    shm_state_t *s = &shm_state;
    if (a >= s->heap && a <= s->heap + s->heap_size &&
        len <= (size_t)(s->heap + s->heap_size - a)) {
        *out = (shm_addr_t){s->heap_win, (uint64_t)(a - s->heap)};
        return true;
    }
    if (s->have_data && a >= s->data && a <= s->data + s->data_size &&
        len <= (size_t)(s->data + s->data_size - a)) {
        *out = (shm_addr_t){s->data_win, (uint64_t)(a - s->data)};
        return true;
    }
    return false;
}

shm_addr_t shm_translate(const void *addr, size_t len, const char *call)
{
    shm_addr_t r;
    if (!shm_is_symmetric(addr, len, &r))
        shm_die(call,
                "address %p (%zu bytes) is not symmetric: not in the symmetric heap nor in "
                "the program's global/static data",
                addr, len);
    return r;
}

static void shm_atexit(void)
{
    if (shm_state.initialized && !shm_state.finalized)
        shmem_finalize();
}

static gmux_status_t join(void)
{
    shm_state_t *s = &shm_state;
    char err[512];
    /* the net library checks its own in gmux_comm_init */
    if (com_settings_init_scoped(COM_SCOPE_SHMEM, err, sizeof(err)) != GMUX_OK && err[0])
        fprintf(stderr, "gmux shmem: settings: %s\n", err); /* empty: said already */
    gmux_comm_params_t p;
    gmux_comm_params_init(&p);
    p.num_contexts = SHM_NET_CONTEXTS;
    gmux_status_t st = gmux_comm_init(&p, &s->comm);
    if (st != GMUX_OK)
        return st;
    s->me = gmux_comm_rank(s->comm);
    s->npes = gmux_comm_size(s->comm);
    s->wait_timeout_s = COM_SETTING_DOUBLE(SHMEM_WAIT_TIMEOUT);
    st = shm_heap_init((size_t)COM_SETTING_SIZE(SHMEM_HEAP));
    if (st != GMUX_OK)
        goto finalize_comm;
    st = gmux_window_register(s->comm, s->heap, s->heap_size, &s->heap_win);
    if (st != GMUX_OK)
        goto free_heap;
    s->have_data = shm_data_find(&s->data, &s->data_size) == GMUX_OK;
    /* every PE runs the same program, so either all or none find it; the
     * registration checks the sizes agree */
    if (s->have_data) {
        st = gmux_window_register(s->comm, s->data, s->data_size, &s->data_win);
        if (st != GMUX_OK)
            goto free_heap;
    }
    shmem_team_world_obj_.net = gmux_team_world(s->comm);
    /* SHMEM_TEAM_SHARED: the PEs whose memory shmem_ptr reaches, i.e. self */
    st =
        gmux_team_split_strided(gmux_team_world(s->comm), s->me, 1, 1, &shmem_team_shared_obj_.net);
    if (st != GMUX_OK)
        goto free_heap;
    if (shm_heap_alloc(SHM_SCRATCH, SHM_ALIGN) != s->heap)
        st = GMUX_ERR_NOMEM;
    if (st != GMUX_OK)
        goto free_heap;
    return gmux_barrier(gmux_team_world(s->comm));
free_heap:
    shm_heap_fini();
finalize_comm:
    gmux_comm_finalize(s->comm);
    s->comm = NULL;
    return st;
}

GMUX_API int shmem_init_thread(int requested, int *provided)
{
    shm_state_t *s = &shm_state;
    if (s->finalized)
        shm_die("shmem_init", "called after shmem_finalize");
    if (!s->initialized) {
        gmux_status_t st = join();
        if (st != GMUX_OK) {
            fprintf(stderr, "gmux shmem: shmem_init: joining the job failed: %s%s\n",
                    gmux_status_str(st),
                    getenv("GMUX_BOOTSTRAP") ? "" : " (start programs with oshrun)");
            return 1;
        }
        s->initialized = true;
        /* what the first call asked for, up to what is supported; later
         * calls and shmem_query_thread report the same level */
        s->thread_level = requested < SHMEM_THREAD_SINGLE     ? SHMEM_THREAD_SINGLE
                          : requested > SHMEM_THREAD_MULTIPLE ? SHMEM_THREAD_MULTIPLE
                                                              : requested;
        atexit(shm_atexit);
    }
    if (provided)
        *provided = s->thread_level;
    return 0;
}

GMUX_API void shmem_init(void)
{
    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, NULL) != 0)
        exit(1);
}

GMUX_API void shmem_query_thread(int *provided)
{
    shm_need_init("shmem_query_thread");
    *provided = shm_state.thread_level;
}

GMUX_API void shmem_finalize(void)
{
    shm_state_t *s = &shm_state;
    if (!s->initialized || s->finalized)
        return;
    shm_check(gmux_barrier(gmux_team_world(s->comm)), "shmem_finalize");
    s->finalized = true;
    shm_team_fini();
    gmux_team_destroy(shmem_team_shared_obj_.net);
    gmux_status_t st = gmux_comm_finalize(s->comm);
    s->comm = NULL;
    shm_heap_fini();
    if (st != GMUX_OK)
        shm_die("shmem_finalize", "%s", gmux_status_str(st));
}

GMUX_API int shmem_my_pe(void)
{
    shm_need_init("shmem_my_pe");
    return shm_state.me;
}

GMUX_API int shmem_n_pes(void)
{
    shm_need_init("shmem_n_pes");
    return shm_state.npes;
}

GMUX_API int shmem_pe_accessible(int pe)
{
    shm_need_init("shmem_pe_accessible");
    return pe >= 0 && pe < shm_state.npes && gmux_peer_alive(shm_state.comm, pe);
}

GMUX_API int shmem_addr_accessible(const void *addr, int pe)
{
    shm_addr_t a;
    return shmem_pe_accessible(pe) && shm_is_symmetric(addr, 1, &a);
}

GMUX_API void *shmem_ptr(const void *dest, int pe)
{
    shm_addr_t a;
    shm_need_init("shmem_ptr");
    /* only the calling PE's own memory is load/store reachable */
    if (pe == shm_state.me && shm_is_symmetric(dest, 1, &a))
        return (void *)dest;
    return NULL;
}

GMUX_API void shmem_info_get_version(int *major, int *minor)
{
    *major = SHMEM_MAJOR_VERSION;
    *minor = SHMEM_MINOR_VERSION;
}

GMUX_API void shmem_info_get_name(char *name)
{
    snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

GMUX_API void shmem_global_exit(int status)
{
    shm_state_t *s = &shm_state;
    fflush(stdout);
    fflush(stderr);
    /* The launcher takes this PE's end for a failure and fails the others'
     * next communication; the status left in their scratch word first makes
     * them end with it too, so the job's status is `status` even when it is
     * 0 (OpenSHMEM 1.5). Best effort: a PE it cannot reach is stopped by the
     * launcher anyway. */
    if (s->initialized && !s->finalized)
        for (int pe = 0; pe < s->npes; pe++) {
            uint64_t old;
            if (pe != s->me)
                (void)gmux_atomic(s->comm, 0, pe, s->heap_win, SHM_SCRATCH_EXIT, GMUX_AMO_SET, 8,
                                  SHM_EXIT_MARK | (uint32_t)status, 0, &old);
        }
    _exit(status);
}

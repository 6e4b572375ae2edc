/*
 * net_rank guardlive (shm): the shm guard (src/net/shmguard.h) must never
 * release a region lock that a LIVE rank holds, however long that rank
 * stays inside its critical section. The last rank dies outside libfabric
 * (holding nothing); then rank 0 plays a progress call of its own that
 * keeps its own region's lock for 1.5 s (a huge copy on a starved machine)
 * while a second thread of it waits for the progress lock and so runs the
 * guard's check every millisecond. The lock must still be held, by rank 0,
 * when the slow critical section ends. The other survivors wait meanwhile.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "net/internal.h"
#include "net_rank.h"
#include "rank_kill.h"

#define SLOW_SECTION_US (1500 * 1000) /* longer than the guard's period (1 s) */

static atomic_bool slow_done;

/* A waiter: wants the progress lock while rank 0's "libfabric call" holds
 * it; net_progress_lock runs the guard's check while it waits. */
static void *waiter(void *arg)
{
    (void)arg;
    while (!atomic_load(&slow_done)) {
        net_progress_lock_wait(comm);
        pthread_mutex_unlock(&comm->progress_lock);
        usleep(1000);
    }
    return NULL;
}

static int word_of(pthread_spinlock_t *l)
{
    return atomic_load((_Atomic int *)l);
}

int mode_guardlive(void)
{
    uint64_t *win;
    gmux_window_t w;
    rank_kill_start(comm, &win, &w, NULL, NULL);
    /* every survivor learns of the death (a barrier fails once any rank died) */
    gmux_status_t st = gmux_barrier(gmux_team_world(comm));
    CHECK(st == GMUX_ERR_PEER, "barrier ended with %s", gmux_status_name(st));
    if (me == 0) {
        CHECK(comm->guard, "no shm guard");
        pthread_spinlock_t *own = net_shmguard_lock_of(comm->guard, me);
        CHECK(own, "own region not mapped");
        int free_word = word_of(own);
        pthread_t t;
        atomic_store(&slow_done, false);
        /* as the progress pass does around fi_cq_read ... */
        pthread_mutex_lock(&comm->progress_lock);
        net_shmguard_enter(comm->guard, me);
        /* ... whose shm progress takes the rank's own region lock */
        CHECK(pthread_spin_trylock(own) == 0, "own region lock busy");
        int held_word = word_of(own);
        CHECK(pthread_create(&t, NULL, waiter, NULL) == 0, "pthread_create");
        usleep(SLOW_SECTION_US);
        int after = word_of(own);
        CHECK(after == held_word,
              "the guard released a live rank's lock (word %d, held %d, free %d)", after, held_word,
              free_word);
        pthread_spin_unlock(own);
        net_shmguard_leave(comm->guard);
        pthread_mutex_unlock(&comm->progress_lock);
        atomic_store(&slow_done, true);
        pthread_join(t, NULL);
    }
    printf("rank %d: guardlive ok\n", me);
    fflush(stdout);
    st = gmux_comm_finalize(comm);
    CHECK(st != GMUX_OK, "finalize after a death returned OK");
    comm = NULL;
    free(win);
    return 0;
}

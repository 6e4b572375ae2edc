/* netdev_hold: see netdev_hold.h. */
#include "netdev_hold.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "net/internal.h"

static pthread_t holder;
static gmux_comm_t *held_comm;
static atomic_int state; /* 0 idle, 1 holding, 2 asked to let go */

static void *hold_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held_comm->progress_lock);
    atomic_store(&state, 1);
    while (atomic_load(&state) != 2)
        usleep(1000);
    pthread_mutex_unlock(&held_comm->progress_lock);
    return NULL;
}

int netdev_hold_progress(gmux_comm_t *comm)
{
    held_comm = comm;
    atomic_store(&state, 0);
    if (pthread_create(&holder, NULL, hold_main, NULL) != 0)
        return -1;
    while (atomic_load(&state) != 1)
        sched_yield();
    return 0;
}

void netdev_release_progress(void)
{
    atomic_store(&state, 2);
    pthread_join(holder, NULL);
}

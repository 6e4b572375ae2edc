/*
 * net_rank orphan exit|finalize: the launcher is killed mid-job (by
 * tests/net/test_net_orphan.c, which may kill a rank with it). Each rank
 * says its pid once every rank has joined, then keeps the job busy with
 * barriers until one fails: the loss of the launcher must end them with
 * GMUX_ERR_PEER, so that no rank outlives its launcher. Then the rank
 * leaves as a program would: `exit` at once with status 3 (an error path
 * that never finalizes), `finalize` after gmux_comm_finalize (which
 * returns GMUX_ERR_PEER), with status 0.
 *
 * net_rank leftover: the rank NET_RANK_DIE_UNLINKING names dies (SIGKILL)
 * when joining, at its first unlink in /dev/shm: the last step of
 * gmux_comm_init on shm, so its region and guard page are still there and
 * the others joined. Each other rank waits for its death (a barrier
 * failing with GMUX_ERR_PEER), then says how many files of the victim are
 * still in /dev/shm: the launcher removes them when it learns of the
 * death, before it tells the others.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "net/boot_proto.h"
#include "net_rank.h"

#define ORPHAN_EXIT_STATUS 3 /* test_net_orphan.c expects it */

int mode_orphan(const char *how)
{
    bool finalize = strcmp(how, "finalize") == 0;
    CHECK(finalize || strcmp(how, "exit") == 0, "orphan exit|finalize, not '%s'", how);
    OK(gmux_barrier(gmux_team_world(comm)));
    printf("rank %d: pid %d running\n", me, (int)getpid());
    fflush(stdout);
    gmux_status_t st;
    while ((st = gmux_barrier(gmux_team_world(comm))) == GMUX_OK)
        usleep(1000);
    CHECK(st == GMUX_ERR_PEER, "barrier ended with %s", gmux_status_name(st));
    printf("rank %d: launcher lost (%s)\n", me, gmux_status_name(st));
    fflush(stdout);
    if (!finalize)
        exit(ORPHAN_EXIT_STATUS);
    st = gmux_comm_finalize(comm);
    CHECK(st == GMUX_ERR_PEER, "finalize ended with %s", gmux_status_name(st));
    comm = NULL;
    return 0;
}

/* The test hook: net_rank's own unlink, which the net objects it links
 * call (gmux_net_static); every other call goes on as unlinkat. */
int unlink(const char *path)
{
    const char *victim = getenv("NET_RANK_DIE_UNLINKING"), *rank = getenv(NET_ENV_RANK);
    if (victim && rank && strcmp(victim, rank) == 0 && strncmp(path, "/dev/shm/", 9) == 0)
        kill(getpid(), SIGKILL);
    return unlinkat(AT_FDCWD, path, 0);
}

/* How many names in /dev/shm belong to rank `of` of this job. */
static int rank_files(int of)
{
    char prefix[128];
    int len = snprintf(prefix, sizeof(prefix), NET_SHM_PREFIX "%s-%d", getenv(NET_ENV_JOB), of);
    DIR *d = opendir("/dev/shm");
    CHECK(d, "cannot read /dev/shm");
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, prefix, (size_t)len) == 0 &&
            (e->d_name[len] < '0' || e->d_name[len] > '9'))
            k++;
    closedir(d);
    return k;
}

int mode_leftover(void)
{
    const char *v = getenv("NET_RANK_DIE_UNLINKING");
    CHECK(v && getenv(NET_ENV_JOB), "NET_RANK_DIE_UNLINKING and GMUX_JOB must be set");
    int victim = atoi(v);
    CHECK(victim != me, "the victim joined");
    gmux_status_t st;
    while ((st = gmux_barrier(gmux_team_world(comm))) == GMUX_OK)
        usleep(1000);
    CHECK(st == GMUX_ERR_PEER, "barrier ended with %s", gmux_status_name(st));
    printf("rank %d: rank %d dead, %d of its files in /dev/shm\n", me, victim, rank_files(victim));
    st = gmux_comm_finalize(comm);
    CHECK(st == GMUX_ERR_PEER, "finalize ended with %s", gmux_status_name(st));
    comm = NULL;
    return 0;
}

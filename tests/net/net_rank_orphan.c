/*
 * net_rank orphan exit|finalize: the launcher is killed mid-job (by
 * tests/net/test_net_orphan.c, which may kill a rank with it). Each rank
 * says its pid once every rank has joined, then keeps the job busy with
 * barriers until one fails: the loss of the launcher must end them with
 * GMUX_ERR_PEER, so that no rank outlives its launcher. Then the rank
 * leaves as a program would: `exit` at once with status 3 (an error path
 * that never finalizes), `finalize` after gmux_comm_finalize (which
 * returns GMUX_ERR_PEER), with status 0.
 */
#include <string.h>
#include <unistd.h>

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

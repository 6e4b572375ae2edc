/* The starvation rule of daemon_soak (soak.h). */
#include <stdio.h>
#include <unistd.h>

#include "common/clock.h"
#include "soak.h"

void soak_seen_take(soak_seen_t *v, int n)
{
    for (int j = 0; j < n; j++) { /* opens before turns: a turn of a new task is counted new */
        v->born[j] = LOAD(&sh->slot[j].born_ns);
        v->opens[j] = LOAD(&sh->slot[j].opens);
        v->turns[j] = LOAD(&sh->slot[j].turns);
    }
}

/* Client i's wait, from its PENDING in the socket to the daemon's grant
 * number before_grant (UINT64_MAX: not granted, the daemon still has it
 * pending), against the others' turns granted before that and counted
 * since (the bound of daemon_soak.c's header).  A turn granted after is not counted: in
 * the shared mode others go on while this client, granted, waits for a
 * core to see it. */
void soak_seen_judge(const soak_seen_t *v, int n, soak_slot_t *s, int i, uint64_t before_grant)
{
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        soak_slot_t *o = &sh->slot[j];
        uint64_t now = LOAD(&o->turns), opens = LOAD(&o->opens); /* turns first */
        uint64_t from = 0; /* replaced meanwhile: all its turns and registrations are new */
        if (LOAD(&o->born_ns) == v->born[j]) {
            from = v->turns[j] < now ? v->turns[j] : now;
            opens -= v->opens[j] < opens ? v->opens[j] : opens;
        }
        if (now - from > SOAK_RING) /* the older ones are overwritten */
            from = now - SOAK_RING;
        uint64_t turns = 0;
        for (uint64_t k = from; k < now; k++)
            turns += LOAD(&o->grant[k % SOAK_RING]) < before_grant;
        uint64_t over = turns > opens ? turns - opens : 0;
        if (over > LOAD(&s->overtaken_max))
            STORE(&s->overtaken_max, over);
        if (turns > 3 + opens) {
            BUMP(&s->starved);
            fprintf(stderr,
                    "soak: client %d (pid %d) waited while client %d had %llu turns and %llu "
                    "registrations (at %.3f s)\n",
                    i, (int)getpid(), j, (unsigned long long)turns, (unsigned long long)opens,
                    (double)com_clock_ns() / 1e9);
        }
    }
}

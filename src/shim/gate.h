/*
 * Launch gating: libgmux.so's side of gmuxd. At the first launch the shim
 * registers the task with the daemon (class, priority, budget, pid, name from
 * GMUX_TASK_CLASS, GMUX_TASK_PRIORITY, GMUX_BUDGET, GMUX_TASK_NAME) through
 * the client library (daemon/client.h); from then on every launch hook calls
 * shim_gate_enter() before handing the launch to the driver and
 * shim_gate_exit() after.
 *
 *   holding the turn   enter is one atomic increment of an in-flight count and
 *                      a load of the turn flag, exit one decrement; nothing
 *                      allocates
 *   not holding it     enter blocks the calling thread in
 *                      dmn_client_wait_turn until the daemon grants the turn
 *                      (at most GMUX_DAEMON_TURN_TIMEOUT_MS, then it launches
 *                      anyway), applies the daemon's evict/fill plan on the
 *                      context's migration stream, then lets the launch go
 *
 * A watcher thread polls the daemon's socket: on REVOKE it clears the turn
 * flag, waits until no launch is inside the driver, and releases (the switch
 * happens at that kernel boundary); after GMUX_GATE_IDLE_MS without a launch
 * it sends IDLE; every GMUX_GATE_REPORT_MS it sends the shim's counters.
 *
 * Without a daemon, or once it died, the client runs in local mode: the turn
 * flag stays set (no gating) and the watcher's polls reconnect and register
 * again when a daemon is back; the next launch then waits for its turn.
 *
 * Thread-safety: any thread may launch. Launches from one thread keep their
 * order; a thread blocked for the turn blocks only itself, but every other
 * launching thread of the process then also finds the flag clear and waits
 * for the same turn (a process is one task). LOCKING: gate_mu guards the
 * client; the launch fast path takes no lock.
 */
#ifndef SHIM_GATE_H
#define SHIM_GATE_H

#include <stdatomic.h>
#include <stdbool.h>

enum { SHIM_GATE_UNSET = 0, SHIM_GATE_OFF = 1, SHIM_GATE_ON = 2 };

extern _Atomic int shim_gate_state_;
extern _Atomic unsigned shim_gate_in_flight_;
extern atomic_bool shim_gate_turn_;

void shim_gate_init(void);
void shim_gate_slow(void);

/* Before a launch reaches the driver; returns whether shim_gate_exit must follow. */
static inline bool shim_gate_enter(void)
{
    int st = atomic_load_explicit(&shim_gate_state_, memory_order_acquire);
    if (st == SHIM_GATE_UNSET) {
        shim_gate_init();
        st = atomic_load_explicit(&shim_gate_state_, memory_order_acquire);
    }
    if (st != SHIM_GATE_ON)
        return false;
    atomic_fetch_add(&shim_gate_in_flight_, 1); /* seq_cst: pairs with the watcher's revoke */
    if (!atomic_load(&shim_gate_turn_))
        shim_gate_slow();
    return true;
}

/* After the driver took the launch. */
static inline void shim_gate_exit(bool entered)
{
    if (entered)
        atomic_fetch_sub_explicit(&shim_gate_in_flight_, 1, memory_order_release);
}

#endif /* SHIM_GATE_H */

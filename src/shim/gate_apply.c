/* Carrying out gmuxd's orders on the migration stream; see gate_apply.h. */
#include "shim/gate_apply.h"

#include <pthread.h>
#include <stdatomic.h>

#include "common/log.h"
#include "shim/gate.h"
#include "shim/gate_evicted.h"
#include "shim/gate_plan.h"
#include "shim/gate_ranges.h"
#include "shim/policy.h"
#include "shim/shim.h"
#include "shim/stats.h"

/* The context launching threads last waited in, and the entry's generation
 * then (gate_cx_gen). It may name an entry whose context was destroyed
 * since, or one given to a later context (backend_cuda.h): entries are
 * static, and shim_backend_enter refuses a retired one or one of another
 * generation, so the watcher then leaves the evictions for the next wait or
 * grant, and answers a request for EVICTED at once (gate_evict_left); the
 * next wait sets it again. Once entered, the context is not destroyed
 * before the watcher leaves it: the destroy hooks wait. */
static shim_cuctx_t *gate_cx;
static uint32_t gate_cx_gen;
/* Bytes the orders moved to the device and to the host (the stats the gate
 * reports to gmuxd). */
static _Atomic uint64_t gate_bytes_in, gate_bytes_out;

void shim_gate_apply_waited_in(shim_cuctx_t *cx)
{
    gate_cx = cx;
    gate_cx_gen = shim_backend_gen(cx);
}

void shim_gate_apply_bytes(uint64_t *in_p, uint64_t *out_p)
{
    *in_p = atomic_load(&gate_bytes_in);
    *out_p = atomic_load(&gate_bytes_out);
}

/* The first region of t that ends after base. Under t->lock. */
static size_t gate_first_region(const shim_regions_t *t, uint64_t base)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].base + t->v[mid].size <= base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Moves the managed memory inside r to the device or to the host on the
 * migration stream and returns the bytes it asked for; the regions it moves
 * to the host count as evicted by the daemon (SHIM_GEN_EVICTED: prefetched
 * again at their next use unless a GRANT leaves them to demand paging,
 * shim_gate_apply_grant). With gen non-zero (a
 * FILL at the grant, waited for before the launch), the regions it moves
 * whole to the device count as prefetched in generation gen: the launch
 * does not move them again (until 2026-12-03 it did, one redundant prefetch
 * per region evicted and filled back; test_gate_refill
 * test_filled_not_prefetched_again). The daemon's orders are rounded out to
 * its chunks, and the driver only takes ranges of managed memory (a range
 * over a region's end or a gap is refused whole). */
static uint64_t gate_move(eng_backend_t be, const dmn_range_t *r, bool to_device, uint32_t gen)
{
    shim_regions_t *t = &shim_state.regions;
    uint64_t moved = 0, end = r->base + r->len;
    eng_ticket_t tk;
    pthread_rwlock_rdlock(&t->lock);
    for (size_t i = gate_first_region(t, r->base); i < t->n && t->v[i].base < end; i++) {
        shim_region_t *g = &t->v[i];
        uint64_t a = g->base > r->base ? g->base : r->base;
        uint64_t b = g->base + g->size < end ? g->base + g->size : end;
        if (g->kind != SHIM_REGION_MANAGED || a >= b)
            continue;
        gmux_status_t st = to_device ? be.ops->prefetch(be.ctx, 0, a, b - a, &tk)
                                     : be.ops->evict(be.ctx, 0, a, b - a, &tk);
        moved += st == GMUX_OK ? b - a : 0;
        /* written atomically under the shared lock, as shim_regions_claim does */
        if (to_device && gen && st == GMUX_OK && a == g->base && b == g->base + g->size) {
            __atomic_store_n(&g->order, 0, __ATOMIC_RELAXED); /* waited for */
            __atomic_store_n(&g->gen, gen, __ATOMIC_RELAXED);
        }
    }
    pthread_rwlock_unlock(&t->lock);
    /* what went to the host is prefetched again at its next use under the
     * proactive policy: no FILL may bring it back first (policy.h) */
    if (!to_device)
        shim_policy_evicted(r->base, r->len);
    return moved;
}

/* Moves the stored orders of one kind on cx's migration stream (to the
 * device or to the host) and returns the bytes asked for; gen: as gate_move. */
static uint64_t gate_move_stored(shim_cuctx_t *cx, dmn_plan_kind_t kind, bool to_device,
                                 uint32_t gen)
{
    eng_backend_t be = shim_backend_engine(cx);
    uint64_t bytes = 0;
    uint32_t n;
    const dmn_range_t *v = shim_gate_plan_ranges(kind, &n);
    for (uint32_t i = 0; i < n; i++)
        bytes += gate_move(be, &v[i], to_device, gen);
    return bytes;
}

/* The stored EVICT orders that still cover tracked managed memory: what
 * nobody moved when the watcher cannot enter the context the launching
 * threads waited in (destroyed: the memory allocated in it went with it,
 * hooks_ctx.c; what is left belongs to other contexts). Under gate_mu. */
static uint32_t gate_evict_left(void)
{
    shim_regions_t *t = &shim_state.regions;
    uint32_t n, left = 0;
    const dmn_range_t *v = shim_gate_plan_ranges(DMN_PLAN_EVICT, &n);
    pthread_rwlock_rdlock(&t->lock);
    for (uint32_t k = 0; k < n; k++) {
        uint64_t end = v[k].base + v[k].len;
        for (size_t i = gate_first_region(t, v[k].base); i < t->n && t->v[i].base < end; i++)
            if (t->v[i].kind == SHIM_REGION_MANAGED) {
                left++;
                break;
            }
    }
    pthread_rwlock_unlock(&t->lock);
    return left;
}

typedef struct gate_mover {
    eng_backend_t be;
    uint64_t bytes;
} gate_mover_t;

static void gate_prefetch_piece(void *arg, dmn_range_t piece)
{
    gate_mover_t *mv = arg;
    mv->bytes += gate_move(mv->be, &piece, true, 0); /* not waited for: no mark */
}

/* Prefetches the stored AHEAD orders to the device on the calling thread's
 * context (a launching thread), on the migration stream, without waiting for
 * them: the task is not running, nothing of its own needs them yet. Pieces
 * inside evictions still stored are left out: an eviction a fill could not
 * cut (no room in the store, gate_plan.c) is kept whole and carried out
 * after this, which would only move them back. Under gate_mu. */
void shim_gate_apply_ahead(const dmn_client_t *cl)
{
    shim_gate_plan_current(cl);
    uint32_t na, ne;
    const dmn_range_t *ahead = shim_gate_plan_ranges(DMN_PLAN_AHEAD, &na);
    const dmn_range_t *evict = shim_gate_plan_ranges(DMN_PLAN_EVICT, &ne);
    if (na == 0)
        return;
    shim_cuctx_t *cx = shim_backend_current();
    if (cx && shim_state.mode != SHIM_MODE_OFF) {
        gate_mover_t mv = {shim_backend_engine(cx), 0};
        shim_gate_evicted_order(cx);
        /* both stores coalesced: one merge pass */
        shim_gate_ranges_outside(evict, ne, ahead, na, gate_prefetch_piece, &mv);
        uint64_t bytes = mv.bytes;
        atomic_fetch_add(&gate_bytes_in, bytes);
        SHIM_STAT_ADD(ahead_plans, 1);
        SHIM_STAT_ADD(ahead_bytes, bytes);
        shim_gate_plan_clear(DMN_PLAN_AHEAD);
    }
    shim_gate_plan_give_up(DMN_PLAN_AHEAD); /* none left when carried out */
}

/* Moves the stored EVICT orders to the host now, on cx (current on the
 * calling thread), for a task without the turn. The daemon sent them to make
 * room for the task it just granted; kept until this task's next grant they
 * freed nothing in time and then evicted what that grant fills again. The
 * moves go on the migration stream after the work this task queued (kernels
 * of its last turn may still run, and would fault the data straight back),
 * ordered on the GPU: a thread that waited for that work here could wait for
 * ever on a program whose queued work waits for its own gated threads (a
 * host function taking a lock the launching thread holds). Nothing waits for
 * the moves; the next grant's fence covers them. */
static void gate_evict_now(dmn_client_t *cl, shim_cuctx_t *cx)
{
    shim_gate_plan_current(cl);
    if (shim_gate_plan_count(DMN_PLAN_EVICT) && shim_state.mode != SHIM_MODE_OFF) {
        gmux_status_t st = shim_backend_after_queued(cx);
        if (st == GMUX_ERR_BUSY) {
            /* a graph capture the legacy stream would break: the orders stay
             * for the watcher's next round or this task's next grant */
            SHIM_STAT_ADD(evict_deferred, shim_gate_plan_evict_put_off());
            shim_gate_evicted_deferred(cl, shim_gate_plan_count(DMN_PLAN_EVICT));
            return;
        }
        if (st != GMUX_OK)
            COM_DEBUG(SHIM, "daemon plan: evictions not ordered after the queued work");
        atomic_fetch_add(&gate_bytes_out, gate_move_stored(cx, DMN_PLAN_EVICT, false, 0));
        shim_gate_evicted_issued(cx);
        SHIM_STAT_ADD(evict_plans_early, 1);
    }
    shim_gate_plan_clear(DMN_PLAN_EVICT); /* then a request for EVICTED after them is marked */
    shim_gate_evicted_mark(cl, shim_state.mode != SHIM_MODE_OFF ? cx : NULL);
}

/* Carries out the stored evictions (and marks a request for EVICTED) for a
 * thread without a context of its own to use: the watcher, or a launching
 * thread waiting with none current or one the backend has no room for. They
 * go inside the context the launching threads last waited in (pushed, popped
 * after); where that cannot be entered, a request is answered at once
 * (gate_evict_left). Under gate_mu, without the turn.
 * LOCKING: takes the destroy lock shared (shim_backend_enter), after gate_mu. */
static void gate_evict_elsewhere(dmn_client_t *cl)
{
    if (gate_cx && shim_backend_enter(gate_cx, gate_cx_gen)) {
        gate_evict_now(cl, gate_cx);
        shim_backend_leave();
    } else if (shim_gate_evicted_is_due(cl)) {
        /* no context to move them in: gmuxd is not kept waiting for the next wait */
        shim_gate_evicted_ctx_gone(cl, shim_state.mode != SHIM_MODE_OFF ? gate_evict_left() : 0);
    }
}

/* The stored evictions (and a due request for EVICTED), without the turn,
 * on cx: a launching thread's context while it waits for its turn; NULL for
 * the watcher, or a waiting thread with no context the shim can use (then
 * as gate_evict_elsewhere does; the watcher cannot take gate_mu while a
 * thread waits). Under gate_mu. */
void shim_gate_apply_evictions(dmn_client_t *cl, shim_cuctx_t *cx)
{
    shim_gate_plan_current(cl);
    if ((!shim_gate_plan_count(DMN_PLAN_EVICT) && !shim_gate_evicted_is_due(cl)) ||
        atomic_load(&shim_gate_turn_))
        return;
    if (cx)
        gate_evict_now(cl, cx);
    else
        gate_evict_elsewhere(cl);
}

/* Applies the stored plan of grant (0: none, the wait failed) on the calling
 * thread's context: evictions first, then fills, all on the migration
 * stream, then waits for them. With planned (a GRANT with
 * DMN_GRANT_PLANNED, protocol v8: "opt", "chunk") it then leaves what the daemon
 * evicted and no fill brought back to demand paging: the placement filled
 * what it plans the task to hold, and the policy's prefetch of the rest
 * would move in more than that, so the driver would evict other tasks'
 * memory or the chunks just filled. Until 2026-12-03 it did
 * (test_gate_refill test_unfilled_left_to_paging). Not after a fill given up
 * (marked, shim_policy_lost), a store that overflowed, a wait that failed,
 * nor at a GRANT without the flag. Fills only at
 * the grant they belong to (shim_gate_plan_fill_seq): those of another grant are
 * dropped, and kept without a grant (the wait timed out: theirs may come).
 * With no context the shim can use, the fills are given up (faults only) and
 * the evictions go as during the wait (shim_gate_apply_evictions, called before the
 * turn flag is set): inside the context last waited in, else kept for the
 * watcher once the turn is given back, or the next wait; until 2026-12-02
 * they were dropped (test_gate_evicted_capture
 * test_kept_at_grant_without_context).
 * Under gate_mu. */
static void gate_apply_orders(dmn_client_t *cl, uint64_t grant, bool planned)
{
    bool fills_kept = grant == 0 && shim_gate_plan_count(DMN_PLAN_FILL) > 0;
    if (grant != 0 && grant != shim_gate_plan_fill_seq() && shim_gate_plan_count(DMN_PLAN_FILL)) {
        COM_DEBUG(SHIM, "daemon plan: %u fill orders of grant %llu dropped at grant %llu",
                  shim_gate_plan_count(DMN_PLAN_FILL),
                  (unsigned long long)shim_gate_plan_fill_seq(), (unsigned long long)grant);
        shim_gate_plan_give_up(DMN_PLAN_FILL);
    }
    uint32_t fills = fills_kept ? 0 : shim_gate_plan_count(DMN_PLAN_FILL);
    uint32_t orders = shim_gate_plan_count(DMN_PLAN_EVICT) + fills;
    /* with no orders, the fence is only there for the marks planned leaves
     * to paging (fills ahead and evictions in flight are waited for before
     * those regions count as resident); none marked, nothing to wait for:
     * until 2026-12-03 every flagged grant waited for the migration stream
     * (test_gate_fence test_no_fence_for_nothing) */
    if (orders == 0 &&
        (!planned || shim_state.mode != SHIM_MODE_PROACTIVE || !shim_policy_any_evicted()))
        return;
    shim_cuctx_t *cx = shim_backend_current();
    if (!cx) {
        shim_gate_apply_evictions(cl, NULL); /* what it leaves stays stored */
        if (!fills_kept)
            shim_gate_plan_give_up(DMN_PLAN_FILL); /* faulted in, or prefetched at its use */
    } else if (shim_state.mode != SHIM_MODE_OFF) {
        atomic_fetch_add(&gate_bytes_out, gate_move_stored(cx, DMN_PLAN_EVICT, false, 0));
        shim_gate_evicted_order(cx);
        /* the fills are waited for below, before the launch: the regions they
         * bring back whole need no prefetch of the launch's policy */
        if (!fills_kept)
            atomic_fetch_add(&gate_bytes_in,
                             gate_move_stored(cx, DMN_PLAN_FILL, true, shim_policy_generation()));
        /* the fence also covers the fills ahead: the launch is not
         * ordered after them when planned leaves their regions unclaimed */
        eng_backend_t be = shim_backend_engine(cx);
        if (be.ops->fence(be.ctx, 0) != GMUX_OK) {
            COM_WARN(SHIM, "daemon plan: migration stream failed");
            shim_policy_invalidate(); /* nothing it holds counts as done */
        } else if (planned) {
            shim_policy_evicted_to_paging();
        }
        if (orders)
            SHIM_STAT_ADD(gate_plans, 1);
    }
    if (cx)
        shim_gate_plan_clear(DMN_PLAN_EVICT);
    if (!fills_kept)
        shim_gate_plan_clear(DMN_PLAN_FILL);
}

/* Carries out the stored plan at a grant (gate_apply_orders). After a store
 * overflowed (shim_gate_plan_overflowed, taken at every grant) the grant's
 * flag is ignored, and every region still marked evicted by the daemon is
 * marked lost once its orders are carried out (shim_policy_evicted_lost):
 * the overflow's bytes are not known, and a region it touched that this
 * turn leaves unused would otherwise be left to demand paging at a later
 * flagged grant though gmuxd counts it resident. Until 2026-12-03 it was
 * (test_gate_overflow test_overflow_unused_prefetched_later). A grant that
 * leaves evictions stored (no context to move them in, a capture putting
 * them off) keeps the overflow for the grant after they went: the regions
 * they mark evicted later are those it concerns. Until 2026-12-03 it took
 * it, and the next flagged grant left them to demand paging
 * (test_gate_overflow test_overflow_kept_while_evictions_stored). Under
 * gate_mu. */
void shim_gate_apply_grant(dmn_client_t *cl)
{
    shim_gate_plan_current(cl);
    uint64_t grant = dmn_client_grant_seq(cl);
    bool overflowed = grant != 0 && shim_gate_plan_overflowed();
    gate_apply_orders(cl, grant, (dmn_client_grant_flags(cl) & DMN_GRANT_PLANNED) && !overflowed);
    if (overflowed)
        shim_policy_evicted_lost();
    if (overflowed && shim_gate_plan_count(DMN_PLAN_EVICT))
        shim_gate_plan_overflow_kept();
}

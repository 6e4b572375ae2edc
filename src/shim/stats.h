/*
 * The shim's counters: what it intercepted, tracked, redirected and moved.
 * Written as one JSON object at exit to the file named by GMUX_SHIM_STATS
 * (tests read it; `gmux run` users can too). In that name %p stands for the
 * pid of the writing process and %% for a literal %, so that processes that
 * each start the shim (a parent and the children it forks or execs) write
 * their own files instead of one over the other.
 *
 * Thread-safety: relaxed atomics, safe from any thread.
 */
#ifndef SHIM_STATS_H
#define SHIM_STATS_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* X(field): every counter, listed once (struct fields and JSON keys). */
#define SHIM_STATS_LIST(X)                                                                         \
    X(launches)           /* kernel launches seen (graph launches excluded) */                     \
    X(graph_launches)     /* cuGraphLaunch calls */                                                \
    X(graphs_inspected)   /* graph instantiations walked */                                        \
    X(graph_children)     /* child graphs walked inside them */                                    \
    X(graph_too_deep)     /* child or conditional-body graphs past 8 levels, not walked */         \
    X(graph_conditionals) /* conditional nodes (IF/WHILE/SWITCH) whose bodies were walked */       \
    X(graph_cond_unknown) /* conditional nodes met whose bodies the shim never saw created */      \
    X(pointer_args)       /* decoded values that fell in a tracked region */                       \
    X(prefetches)         /* cuMemPrefetchAsync calls issued by the policy */                      \
    X(prefetch_bytes)     /* bytes those covered */                                                \
    X(prefetch_errors)    /* prefetches the driver refused */                                      \
    X(order_waits)        /* launches made to wait on the migration event */                       \
    X(capture_skips)      /* launches into a capturing stream, left alone */                       \
    X(own_prefetches)     /* program's own prefetch ranges seen (proactive) */                     \
    X(own_evicted)        /* managed regions those moved (in part) off the GPU */                  \
    X(managed_allocs)     /* allocations redirected to managed memory */                           \
    X(pinned_allocs)      /* allocations tracked but not redirectable (pinned) */                  \
    X(pinned_bytes)       /* bytes of those */                                                     \
    X(redirect_failures)  /* managed allocations that failed and fell back */                      \
    X(gate_waits)         /* launches that waited for gmuxd's turn */                              \
    X(gate_plans)         /* evict/fill plans from gmuxd applied */                                \
    X(gate_registrations) /* times the task registered with gmuxd (again after a restart) */       \
    X(evict_plans_early)  /* evict plans applied on arrival, while another task has the turn */    \
    X(evict_deferred)  /* EVICT ranges put off by a graph capture: once each, not at each try */   \
    X(evicted_reports) /* EVICTED sent to gmuxd: a switch's evictions done on the GPU */           \
    X(evicted_put_off) /* EVICTED sent at once, flagged failed: a graph capture put them off */    \
    X(evict_cancelled) /* fill orders that took ranges out of evictions still stored */            \
    X(fill_dropped)    /* fill ranges given up for want of room in the shim's store of fills */    \
    X(fill_dropped_bytes) /* bytes of those: faulted in instead of prefetched */                   \
    X(evicted_ctx_gone)   /* EVICTED sent at once: the evictions' context was destroyed */         \
    X(evicted_unknown)    /* EVICTED sent flagged failed: the query of their event failed */       \
    X(streams_untracked)  /* non-blocking streams not tracked (no memory): evictions not ordered   \
                             after their work */                                                   \
    X(capture_joined)     /* times the migration stream was found inside a program's capture */    \
    X(capture_released)   /* such streams destroyed once the program's capture ended */            \
    X(streams_live)    /* non-blocking streams still tracked at exit (created, not destroyed) */   \
    X(ahead_plans)     /* fill-ahead plans from gmuxd applied while waiting for a turn */          \
    X(ahead_bytes)     /* bytes those prefetched to the device */                                  \
    X(frees)           /* tracked frees and unmaps */                                              \
    X(ipc_refused)     /* cuIpcGetMemHandle failures on redirected memory (--no-managed) */        \
    X(um_faults)       /* GPU page faults CUPTI reported (cupti.c; 0 without CUPTI) */             \
    X(um_bytes_htod)   /* unified-memory bytes moved host to device (CUPTI) */                     \
    X(um_bytes_dtoh)   /* unified-memory bytes moved device to host (CUPTI) */                     \
    X(trace_evictions) /* regions moved to the host before a probed launch (recording) */          \
    X(predicted_launches) /* launches whose prefetch the predictor chose (predict.c) */            \
    X(template_launches)  /* of those, launches a template narrowed below whole regions */         \
    X(ws_coarsened) /* working sets announced to gmuxd with gaps covered (over 1024 ranges) */     \
    X(ws_builds)    /* working sets rebuilt from the region table: at a wait after a change */     \
    /* proactive launches that met an ordering of evictions in progress (shim_backend_take):       \
     * no prefetch, no wait; docs/shim.md, "Launches without a prefetch or a turn" */              \
    X(launch_no_prefetch_ordering)                                                                 \
    /* proactive launches in a context the shim has no state for (past 64 live contexts, or        \
     * its migration stream not made): no prefetch */                                              \
    X(launch_no_prefetch_no_entry)                                                                 \
    /* gated launches that went on without a turn: gmuxd's wait timed out or failed (warned),      \
     * or the turn was taken back 1000 times over while the launch waited (gate.c) */              \
    X(gate_no_turn)

#define SHIM_STATS_FIELD_(name) _Atomic uint64_t name;
typedef struct shim_stats {
    SHIM_STATS_LIST(SHIM_STATS_FIELD_)
} shim_stats_t;
#undef SHIM_STATS_FIELD_

extern shim_stats_t shim_stats;

#define SHIM_STAT_ADD(name, n)                                                                     \
    atomic_fetch_add_explicit(&shim_stats.name, (n), memory_order_relaxed)

/* Writes the counters as one JSON line to path; 0, or an errno value
 * (ELOOP, EISDIR, what the write said), with dir the folder at fault when
 * path is a link whose target's folder is missing or not writable (the
 * warning names it; the user never typed it), else "". Where, as gmux's own output files
 * (src/common/out_target.h): a regular file at path, or nothing, is replaced
 * only once the line is written whole: it goes to a sibling PATH.PID.part~
 * renamed over it (the mode of a file replaced kept), removed when a write
 * fails, so that an earlier file stays as it was. A symbolic link stays: the
 * file it names is replaced so (a dangling link's target created); a loop of
 * links or a folder writes nothing. Anything else (a FIFO, /dev/stderr) is
 * written in place. */
int shim_stats_write(const char *path, const char *mode_name, char dir[PATH_MAX]);

/* The file name of pattern (GMUX_SHIM_STATS) for process pid: %p replaced by
 * the pid, %% by %. 0, or -1 when it does not fit in len bytes. */
int shim_stats_path(const char *pattern, long pid, char *out, size_t len);

#endif /* SHIM_STATS_H */

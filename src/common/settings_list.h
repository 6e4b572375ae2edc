/*
 * Every GMUX_* setting of the runtime, declared once:
 *   X(ID, TYPE, SCOPES, "default", "help")
 * The environment variable is GMUX_<ID>. TYPE is BOOL, INT, SIZE, DOUBLE or
 * STRING; SCOPES, the COM_SCOPE_* bits of the parts of gmux that read it
 * (see settings.h). `gmux --help-settings` prints this table. Each help
 * begins with a header in lowercase words and a colon, the part or topic it
 * belongs to ("shim: ", "gmuxd: ", "net: ", "recording: "), then the text
 * (tests/docs/check_settings_help.sh).
 * Keep it sorted by module, then name.
 */
#ifndef COM_SETTINGS_LIST_H
#define COM_SETTINGS_LIST_H

#define COM_SETTINGS_LIST(X)                                                                       \
    X(LOG, STRING, COM_SCOPE_ANY, "warn",                                                          \
      "logging: LEVEL[,SUBSYSTEM...] or SUBSYSTEM=LEVEL, e.g. debug,net "                          \
      "(levels off error warn info debug trace)")                                                  \
    X(LOG_CLOCK, STRING, COM_SCOPE_ANY, "elapsed",                                                 \
      "logging: time on log lines, elapsed (seconds since the process's first line) or utc "       \
      "(wall clock, e.g. 2026-12-02T04:31:07.123Z), to merge the logs of gmuxd, programs and "     \
      "tests")                                                                                     \
    X(BUDGET, SIZE, COM_SCOPE_SHIM, "0",                                                           \
      "shim: device memory budget of the task (0: none); cuMemGetInfo under the shim reports "     \
      "this view")                                                                                 \
    X(POLICY, STRING, COM_SCOPE_SHIM, "proactive",                                                 \
      "shim policy: off (pass-through), demand (managed memory, no prefetch) or proactive "        \
      "(prefetch each launch's predicted ranges)")                                                 \
    X(SHIM_MANAGED, BOOL, COM_SCOPE_SHIM, "1",                                                     \
      "shim: redirect plain allocations (cuMemAlloc, cuMemAllocPitch) to managed memory (demand, " \
      "proactive)")                                                                                \
    X(SHIM_STATS, STRING, COM_SCOPE_SHIM, "",                                                      \
      "shim: file it writes its counters to (JSON) at exit (%p in it: the pid)")                   \
    X(SHIM_CUPTI, BOOL, COM_SCOPE_SHIM, "0",                                                       \
      "shim: load CUPTI (dlopen) and count unified-memory faults and bytes moved into its stats")  \
    X(SHIM_TRACE, STRING, COM_SCOPE_SHIM, "",                                                      \
      "recording mode: file the shim writes the program's allocations and launches to, in the "    \
      "simulator's trace format (gmux trace -- CMD sets it)")                                      \
    X(SHIM_TRACE_FORMAT, STRING, COM_SCOPE_SHIM, "binary",                                         \
      "recording: form of the GMUX_SHIM_TRACE file, text or binary")                               \
    X(SHIM_TRACE_PROBE, BOOL, COM_SCOPE_SHIM, "0",                                                 \
      "recording mode: synchronize after each launch and record the ranges it touched "            \
      "(gmux profile -- CMD sets it)")                                                             \
    X(SHIM_TRACE_COLD, BOOL, COM_SCOPE_SHIM, "1",                                                  \
      "recording with probes: before each launch move the managed regions its pointer "            \
      "arguments point into back to the host, so it faults on everything it touches there")        \
    X(SHIM_TRACE_TIMES, STRING, COM_SCOPE_SHIM, "",                                                \
      "recording: a trace of the same program recorded without faults (gmux trace's first "        \
      "pass); its launch times replace this recording's, launch by launch")                        \
    X(TEMPLATES, STRING, COM_SCOPE_SHIM, "",                                                       \
      "shim: template database (gmux profile -o FILE -- CMD) libgmux.so predicts launches "        \
      "with while the program's managed memory exceeds the device (proactive)")                    \
    X(DAEMON_AHEAD, BOOL, COM_SCOPE_DAEMON, "1",                                                   \
      "gmuxd: at a switch, also fill the task expected next into the memory left free "            \
      "(opt and chunk placements, sliced mode, GMUX_DAEMON_CAPACITY set); 0: fill at its turn")    \
    X(DAEMON_CAPACITY, SIZE, COM_SCOPE_DAEMON, "0",                                                \
      "gmuxd: device bytes the opt and chunk placements may fill (0: unlimited, no evictions) "    \
      "and shared mode counts against (0: the device memory tasks report)")                        \
    X(DAEMON_EVICT_WAIT_MS, INT, COM_SCOPE_DAEMON, "500",                                          \
      "gmuxd: at a switch that evicts other tasks' memory, hold the grant and the fill ahead "     \
      "until they report the evictions done, at most this long (0: never wait)")                   \
    X(DAEMON_GRACE_MS, INT, COM_SCOPE_DAEMON, "2000",                                              \
      "gmuxd: how long a revoked task may keep the GPU before its turn is taken away")             \
    X(DAEMON_GROUP, STRING, COM_SCOPE_DAEMON, "",                                                  \
      "gmuxd: a group whose members may also connect (socket mode 0660); empty: owner only")       \
    X(DAEMON_PLACEMENT, STRING, COM_SCOPE_DAEMON, "none",                                          \
      "gmuxd: placement at switches: none, swap (outgoing out, incoming in), opt (Belady per "     \
      "slice) or chunk (Belady per chunk)")                                                        \
    X(DAEMON_IDLE_EXIT_S, INT, COM_SCOPE_DAEMON, "-1",                                             \
      "gmuxd: exit after this many seconds without a connection (0: never; -1, the default: "      \
      "never for gmux daemon, 60 for a gmuxd that gmux run starts)")                               \
    X(DAEMON_MSG_MS, INT, COM_SCOPE_DAEMON, "5000",                                                \
      "gmuxd: how long a message may take to arrive whole once its first byte came; a peer "       \
      "stalled past it is dropped and its task reclaimed (1 to 3599999)")                          \
    X(DAEMON_QUANTUM_MS, INT, COM_SCOPE_DAEMON, "20",                                              \
      "gmuxd: time slice of a task while others wait")                                             \
    X(DAEMON_SHARE, BOOL, COM_SCOPE_DAEMON, "1",                                                   \
      "gmuxd: when the tasks' footprints fit on the device, let them all launch at once "          \
      "(no time slices); 0: always time slice")                                                    \
    X(DAEMON_SHARE_HEADROOM, INT, COM_SCOPE_DAEMON, "10",                                          \
      "gmuxd: percent of the device kept free in shared mode (GMUX_DAEMON_CAPACITY, else the "     \
      "device memory tasks report); shared again 5 points below")                                  \
    X(DAEMON_TURN_TIMEOUT_MS, INT, COM_SCOPE_SHIM, "10000",                                        \
      "client: longest wait for the turn before launching anyway (local mode)")                    \
    X(GATE, BOOL, COM_SCOPE_SHIM, "1",                                                             \
      "shim: join gmuxd (launch gating, plans, stats) when one is reachable; 0: never")            \
    X(GATE_IDLE_MS, INT, COM_SCOPE_SHIM, "5",                                                      \
      "shim: give the turn back after this long without a launch")                                 \
    X(GATE_REPORT_MS, INT, COM_SCOPE_SHIM, "200",                                                  \
      "shim: how often it sends its counters to gmuxd")                                            \
    X(TASK_CLASS, STRING, COM_SCOPE_SHIM, "batch",                                                 \
      "shim: the task's class for gmuxd: batch or latency")                                        \
    X(TASK_PRIORITY, INT, COM_SCOPE_SHIM, "0", "shim: the task's priority for gmuxd, -20..20")     \
    X(TASK_NAME, STRING, COM_SCOPE_SHIM, "",                                                       \
      "shim: the task's name in gmux top; empty: the program's name")                              \
    X(SOCKET, STRING, COM_SCOPE_SHIM | COM_SCOPE_DAEMON | COM_SCOPE_CLIENT, "",                    \
      "gmuxd: its socket; empty: $XDG_RUNTIME_DIR/gmux/gmuxd.sock "                                \
      "(else /tmp/gmux-UID/gmuxd.sock)")                                                           \
    X(NET_INLINE_PROGRESS, BOOL, COM_SCOPE_NET, "1",                                               \
      "net: a CPU thread posts its own operations when no one else is progressing")                \
    X(NET_COALESCE, BOOL, COM_SCOPE_NET, "1",                                                      \
      "net: the proxy merges consecutive small contiguous puts and a following signal")            \
    X(NET_DIRECT, BOOL, COM_SCOPE_NET, "1",                                                        \
      "net: a CPU thread executes an operation at once when its ring is empty (no ring trip)")     \
    X(NET_HMEM, STRING, COM_SCOPE_NET, "auto",                                                     \
      "net: device memory the provider reaches (FI_HMEM) is registered directly, else staged: "    \
      "auto (FI_HMEM where offered with remote atomics), rma (also without remote atomics), off")  \
    X(NET_SHM_CUDA_DIRECT, BOOL, COM_SCOPE_NET, "0",                                               \
      "net: on shm, register CUDA memory directly; 0 stages it (libfabric 1.17's shm copies it "   \
      "with cudaMemcpy and cudaDeviceSynchronize inside progress: a kernel spinning in a wait "    \
      "stalls it until the timeout)")                                                              \
    X(NET_SHM_GUARD, BOOL, COM_SCOPE_NET, "1",                                                     \
      "net: on shm (libfabric 1.17), free a region lock left held by a rank killed inside "        \
      "libfabric; 0: off, the launcher's --grace is the backstop")                                 \
    X(NET_PROVIDER, STRING, COM_SCOPE_NET, "auto",                                                 \
      "net transport: auto (shm on one host; across hosts cxi, efa, verbs;ofi_rxm or tcp, "        \
      "the first present), shm, tcp (tcp;ofi_rxm), verbs;ofi_rxm, efa or cxi")                     \
    X(NET_DEV_CLAIM, STRING, COM_SCOPE_NET, "cas",                                                 \
      "net: device API, how kernels claim ring slots: cas, or faa (experimental)")                 \
    X(NET_DEV_HOST_PROGRESS, BOOL, COM_SCOPE_NET, "1",                                             \
      "net: device API on CPU threads, the calling thread posts and receives itself; 0: the "      \
      "handle's service thread does, as for kernels")                                              \
    X(NET_DEV_BACKOFF_NS, INT, COM_SCOPE_NET, "128",                                               \
      "net: device API, first backoff of a ring claim that lost to other producers, ns (0: none)") \
    X(NET_PROXY_IDLE_US, INT, COM_SCOPE_NET, "200",                                                \
      "net: longest sleep of an idle proxy thread, microseconds")                                  \
    X(NET_RING_SLOTS, INT, COM_SCOPE_NET, "256",                                                   \
      "net: descriptors per (context, peer) ring, a power of two")                                 \
    X(NET_TIMEOUT, DOUBLE, COM_SCOPE_NET, "30",                                                    \
      "net: seconds before an unanswered peer or a wait without timeout fails")                    \
    X(SHMEM_HEAP, SIZE, COM_SCOPE_SHMEM, "64M", "shmem: bytes of the symmetric heap of every PE")  \
    X(SHMEM_WAIT_TIMEOUT, DOUBLE, COM_SCOPE_SHMEM, "600",                                          \
      "shmem: seconds a wait_until/signal_wait may block before the job fails (0: forever)")

#endif /* COM_SETTINGS_LIST_H */

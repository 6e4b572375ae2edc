/*
 * Every GMUX_* setting of the runtime, declared once:
 *   X(ID, TYPE, "default", "help")
 * The environment variable is GMUX_<ID>. TYPE is BOOL, INT, SIZE, DOUBLE or
 * STRING (see settings.h). `gmux --help-settings` prints this table.
 * Keep it sorted by module, then name.
 */
#ifndef COM_SETTINGS_LIST_H
#define COM_SETTINGS_LIST_H

#define COM_SETTINGS_LIST(X)                                                                       \
    X(LOG, STRING, "warn",                                                                         \
      "Logging: LEVEL[,SUBSYSTEM...] or SUBSYSTEM=LEVEL, e.g. debug,net "                          \
      "(levels off error warn info debug trace)")                                                  \
    X(BUDGET, SIZE, "0",                                                                           \
      "Device memory budget of the task (0: none); cuMemGetInfo under the shim reports this view") \
    X(POLICY, STRING, "proactive",                                                                 \
      "Shim policy: off (pass-through), demand (managed memory, no prefetch) or proactive "        \
      "(prefetch each launch's predicted ranges)")                                                 \
    X(SHIM_MANAGED, BOOL, "1",                                                                     \
      "Redirect plain allocations (cuMemAlloc, cuMemAllocPitch) to managed memory (demand, "       \
      "proactive)")                                                                                \
    X(SHIM_STATS, STRING, "", "File the shim writes its counters to (JSON) at exit")

#endif /* COM_SETTINGS_LIST_H */

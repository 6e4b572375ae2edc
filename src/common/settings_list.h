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
    X(NET_INLINE_PROGRESS, BOOL, "1",                                                              \
      "net: a CPU thread posts its own operations when no one else is progressing")                \
    X(NET_PROVIDER, STRING, "auto",                                                                \
      "net transport: auto (shm on one host; across hosts cxi, efa, verbs;ofi_rxm or tcp, "        \
      "the first present), shm, tcp (tcp;ofi_rxm), verbs;ofi_rxm, efa or cxi")                     \
    X(NET_PROXY_IDLE_US, INT, "200", "net: longest sleep of an idle proxy thread, microseconds")   \
    X(NET_RING_SLOTS, INT, "256", "net: descriptors per (context, peer) ring, a power of two")     \
    X(NET_TIMEOUT, DOUBLE, "30",                                                                   \
      "net: seconds before an unanswered peer or a wait without timeout fails")

#endif /* COM_SETTINGS_LIST_H */

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
      "(levels off error warn info debug trace)")

#endif /* COM_SETTINGS_LIST_H */

/*
 * Symbol visibility. Libraries build with -fvisibility=hidden; only functions
 * marked GMUX_API are exported. libgmux.so lives inside other people's
 * processes, so exporting anything by accident is a bug.
 */
#ifndef COM_EXPORT_H
#define COM_EXPORT_H

#define GMUX_API __attribute__((visibility("default")))

#endif /* COM_EXPORT_H */

/*
 * com_procmark: a mark that every copy of src/common in one process sees.
 *
 * Each shared library of gmux (libgmux.so, libgmux-net.so, libgmux-shmem.so)
 * links its own copy of src/common, so a static flag is one per library,
 * not one per process: a program using two of them said a malformed
 * GMUX_LOG twice. The mark is process state that no copy owns: a one-page
 * PROT_NONE mapping of a memfd whose name carries a hash of the key,
 * looked up in /proc/self/maps. It is never touched, costs one mapping,
 * goes with the process image at exec (a forked child keeps it, as it
 * keeps what its parent said), and changes neither the environment nor
 * the exported symbols (libgmux.so exports only its hooks).
 *
 * Meant for rare paths (it reads /proc/self/maps): telling a malformed
 * setting once. Where /proc or memfd_create is missing, nothing is marked
 * and every copy tells, as before.
 *
 * Thread-safety: any thread; two threads marking the same key at the same
 * instant may both get false (both then tell: the harmless side).
 */
#ifndef COM_PROCMARK_H
#define COM_PROCMARK_H

#include <stdbool.h>

/* Marks key in this process; whether it was marked already, by this or
 * any other copy of src/common. */
bool com_procmark_test_and_set(const char *key);

/* Whether key is marked in this process (nothing marked). */
bool com_procmark_test(const char *key);

#endif /* COM_PROCMARK_H */

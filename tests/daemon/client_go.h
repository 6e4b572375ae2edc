/*
 * The go file of the daemon's test clients (gmux_test_client,
 * gmux_trace_client): with GMUX_TEST_CLIENT_GO=FILE in its environment, a
 * client registers and then waits for FILE before its first kernel, so that
 * a test starts clients on a state of the daemon (all registered, one
 * running: drig_wait_for_go, drig_go) rather than on how long a process
 * takes to start.
 * A wait for a file (the go file, gmux_test_client's hold file) gives up
 * after GMUX_TEST_CLIENT_WAIT_S seconds (default 20): a test whose clients
 * must stay for all of it, however slow the machine, sets it to its own
 * ctest TIMEOUT (drig_fini kills them at its end).
 */
#ifndef CLIENT_GO_H
#define CLIENT_GO_H

#include "daemon/client.h"

/* Waits until the go file exists (at once without GMUX_TEST_CLIENT_GO),
 * polling c meanwhile so that the daemon is answered. Returns 0, or -1 with
 * a message naming `name` when it has not come within
 * GMUX_TEST_CLIENT_WAIT_S seconds (1 to 86400; else 20). */
int client_go_wait(dmn_client_t *c, const char *name);

/* The same wait for the file named by the environment variable `var` (at
 * once when it is not set). */
int client_file_wait(dmn_client_t *c, const char *name, const char *var);

#endif /* CLIENT_GO_H */

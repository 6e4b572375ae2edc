/*
 * The allocation seam of the client library (client.c): every allocation it
 * makes first asks dmn_client_alloc_fails(). There is one, the client itself
 * in dmn_client_open (its buffers are fixed, so no send, receive or PENDING
 * allocates); a new allocation must ask too. Built with DMN_CLIENT_TEST_ALLOC
 * (only tests/daemon/test_client_alloc.c, which compiles client.c itself),
 * the test defines it and fails the allocations it chooses, to check that no
 * order from the daemon and no message to it is lost for want of memory;
 * every other build has no seam.
 */
#ifndef DMN_CLIENT_ALLOC_H
#define DMN_CLIENT_ALLOC_H

#include <stdbool.h>

#ifdef DMN_CLIENT_TEST_ALLOC
bool dmn_client_alloc_fails(void);
#else
#define dmn_client_alloc_fails() false
#endif

#endif /* DMN_CLIENT_ALLOC_H */

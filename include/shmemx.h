/*
 * gmux extensions to OpenSHMEM (none yet beyond shmem.h); present because
 * programs written for other implementations include it.
 */
#ifndef GMUX_SHMEMX_H
#define GMUX_SHMEMX_H

#include <shmem.h>

#endif /* GMUX_SHMEMX_H */

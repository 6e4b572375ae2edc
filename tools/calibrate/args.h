/* gmux-calibrate's command line (args.c): read, checked and answered
 * (--help, --version, a usage error) before any CUDA call, so that it works
 * alike on a machine without a GPU. */
#ifndef GMUX_CALIBRATE_ARGS_H
#define GMUX_CALIBRATE_ARGS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The buffer of each measurement, in MiB: at least one 2 MiB stride of the
 * fault-latency test, at most 1 TiB (pinned host memory of that size). */
#define CAL_SIZE_MIB_DEFAULT 2048
#define CAL_SIZE_MIB_MIN     2
#define CAL_SIZE_MIB_MAX     (1024 * 1024)

typedef struct cal_args {
    size_t size_mib;         /* --size */
    const char *chain_trace; /* --chain-trace FILE, or NULL */
} cal_args_t;

/* Reads argv into a. Returns -1 when the measurements are to run; else the
 * exit status, once its output is written: 0 after --help or --version,
 * COM_CLI_EXIT_USAGE (2) after a usage error on stderr. */
int cal_args_read(int argc, char **argv, cal_args_t *a);

#ifdef __cplusplus
}
#endif

#endif /* GMUX_CALIBRATE_ARGS_H */

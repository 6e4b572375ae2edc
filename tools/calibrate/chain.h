/* The validation chain of gmux-calibrate (chain.cu). */
#ifndef GMUX_CALIBRATE_CHAIN_H
#define GMUX_CALIBRATE_CHAIN_H

#include <stdio.h>

#define CHAIN_MAX_LAUNCHES 16

typedef struct chain_result {
    int launches;
    unsigned long long bytes;                         /* managed bytes of the buffers */
    unsigned long long launch_ns[CHAIN_MAX_LAUNCHES]; /* warm compute time of each kernel */
    float warm_ms, demand_ms, proactive_ms;
} chain_result_t;

/* Runs the chain on device 0 with a grid of sms*8 blocks; writes its trace
 * into trace unless NULL (the caller opened it, and checks and closes it).
 * Returns 0, or -1 after a message on stderr (a CUDA call or launch failed). */
int chain_run(int sms, FILE *trace, chain_result_t *r);

#endif

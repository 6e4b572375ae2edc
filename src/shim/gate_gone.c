/* Memory that went with a destroyed context, for the gate; see gate_gone.h. */
#include "shim/gate_gone.h"

#include <pthread.h>
#include <string.h>

#include "shim/gate_ranges.h"

static pthread_mutex_t gone_mu = PTHREAD_MUTEX_INITIALIZER;
static dmn_range_t gone[SHIM_GATE_GONE_CAP]; /* coalesced; under gone_mu */
static uint32_t gone_n;
static bool gone_new; /* noted since the last shim_gate_gone_take */

void shim_gate_gone_note(uint64_t base, uint64_t len)
{
    if (len == 0)
        return;
    pthread_mutex_lock(&gone_mu);
    /* a fill's store gives a range up when full, never joins: see gate_gone.h */
    (void)shim_gate_ranges_add_fill(gone, &gone_n, SHIM_GATE_GONE_CAP,
                                    (dmn_range_t){.base = base, .len = len});
    gone_new = true;
    pthread_mutex_unlock(&gone_mu);
}

bool shim_gate_gone_take(dmn_range_t *out, uint32_t *n)
{
    pthread_mutex_lock(&gone_mu);
    bool was = gone_new;
    if (was) {
        memcpy(out, gone, gone_n * sizeof(*out));
        *n = gone_n;
        gone_new = false;
    }
    pthread_mutex_unlock(&gone_mu);
    return was;
}

void shim_gate_gone_announced(void)
{
    pthread_mutex_lock(&gone_mu);
    gone_n = 0;
    gone_new = false;
    pthread_mutex_unlock(&gone_mu);
}

/* Simulated device: copy engines on a virtual clock. */
#include "sim/device.h"

#include <math.h>
#include <string.h>

uint64_t sim_ns_ceil(double ns)
{
    if (!(ns < 18446744073709551616.0)) /* 2^64 */
        return UINT64_MAX;
    return ns > 0 ? (uint64_t)ceil(ns) : 0;
}

void sim_device_init(sim_device_t *d, const sim_params_t *p)
{
    memset(d, 0, sizeof(*d));
    d->params = *p;
}

uint64_t sim_device_xfer_ns(const sim_device_t *d, eng_dir_t dir, uint64_t len)
{
    double bps = dir == ENG_DIR_H2D ? d->params.h2d_bps : d->params.d2h_bps;
    return sim_ns_add((uint64_t)d->params.xfer_call_ns, sim_ns_ceil((double)len * 1e9 / bps));
}

static gmux_status_t xfer(sim_device_t *d, eng_dir_t dir, uint64_t len, bool call,
                          eng_ticket_t *t_p)
{
    uint64_t start = d->free_ns[dir] > d->wait_ns[dir] ? d->free_ns[dir] : d->wait_ns[dir];
    double bps = dir == ENG_DIR_H2D ? d->params.h2d_bps : d->params.d2h_bps;
    uint64_t ns = call ? sim_device_xfer_ns(d, dir, len) : sim_ns_ceil((double)len * 1e9 / bps);
    uint64_t end = sim_ns_add(start, ns);
    d->free_ns[dir] = end;
    d->busy_ns[dir] = sim_ns_add(d->busy_ns[dir], end - start);
    d->bytes[dir] += len;
    d->calls[dir] += call;
    *t_p = end;
    return GMUX_OK;
}

static gmux_status_t dev_prefetch(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                                  eng_ticket_t *t_p)
{
    (void)task;
    (void)addr;
    return xfer(ctx, ENG_DIR_H2D, len, true, t_p);
}

static gmux_status_t dev_evict(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                               eng_ticket_t *t_p)
{
    (void)task;
    (void)addr;
    return xfer(ctx, ENG_DIR_D2H, len, true, t_p);
}

static gmux_status_t dev_fence(void *ctx, eng_ticket_t t)
{
    sim_device_t *d = ctx;
    if (t > d->now_ns)
        d->now_ns = t;
    return GMUX_OK;
}

static uint64_t dev_now(void *ctx)
{
    return ((sim_device_t *)ctx)->now_ns;
}

static gmux_status_t dev_wait(void *ctx, eng_dir_t dir, eng_ticket_t t)
{
    sim_device_t *d = ctx;
    if (dir != ENG_DIR_H2D && dir != ENG_DIR_D2H)
        return GMUX_ERR_INVALID;
    if (t > d->wait_ns[dir])
        d->wait_ns[dir] = t;
    return GMUX_OK;
}

/* Cleaning costs what a write-back costs; the device copy stays. */
static gmux_status_t dev_clean(void *ctx, uint32_t task, uint64_t addr, uint64_t len,
                               eng_ticket_t *t_p)
{
    (void)task;
    (void)addr;
    return xfer(ctx, ENG_DIR_D2H, len, true, t_p);
}

/* Idle at the compute engine's clock: the engine asks between launches. */
static bool dev_idle(void *ctx, eng_dir_t dir)
{
    sim_device_t *d = ctx;
    return (dir == ENG_DIR_H2D || dir == ENG_DIR_D2H) && d->free_ns[dir] <= d->now_ns;
}

/* Part of a range moves (chunks on the device in part): only those bytes cost.
 * A fault's transfers cost no call: the kernel faults, the driver moves the
 * data, and its servicing is charged at the demand-paging rate (sim/run.c). */
static gmux_status_t dev_partial(void *ctx, eng_xfer_kind_t kind, uint32_t task, uint64_t addr,
                                 uint64_t len, uint64_t bytes, eng_ticket_t *t_p)
{
    (void)task;
    (void)addr;
    (void)len;
    bool in = kind == ENG_XFER_PREFETCH || kind == ENG_XFER_FAULT_IN;
    bool fault = kind == ENG_XFER_FAULT_IN || kind == ENG_XFER_FAULT_OUT;
    return xfer(ctx, in ? ENG_DIR_H2D : ENG_DIR_D2H, bytes, !fault, t_p);
}

static const eng_backend_ops_t dev_ops = {
    .prefetch = dev_prefetch,
    .evict = dev_evict,
    .fence = dev_fence,
    .now = dev_now,
    .wait = dev_wait,
    .clean = dev_clean,
    .idle = dev_idle,
    .partial = dev_partial,
};

eng_backend_t sim_device_backend(sim_device_t *d)
{
    return (eng_backend_t){&dev_ops, d};
}

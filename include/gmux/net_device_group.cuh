/*
 * gmux net device API: the warp and block forms of the thread forms of
 * net_device.cuh (which includes this file at its end; include that one).
 * `gmux_dev_X_warp`: all 32 lanes call, lane 0 issues after __syncwarp and
 * every lane gets its status; `gmux_dev_X_block`: the whole block calls,
 * thread 0 issues between __syncthreads (docs/net-device.md).
 */
#ifndef GMUX_NET_DEVICE_GROUP_CUH
#define GMUX_NET_DEVICE_GROUP_CUH

#include <gmux/net_device.cuh>

#ifdef __CUDACC__

static __device__ inline unsigned gmux_dev_tid_(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* One lane issues f(); the warp synchronises and shares the status. */
template <class F> static __device__ inline gmux_status_t gmux_dev_warp_do_(F f)
{
    __syncwarp();
    int st = 0;
    if ((gmux_dev_tid_() & 31u) == 0)
        st = (int)f();
    st = __shfl_sync(0xffffffffu, st, 0);
    __syncwarp();
    return (gmux_status_t)st;
}

/* One thread issues f(); the block synchronises and shares the status. */
template <class F> static __device__ inline gmux_status_t gmux_dev_block_do_(F f)
{
    __shared__ int gmux_dev_block_status_;
    __syncthreads();
    if (gmux_dev_tid_() == 0)
        gmux_dev_block_status_ = (int)f();
    __syncthreads();
    int st = gmux_dev_block_status_;
    __syncthreads();
    return (gmux_status_t)st;
}

#define GMUX_DEV_GROUP_FORMS_(name, params, args)                                                  \
    static __device__ inline gmux_status_t name##_warp params                                      \
    {                                                                                              \
        return gmux_dev_warp_do_([&]() { return name args; });                                     \
    }                                                                                              \
    static __device__ inline gmux_status_t name##_block params                                     \
    {                                                                                              \
        return gmux_dev_block_do_([&]() { return name args; });                                    \
    }

GMUX_DEV_GROUP_FORMS_(gmux_dev_put,
                      (const gmux_dev_handle_t &h, uint32_t ctx, int peer, gmux_window_t win,
                       uint64_t offset, const void *src_host, uint64_t size,
                       const gmux_op_opts_t *opts),
                      (h, ctx, peer, win, offset, src_host, size, opts))
GMUX_DEV_GROUP_FORMS_(gmux_dev_put_value,
                      (const gmux_dev_handle_t &h, uint32_t ctx, int peer, gmux_window_t win,
                       uint64_t offset, uint64_t value, unsigned bytes, const gmux_op_opts_t *opts),
                      (h, ctx, peer, win, offset, value, bytes, opts))
GMUX_DEV_GROUP_FORMS_(gmux_dev_signal,
                      (const gmux_dev_handle_t &h, uint32_t ctx, int peer, uint32_t signal_id,
                       gmux_signal_op_t op, uint64_t value),
                      (h, ctx, peer, signal_id, op, value))
GMUX_DEV_GROUP_FORMS_(gmux_dev_flush, (const gmux_dev_handle_t &h, uint32_t ctx), (h, ctx))
GMUX_DEV_GROUP_FORMS_(gmux_dev_quiet, (const gmux_dev_handle_t &h, uint32_t ctx), (h, ctx))
GMUX_DEV_GROUP_FORMS_(gmux_dev_signal_wait,
                      (const gmux_dev_handle_t &h, uint32_t signal_id, uint64_t value,
                       uint64_t timeout_ns, uint64_t *value_p),
                      (h, signal_id, value, timeout_ns, value_p))
GMUX_DEV_GROUP_FORMS_(gmux_dev_counter_wait,
                      (const gmux_dev_handle_t &h, uint32_t counter_id, uint64_t value,
                       uint64_t timeout_ns, uint64_t *value_p),
                      (h, counter_id, value, timeout_ns, value_p))

#undef GMUX_DEV_GROUP_FORMS_
#endif /* __CUDACC__ */

#endif /* GMUX_NET_DEVICE_GROUP_CUH */

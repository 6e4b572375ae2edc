/*
 * Launch hooks: decode the launch's arguments into candidate pointers, run
 * the policy (which may prefetch and order the stream), then launch. Nothing
 * here allocates: candidates live on the stack, layouts in params.c's
 * static cache.
 */
#include "shim/gate.h"
#include "shim/params.h"
#include "shim/policy.h"
#include "shim/predict.h"
#include "shim/record.h"
#include "shim/shim.h"
#include "shim/stats.h"

static inline void launch_prepare(CUfunction f, const unsigned grid[3], const unsigned block[3],
                                  void **params, void **extra, CUstream s, bool per_thread)
{
    SHIM_STAT_ADD(launches, 1);
    shim_record_launch(f, grid, block, params, extra);
    if (shim_state.mode != SHIM_MODE_PROACTIVE)
        return;
    uint64_t vals[SHIM_MAX_CANDIDATES];
    shim_launch_info_t l = {.stream = s,
                            .per_thread = per_thread,
                            .func = f,
                            .grid = {grid[0], grid[1], grid[2]},
                            .block = {block[0], block[1], block[2]},
                            .vals = vals,
                            .params = params,
                            .extra = extra};
    l.nvals = shim_params_decode(f, params, extra, vals, SHIM_MAX_CANDIDATES);
    shim_policy_before_launch(&l);
}

CUresult shim_hook_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned shmem, CUstream s,
                                  void **params, void **extra)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    launch_prepare(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, params, extra, s,
                   false);
    CUresult r = SHIM_CALL(cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    shim_gate_exit(gated);
    return r;
}

CUresult shim_hook_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                       CUstream s, void **params, void **extra)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    launch_prepare(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, params, extra, s, true);
    CUresult r = SHIM_CALL(cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    shim_gate_exit(gated);
    return r;
}

CUresult shim_hook_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                                    void **extra)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    if (config)
        launch_prepare(f, (unsigned[3]){config->gridDimX, config->gridDimY, config->gridDimZ},
                       (unsigned[3]){config->blockDimX, config->blockDimY, config->blockDimZ},
                       params, extra, config->hStream, false);
    CUresult r = SHIM_CALL(cuLaunchKernelEx, config, f, params, extra);
    shim_gate_exit(gated);
    return r;
}

CUresult shim_hook_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
                                         void **extra)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    if (config)
        launch_prepare(f, (unsigned[3]){config->gridDimX, config->gridDimY, config->gridDimZ},
                       (unsigned[3]){config->blockDimX, config->blockDimY, config->blockDimZ},
                       params, extra, config->hStream, true);
    CUresult r = SHIM_CALL(cuLaunchKernelEx_ptsz, config, f, params, extra);
    shim_gate_exit(gated);
    return r;
}

CUresult shim_hook_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                             CUstream s, void **params)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    launch_prepare(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, params, NULL, s, false);
    CUresult r = SHIM_CALL(cuLaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, shmem, s, params);
    shim_gate_exit(gated);
    return r;
}

CUresult shim_hook_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                  unsigned gz, unsigned bx, unsigned by,
                                                  unsigned bz, unsigned shmem, CUstream s,
                                                  void **params)
{
    shim_ensure_init();
    bool gated = shim_gate_enter();
    launch_prepare(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, params, NULL, s, true);
    CUresult r =
        SHIM_CALL(cuLaunchCooperativeKernel_ptsz, f, gx, gy, gz, bx, by, bz, shmem, s, params);
    shim_gate_exit(gated);
    return r;
}

/* --- unloads: the kernels' layouts go with their modules ------------------- */

/* A module or library the driver unloaded takes along what the shim knew of
 * its functions: layouts, recorded names, template bindings. The shim does
 * not see which functions a module held, so it forgets all of them; the
 * next launch of each looks it up again. */
static CUresult unloaded(CUresult r)
{
    if (r == CUDA_SUCCESS) {
        shim_params_forget();
        shim_record_forget_functions();
        shim_predict_forget_functions();
    }
    return r;
}

CUresult shim_hook_cuModuleUnload(CUmodule m)
{
    shim_ensure_init();
    return unloaded(SHIM_CALL(cuModuleUnload, m));
}

CUresult shim_hook_cuLibraryUnload(CUlibrary l)
{
    shim_ensure_init();
    return unloaded(SHIM_CALL(cuLibraryUnload, l));
}

/*
 * The driver double's cuEventDestroy (CUDA 4.0's _v2 ABI): logged, and
 * CUDA_ERROR_INVALID_HANDLE for a handle that is not one of the double's
 * events (numbered from 0x7000, fake_cuda_event.c). The event's number is
 * not handed out again, so a wait for it afterwards still sees its last
 * record (the driver leaves that undefined). Apart from fake_cuda_event.c:
 * libgmux.so destroys the events of a migration stream it released
 * (backend_cuda.c), nothing else here depends on it.
 */
#include "fake_cuda_internal.h"

CUresult fk_cuEventDestroy_v2(CUevent e)
{
    REC(U(e), 0, 0, 0);
    return U(e) >= 0x7000 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

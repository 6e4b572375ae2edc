/*
 * Kernel parameter decoding: turns the arguments of one launch into candidate
 * pointer values (every 8-byte aligned word of the parameter block, read with
 * the kernel's layout from cuFuncGetParamInfo / cuKernelGetParamInfo), which
 * the policy then maps to regions. Reading every aligned word, not just the
 * 8-byte parameters, also catches pointers inside by-value structs (PyTorch's
 * TensorInfo, for example); a value that is no tracked address is dropped by
 * the region lookup.
 *
 * Layouts are cached per CUfunction in a fixed table (static storage, no heap:
 * the launch path never allocates). A kernel the table has no room for, or
 * whose layout the driver cannot give, decodes to nothing from kernelParams;
 * the `extra` buffer form is then scanned word by word.
 *
 * Thread-safety: safe from any thread. LOCKING: a mutex serialises writers
 * (filling an entry at a kernel's first launch, emptying the table at an
 * unload); launches read entries without a lock, each entry being a seqlock
 * (a launch that raced with a writer reads again), so entries and the pool
 * of descriptors are reused after unloads.
 */
#ifndef SHIM_PARAMS_H
#define SHIM_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

/* Most candidate values read from one launch. */
#define SHIM_MAX_CANDIDATES 128

/* Where the layout comes from (the driver, or a fake in tests). */
typedef CUresult (*shim_param_info_fn)(void *func, size_t index, size_t *offset_p, size_t *size_p);

/*
 * Candidate values of one launch of func. kernelParams and extra as the
 * driver receives them (either may be NULL). Returns how many were written to
 * out (at most max).
 */
size_t shim_params_decode(CUfunction func, void **kernel_params, void **extra, uint64_t *out,
                          size_t max);

/*
 * Positional values of one launch, for the trace recorder and the template
 * predictor: one per parameter of at most 8 bytes (zero-extended; zeros
 * kept, so positions do not shift with the values), and every aligned 8-byte
 * word of a larger parameter. Without a layout, the `extra` buffer's aligned
 * words. 0 when neither form can be read. At most max values.
 */
size_t shim_params_values(CUfunction func, void **kernel_params, void **extra, uint64_t *out,
                          size_t max);

/* Installs the layout queries (the driver's cuFuncGetParamInfo, then cuKernelGetParamInfo). */
void shim_params_set_info(shim_param_info_fn func_info, shim_param_info_fn kernel_info);

/* Forgets every cached layout (tests). */
void shim_params_reset(void);

/* Forgets the layouts of every kernel known so far, because a module or
 * library was unloaded: a function of a module loaded later may get the same
 * handle with other parameters, and walking its kernelParams with the old
 * layout would read past the program's array. The table and the pool are
 * empty again afterwards; a launch reading a layout meanwhile notices the
 * change and reads the new one. */
void shim_params_forget(void);

#endif /* SHIM_PARAMS_H */

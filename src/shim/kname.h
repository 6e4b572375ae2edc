/*
 * shim_kernel_name: the name a kernel goes by in traces, template databases
 * and the predictor's lookups, the same in every process. The driver's name
 * (cuFuncGetName) where it is at most SHIM_KNAME_MAX bytes of printable
 * characters without blanks (a database field); otherwise a digest form: the
 * name's first bytes (letters, digits, '_' kept, anything else '_'), '~' and
 * 16 hex digits of a 64-bit FNV-1a hash of the whole name. PyTorch's mangled
 * kernel names run to thousands of bytes.
 */
#ifndef SHIM_KNAME_H
#define SHIM_KNAME_H

#define SHIM_KNAME_MAX 255u

/* Writes the name of a kernel the driver calls drv into out (SHIM_KNAME_MAX
 * + 1 bytes); "" when drv is NULL or empty (the caller names it otherwise). */
void shim_kernel_name(const char *drv, char out[SHIM_KNAME_MAX + 1]);

#endif /* SHIM_KNAME_H */

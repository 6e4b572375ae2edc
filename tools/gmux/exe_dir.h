/*
 * Files the CLI ships beside itself: libgmux.so and gmux-net-rank sit next
 * to gmux in the build tree and under the installation prefix once
 * installed (bin/gmux, <libdir>/libgmux.so, <libexecdir>/gmux/gmux-net-rank).
 */
#ifndef GMUX_CLI_EXE_DIR_H
#define GMUX_CLI_EXE_DIR_H

#include <stddef.h>

/* The directory of the running executable into out (cap bytes); 0, or -1
 * when /proc/self/exe cannot be read or the path does not fit. */
int exe_dir(char *out, size_t cap);

/* The first of the paths rel[0..n) (each relative to the executable's
 * directory, "" for the directory itself being invalid) that exists with
 * access mode `mode` (R_OK, X_OK), made absolute with realpath into out;
 * 0, or -1 when none is. */
int exe_dir_find(const char *const *rel, size_t n, int mode, char *out, size_t cap);

#endif /* GMUX_CLI_EXE_DIR_H */

/*
 * libFuzzer harness for the trace readers (FUZZ_FORM 1: text, 2: binary):
 * the input is written to a file and read through the public source API,
 * every task in a round-robin interleaving. No input may crash a reader or
 * make it loop; every failure must come with a message naming the file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/trace_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static int path_fd = -1;

static void remove_path(void)
{
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (path_fd < 0) {
        snprintf(path, sizeof(path), "/tmp/gmux-fuzz-trace-XXXXXX");
        if ((path_fd = mkstemp(path)) < 0)
            abort();
        atexit(remove_path);
    }
    /* Rewritten in place, never truncated to empty first: on ext4 a file
     * truncated to 0, written and closed is flushed to disk at the close
     * (auto_da_alloc), which made each input wait on the disk (265 inputs/s
     * under libFuzzer, a minute for the replay). */
    if (pwrite(path_fd, data, size, 0) != (ssize_t)size || ftruncate(path_fd, (off_t)size) != 0)
        abort();
    char err[512] = "";
    sim_source_t *src;
    gmux_status_t st = FUZZ_FORM == 1 ? sim_text_open(path, &src, err, sizeof(err))
                                      : sim_bin_open(path, &src, err, sizeof(err));
    if (st != GMUX_OK) {
        if (!strstr(err, path))
            abort();
        return 0;
    }
    if (src->ntasks == 0 || src->ntasks > 64) { /* keep each input cheap */
        sim_source_close(src);
        return 0;
    }
    int *done = calloc(src->ntasks, sizeof(int));
    uint32_t left = src->ntasks;
    for (uint64_t round = 0; left && round < 100000; round++) {
        for (uint32_t t = 0; t < src->ntasks; t++) {
            if (done[t])
                continue;
            sim_event_t ev;
            st = sim_source_next(src, t, &ev);
            if (st == GMUX_OK && ev.kind == SIM_EV_LAUNCH && ev.u.launch.kernel >= src->nkernels)
                abort(); /* the reader let an unknown kernel through */
            if (st != GMUX_OK) {
                if (st != GMUX_ERR_NOT_FOUND && !strstr(src->error, path))
                    abort();
                done[t] = 1;
                left--;
            }
        }
    }
    free(done);
    sim_source_close(src);
    return 0;
}

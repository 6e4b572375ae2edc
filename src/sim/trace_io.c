/* Opening a trace file in either form, and copying a source into a writer. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim/trace_impl.h"
#include "sim/trace_proto.h"

gmux_status_t sim_trace_detect(const char *path, sim_trace_format_t *format_p, char *err,
                               size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return GMUX_ERR_IO;
    }
    char head[16] = {0};
    errno = 0;
    size_t n = fread(head, 1, sizeof(head), f);
    int failed = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (failed) { /* a folder opens, and is not "not a gmux trace": EISDIR */
        snprintf(err, errlen, "%s: %s", path, strerror(failed));
        return GMUX_ERR_IO;
    }
    if (n >= SIM_BIN_MAGIC_LEN && memcmp(head, SIM_BIN_MAGIC, SIM_BIN_MAGIC_LEN) == 0) {
        *format_p = SIM_TRACE_BINARY;
        return GMUX_OK;
    }
    size_t m = strlen(SIM_TEXT_MAGIC);
    if (n > m && memcmp(head, SIM_TEXT_MAGIC, m) == 0 && (head[m] == ' ' || head[m] == '\t')) {
        *format_p = SIM_TRACE_TEXT;
        return GMUX_OK;
    }
    snprintf(err, errlen, "%s: not a gmux trace (neither '%s' text nor binary header at offset 0)",
             path, SIM_TEXT_MAGIC);
    return GMUX_ERR_PARSE;
}

gmux_status_t sim_trace_open(const char *path, sim_source_t **src_p, char *err, size_t errlen)
{
    sim_trace_format_t format;
    gmux_status_t st = sim_trace_detect(path, &format, err, errlen);
    if (st != GMUX_OK)
        return st;
    return format == SIM_TRACE_BINARY ? sim_bin_open(path, src_p, err, errlen)
                                      : sim_text_open(path, src_p, err, errlen);
}

gmux_status_t sim_trace_copy(sim_source_t *src, sim_trace_writer_t *w, char *err, size_t errlen)
{
    gmux_status_t st;
    for (uint32_t t = 0; t < src->ntasks; t++)
        if ((st = sim_trace_writer_task(w, t, src->task_names[t])) != GMUX_OK)
            goto out_writer;
    for (uint32_t k = 0; k < src->nkernels; k++)
        if ((st = sim_trace_writer_kernel(w, k, src->kernel_names[k])) != GMUX_OK)
            goto out_writer;
    for (uint32_t t = 0; t < src->ntasks; t++) {
        sim_event_t ev;
        while ((st = sim_source_next(src, t, &ev)) == GMUX_OK)
            if ((st = sim_trace_writer_event(w, t, &ev)) != GMUX_OK)
                goto out_writer;
        if (st != GMUX_ERR_NOT_FOUND) {
            snprintf(err, errlen, "%s", src->error);
            return st;
        }
    }
    return GMUX_OK;
out_writer:
    /* The writer keeps its reason; closing it reports it. */
    snprintf(err, errlen, "writing the trace failed: %s", gmux_status_str(st));
    return st;
}

/*
 * libFuzzer harness for the workload generators' front (`gmux sim
 * --workload NAME --set KEY=VALUE ...`): the input is the command line's
 * part, one item a line: the first line the workload name ('+'-joined), the
 * others its settings (at most 16). A source that opens is then read: a few
 * events of every task, round robin, as the simulator reads them.
 *
 * No input may crash, leak or run away (libFuzzer's -timeout and
 * -rss_limit_mb catch a setting that makes a generator build something in
 * proportion to a size the open step did not refuse); an open that fails
 * says why, and so does a read that fails.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SETTINGS     16
#define EVENTS_PER_TASK  64
#define EVENTS_PER_INPUT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[1024];
    size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    const char *settings[MAX_SETTINGS];
    size_t nsettings = 0;
    char *name = text, *p = strchr(text, '\n');
    if (p)
        *p++ = '\0';
    while (p && *p && nsettings < MAX_SETTINGS) {
        settings[nsettings++] = p;
        p = strchr(p, '\n');
        if (p)
            *p++ = '\0';
    }
    sim_source_t *src = NULL;
    char err[256] = "";
    if (sim_workload_open(name, settings, nsettings, 1, &src, err, sizeof(err)) != GMUX_OK) {
        if (!err[0] || src)
            abort();
        return 0;
    }
    if (src->ntasks == 0 || !src->task_names || !src->kernel_names)
        abort();
    size_t total = 0;
    for (uint32_t round = 0; round < EVENTS_PER_TASK && total < EVENTS_PER_INPUT; round++) {
        bool any = false;
        for (uint32_t t = 0; t < src->ntasks && total < EVENTS_PER_INPUT; t++) {
            sim_event_t ev;
            gmux_status_t st = sim_source_next(src, t, &ev);
            if (st == GMUX_ERR_NOT_FOUND)
                continue;
            if (st != GMUX_OK) {
                if (!src->error[0])
                    abort();
                sim_source_close(src);
                return 0;
            }
            if (ev.kind == SIM_EV_LAUNCH && ev.u.launch.kernel >= src->nkernels)
                abort();
            any = true;
            total++;
        }
        if (!any)
            break;
    }
    sim_source_close(src);
    return 0;
}

/* Helpers shared by the src/sim tests: write a workload to a file, hash a task's events. */
#ifndef SIM_TEST_UTIL_H
#define SIM_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/trace_io.h"
#include "sim/workload.h"

/* A fresh temporary path (the file exists, empty). */
static inline void tmp_path(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "/tmp/gmux-test-%s-XXXXXX", tag);
    int fd = mkstemp(buf);
    if (fd >= 0)
        close(fd);
}

static inline gmux_status_t write_source_to(sim_source_t *src, const char *path,
                                            sim_trace_format_t f, char *err, size_t errlen)
{
    sim_trace_writer_t *w;
    gmux_status_t st = sim_trace_writer_open(path, f, &w, err, errlen);
    if (st != GMUX_OK)
        return st;
    gmux_status_t cst = sim_trace_copy(src, w, err, errlen);
    char werr[256];
    st = sim_trace_writer_close(w, werr, sizeof(werr));
    if (st != GMUX_OK)
        snprintf(err, errlen, "%s", werr);
    return cst != GMUX_OK ? cst : st;
}

static inline gmux_status_t write_workload(const char *name, const char *const *set, size_t nset,
                                           uint64_t seed, const char *path, sim_trace_format_t f)
{
    char err[512];
    sim_source_t *src;
    gmux_status_t st = sim_workload_open(name, set, nset, seed, &src, err, sizeof(err));
    if (st != GMUX_OK) {
        fprintf(stderr, "%s\n", err);
        return st;
    }
    st = write_source_to(src, path, f, err, sizeof(err));
    if (st != GMUX_OK)
        fprintf(stderr, "%s\n", err);
    sim_source_close(src);
    return st;
}

/* FNV-1a over an event's fields. */
static inline uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static inline uint64_t hash_event(uint64_t h, const sim_event_t *ev)
{
    h = hash_bytes(h, &ev->kind, sizeof(ev->kind));
    if (ev->kind == SIM_EV_ALLOC)
        return hash_bytes(h, &ev->u.alloc, sizeof(ev->u.alloc));
    if (ev->kind == SIM_EV_FREE)
        return hash_bytes(h, &ev->u.free, sizeof(ev->u.free));
    const sim_launch_ev_t *l = &ev->u.launch;
    h = hash_bytes(h, &l->kernel, 4);
    h = hash_bytes(h, l->grid, 12);
    h = hash_bytes(h, l->block, 12);
    h = hash_bytes(h, &l->time_ns, 8);
    for (uint32_t i = 0; i < l->nargs; i++) {
        h = hash_bytes(h, &l->args[i].kind, 1);
        h = hash_bytes(h, &l->args[i].value, 8);
    }
    for (uint32_t i = 0; i < l->nranges; i++) {
        h = hash_bytes(h, &l->ranges[i].addr, 8);
        h = hash_bytes(h, &l->ranges[i].len, 8);
        h = hash_bytes(h, &l->ranges[i].mode, 1);
    }
    return h;
}

static inline int files_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int eq = fa && fb;
    while (eq) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb)
            eq = 0;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return eq;
}

#endif /* SIM_TEST_UTIL_H */

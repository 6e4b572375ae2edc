/*
 * The workload source: parses a '+'-joined list of workload names and their
 * key=value settings, and hands out the events the generators produce, task
 * by task, on demand. See workload.h and docs/workloads.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "common/text.h"
#include "sim/trace_check.h"
#include "sim/wl_internal.h"
#include "sim/workload.h"

#define WL_MAX_PARTS 8

static const wl_def_t *const all_defs[] = {&wl_llm_decode, &wl_dl_train, &wl_sci_stencil,
                                           &wl_sci_sparse};
#define NDEFS (sizeof(all_defs) / sizeof(all_defs[0]))

typedef struct wl_part {
    const wl_def_t *def;
    void *cfg;
    uint32_t task0, ntasks;
    uint32_t *kmap;  /* local kernel id -> source kernel id */
    char given[200]; /* the settings given for it, for messages */
} wl_part_t;

typedef struct wl_task_rt {
    wl_part_t *part;
    void *state;
    wl_buf_t buf;
    sim_check_t live; /* its live allocations (allocs and frees only) */
    int done;
} wl_task_rt_t;

typedef struct wl_source {
    sim_source_t base;
    wl_part_t parts[WL_MAX_PARTS];
    size_t nparts;
    uint64_t peaks; /* the sum of the tasks' peaks so far (SIM_WORKLOAD_MAX_BYTES) */
    wl_task_rt_t *tasks;
    char **task_names;
    char **kernel_names;
} wl_source_t;

static const wl_def_t *find_def(const char *name, size_t len)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (strlen(all_defs[i]->name) == len && strncmp(all_defs[i]->name, name, len) == 0)
            return all_defs[i];
    return NULL;
}

static const wl_setting_t *find_setting(const wl_def_t *d, const char *key, size_t len)
{
    for (size_t i = 0; i < d->nsettings; i++)
        if (strlen(d->settings[i].key) == len && strncmp(d->settings[i].key, key, len) == 0)
            return &d->settings[i];
    return NULL;
}

/* Appends word to buf (cap bytes) as the k-th of n in a list "a, b, c" (with
 * last " or ": "a, b or c"). */
static void list_add(char *buf, size_t cap, const char *word, size_t k, size_t n, const char *last)
{
    size_t len = strlen(buf);
    if (len < cap)
        snprintf(buf + len, cap - len, "%s%s", k == 0 ? "" : k + 1 == n ? last : ", ", word);
}

/* Parses text into the field of cfg that s names. */
static int set_value(void *cfg, const wl_setting_t *s, const char *text, char *err, size_t errlen)
{
    uint64_t v = 0;
    gmux_status_t st = GMUX_ERR_PARSE;
    if (s->type == WL_T_COUNT) {
        st = com_parse_u64(text, &v);
    } else if (s->type == WL_T_SIZE) {
        st = com_parse_size(text, &v);
    } else {
        for (uint64_t i = 0; s->choices[i]; i++)
            if (strcmp(s->choices[i], text) == 0) {
                v = i;
                st = GMUX_OK;
            }
    }
    if (st != GMUX_OK || (s->type != WL_T_CHOICE && (v < s->min || v > s->max))) {
        if (s->type == WL_T_CHOICE) {
            char names[256] = "";
            size_t n = 0;
            while (s->choices[n])
                n++;
            for (size_t i = 0; i < n; i++)
                list_add(names, sizeof(names), s->choices[i], i, n, " or ");
            snprintf(err, errlen, "setting %s wants %s, not '%s'", s->key, names, text);
        } else
            snprintf(err, errlen, "setting %s wants a %s in [%" PRIu64 ", %" PRIu64 "], not '%s'",
                     s->key, s->type == WL_T_SIZE ? "size" : "whole number", s->min, s->max, text);
        return -1;
    }
    memcpy((char *)cfg + s->offset, &v, sizeof(v));
    return 0;
}

static void wl_close(sim_source_t *src)
{
    wl_source_t *s = (wl_source_t *)src;
    for (uint32_t i = 0; s->tasks && i < src->ntasks; i++) {
        wl_task_rt_t *t = &s->tasks[i];
        if (t->state) {
            t->part->def->task_fini(t->state);
            free(t->state);
        }
        wl_buf_fini(&t->buf);
        sim_check_fini(&t->live);
    }
    free(s->tasks);
    for (uint32_t i = 0; s->task_names && i < src->ntasks; i++)
        free(s->task_names[i]);
    for (uint32_t i = 0; s->kernel_names && i < src->nkernels; i++)
        free(s->kernel_names[i]);
    free(s->task_names);
    free(s->kernel_names);
    for (size_t i = 0; i < s->nparts; i++) {
        free(s->parts[i].cfg);
        free(s->parts[i].kmap);
    }
    free(s);
}

/* Follows a task's allocations; refuses the one that takes the tasks' peaks
 * together past SIM_WORKLOAD_MAX_BYTES (see workload.h). */
static gmux_status_t wl_count(wl_source_t *s, wl_task_rt_t *t, const sim_event_t *ev)
{
    char why[200];
    uint64_t before = t->live.peak_bytes;
    gmux_status_t st = sim_check_event(&t->live, ev, why, sizeof(why));
    if (st != GMUX_OK) { /* a generator's own mistake */
        snprintf(s->base.error, sizeof(s->base.error), "workload %s: %s", t->part->def->name, why);
        return st;
    }
    uint64_t grew = t->live.peak_bytes - before;
    s->peaks = grew > UINT64_MAX - s->peaks ? UINT64_MAX : s->peaks + grew;
    if (s->peaks <= SIM_WORKLOAD_MAX_BYTES)
        return GMUX_OK;
    char lim[32], size[32];
    /* the error has room for 256 bytes: the list of settings is cut first */
    snprintf(s->base.error, sizeof(s->base.error),
             "workload %s: allocations pass %s in all (one of %s), more than the simulator "
             "holds; lower the settings that size them (given: %.90s)",
             t->part->def->name, com_format_size(SIM_WORKLOAD_MAX_BYTES, lim, sizeof(lim)),
             com_format_size(ev->u.alloc.size, size, sizeof(size)),
             t->part->given[0] ? t->part->given : "none, the defaults");
    return GMUX_ERR_RANGE;
}

static gmux_status_t wl_next(sim_source_t *src, uint32_t task, sim_event_t *ev)
{
    wl_source_t *s = (wl_source_t *)src;
    if (task >= src->ntasks) {
        snprintf(src->error, sizeof(src->error), "task %" PRIu32 " out of range", task);
        return GMUX_ERR_INVALID;
    }
    wl_task_rt_t *t = &s->tasks[task];
    while (wl_buf_pop(&t->buf, ev) != 0) {
        if (t->done)
            return GMUX_ERR_NOT_FOUND;
        wl_buf_clear(&t->buf);
        t->done = t->part->def->refill(t->state, t->part->cfg, &t->buf);
        if (t->buf.oom) {
            snprintf(src->error, sizeof(src->error), "workload %s: out of memory",
                     t->part->def->name);
            return GMUX_ERR_NOMEM;
        }
    }
    if (ev->kind == SIM_EV_LAUNCH) {
        ev->u.launch.kernel = t->part->kmap[ev->u.launch.kernel];
        return GMUX_OK;
    }
    return wl_count(s, t, ev);
}

static const sim_source_ops_t wl_ops = {.next = wl_next, .close = wl_close};

/* Applies "key=value" or "workload.key=value" to the parts it names. */
static int apply_setting(wl_source_t *s, const char *kv, uint64_t *seed, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        snprintf(err, errlen, "setting '%s' is not key=value", kv);
        return -1;
    }
    const char *key = kv;
    size_t klen = (size_t)(eq - kv);
    const char *dot = memchr(kv, '.', klen);
    const wl_def_t *only = NULL;
    if (dot) {
        if (!(only = find_def(kv, (size_t)(dot - kv)))) {
            snprintf(err, errlen, "setting '%s': no workload '%.*s'", kv, (int)(dot - kv), kv);
            return -1;
        }
        key = dot + 1;
        klen = (size_t)(eq - key);
    }
    if (!only && klen == 4 && strncmp(key, "seed", 4) == 0) {
        if (com_parse_u64(eq + 1, seed) != GMUX_OK) {
            snprintf(err, errlen, "setting seed wants a whole number, not '%s'", eq + 1);
            return -1;
        }
        return 0;
    }
    int used = 0;
    for (size_t i = 0; i < s->nparts; i++) {
        const wl_def_t *d = s->parts[i].def;
        if (only && d != only)
            continue;
        const wl_setting_t *st = find_setting(d, key, klen);
        if (!st)
            continue;
        if (set_value(s->parts[i].cfg, st, eq + 1, err, errlen))
            return -1;
        char *g = s->parts[i].given;
        size_t gl = strlen(g);
        snprintf(g + gl, sizeof(s->parts[i].given) - gl, "%s%.*s=%s", gl ? ", " : "", (int)klen,
                 key, eq + 1);
        used = 1;
    }
    if (!used) {
        const wl_def_t *d = only ? only : s->nparts == 1 ? s->parts[0].def : NULL;
        char names[512] = "";
        for (size_t i = 0; d && i < d->nsettings; i++)
            list_add(names, sizeof(names), d->settings[i].key, i, d->nsettings, ", ");
        snprintf(err, errlen, "unknown setting '%.*s' for workload %s%s%s%s", (int)klen, key,
                 d ? d->name : "mix", d ? " (known: " : "", names,
                 d ? (only ? ")" : ", seed)") : "");
        return -1;
    }
    return 0;
}

/* Builds the kernel table (identical names shared) and the task table. */
static gmux_status_t build_tables(wl_source_t *s, uint64_t seed, char *err, size_t errlen)
{
    uint32_t ntasks = 0, nk = 0;
    for (size_t i = 0; i < s->nparts; i++) {
        s->parts[i].task0 = ntasks;
        s->parts[i].ntasks = s->parts[i].def->ntasks(s->parts[i].cfg);
        ntasks += s->parts[i].ntasks;
        nk += s->parts[i].def->nkernels;
    }
    if (!(s->kernel_names = calloc(nk, sizeof(char *))) ||
        !(s->task_names = calloc(ntasks, sizeof(char *))) ||
        !(s->tasks = calloc(ntasks, sizeof(*s->tasks))))
        goto out_nomem;
    for (size_t i = 0; i < s->nparts; i++) {
        wl_part_t *p = &s->parts[i];
        if (!(p->kmap = calloc(p->def->nkernels, sizeof(uint32_t))))
            goto out_nomem;
        for (uint32_t k = 0; k < p->def->nkernels; k++) {
            uint32_t j = 0;
            while (j < s->base.nkernels && strcmp(s->kernel_names[j], p->def->kernels[k]) != 0)
                j++;
            if (j == s->base.nkernels) {
                if (!(s->kernel_names[j] = strdup(p->def->kernels[k])))
                    goto out_nomem;
                s->base.nkernels++;
            }
            p->kmap[k] = j;
        }
        uint64_t part_seed = wl_mix(seed, i);
        uint32_t same = 0; /* tasks of earlier parts of the same workload: names stay unique */
        for (size_t j = 0; j < i; j++)
            same += s->parts[j].def == p->def ? s->parts[j].ntasks : 0;
        for (uint32_t t = 0; t < p->ntasks; t++) {
            uint32_t g = p->task0 + t;
            char name[96];
            snprintf(name, sizeof(name), "%s.%" PRIu32, p->def->name, same + t);
            if (!(s->task_names[g] = strdup(name)) ||
                !(s->tasks[g].state = calloc(1, p->def->task_size)))
                goto out_nomem;
            s->base.ntasks = g + 1;
            s->tasks[g].part = p;
            sim_check_init(&s->tasks[g].live, 0);
            p->def->task_init(s->tasks[g].state, p->cfg, t, g, wl_mix(part_seed, t));
        }
    }
    s->base.ntasks = ntasks;
    return GMUX_OK;
out_nomem:
    snprintf(err, errlen, "out of memory");
    return GMUX_ERR_NOMEM;
}

gmux_status_t sim_workload_open(const char *name, const char *const *settings, size_t nsettings,
                                uint64_t seed, sim_source_t **src_p, char *err, size_t errlen)
{
    gmux_status_t st = GMUX_ERR_INVALID;
    wl_source_t *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return GMUX_ERR_NOMEM;
    }
    s->base.ops = &wl_ops;
    for (const char *p = name;;) {
        const char *plus = strchr(p, '+');
        size_t len = plus ? (size_t)(plus - p) : strlen(p);
        const wl_def_t *d = find_def(p, len);
        if (!d) {
            snprintf(err, errlen,
                     "unknown workload '%.*s' (known: llm-decode, dl-train, "
                     "sci-stencil, sci-sparse)",
                     (int)len, p);
            goto out_source;
        }
        if (s->nparts == WL_MAX_PARTS) {
            snprintf(err, errlen, "more than %d workloads joined with '+'", WL_MAX_PARTS);
            goto out_source;
        }
        wl_part_t *part = &s->parts[s->nparts++];
        part->def = d;
        if (!(part->cfg = calloc(1, d->cfg_size))) {
            snprintf(err, errlen, "out of memory");
            st = GMUX_ERR_NOMEM;
            goto out_source;
        }
        for (size_t i = 0; i < d->nsettings; i++)
            if (set_value(part->cfg, &d->settings[i], d->settings[i].def, err, errlen))
                abort(); /* a default that does not parse is a bug in the table */
        if (!plus)
            break;
        p = plus + 1;
    }
    for (size_t i = 0; i < nsettings; i++)
        if (apply_setting(s, settings[i], &seed, err, errlen))
            goto out_source;
    for (size_t i = 0; i < s->nparts; i++) {
        char why[200];
        if (s->parts[i].def->finish && s->parts[i].def->finish(s->parts[i].cfg, why, sizeof(why))) {
            snprintf(err, errlen, "%s, in workload %s", why, s->parts[i].def->name);
            goto out_source;
        }
    }
    if ((st = build_tables(s, seed, err, errlen)) != GMUX_OK)
        goto out_source;
    s->base.task_names = (const char *const *)s->task_names;
    s->base.kernel_names = (const char *const *)s->kernel_names;
    *src_p = &s->base;
    return GMUX_OK;
out_source:
    wl_close(&s->base);
    return st;
}

void sim_workload_print_help(FILE *out)
{
    fprintf(out, "Workloads (join several with '+' to run them side by side; settings as\n"
                 "key=value apply to every joined workload that has the key, or to one with\n"
                 "workload.key=value; seed=N sets the seed). Sources of every figure:\n"
                 "docs/workloads.md.\n");
    for (size_t i = 0; i < NDEFS; i++) {
        const wl_def_t *d = all_defs[i];
        int col = fprintf(out, "\n  %s: ", d->name) - 1; /* the newline is no column */
        com_text_wrap(out, d->summary, col > 0 ? (size_t)col : 0, COM_TEXT_WIDTH);
        for (size_t j = 0; j < d->nsettings; j++) {
            const wl_setting_t *s = &d->settings[j];
            char key[64], help[512];
            snprintf(key, sizeof(key), "%s=%s", s->key, s->def);
            size_t n = (size_t)snprintf(help, sizeof(help), "%s", s->help);
            for (size_t c = 0; s->type == WL_T_CHOICE && s->choices[c] && n < sizeof(help); c++)
                n += (size_t)snprintf(help + n, sizeof(help) - n, "%s%s", c ? ", " : " (",
                                      s->choices[c]);
            if (s->type == WL_T_CHOICE && n < sizeof(help))
                snprintf(help + n, sizeof(help) - n, ")");
            int col = fprintf(out, "    %-24s ", key);
            com_text_wrap(out, help, col > 0 ? (size_t)col : 0, COM_TEXT_WIDTH);
        }
    }
}

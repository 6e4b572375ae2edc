/*
 * A trace-driven task for the daemon's integration tests: replays one task
 * of a workload (sim/workload.h) through the engine (engine/engine.h) on
 * simulated memory that carries data (tmem.h), and joins gmuxd through the
 * client library as libgmux.so does: registers with its budget, priority
 * and class, announces each launch's working set and waits for its turn
 * before it, follows the daemon's EVICT and FILL orders, reports its
 * counters, and goes idle when its queue runs dry. Without --socket it runs
 * alone (no daemon at all): the reference run.
 *
 * Before each launch, chunks a daemon order displaced are brought back
 * (what demand paging would do on a GPU); then every chunk the launch
 * touches must be resident, or the run fails.
 *
 * Output (--out): one line per launch   K index request_ns start_ns end_ns local
 * (CLOCK_MONOTONIC, as gmux_test_client writes), then
 *   R registrations
 *   P fill_orders evict_orders          (ranges received in PLAN messages)
 *   M peak budget plan_evicted plan_filled restored filled evicted faults
 *   C checksum        (16 hex digits: what every launch read, and the final memory)
 *
 * With GMUX_TEST_CLIENT_GO=FILE it waits for FILE once registered
 * (client_go.h), as gmux_test_client does.
 *
 * Exit: 0 done, 2 usage, 3 no turn within the wait bound (or no go file
 * within 20 s, or GMUX_TEST_CLIENT_WAIT_S), 4 I/O or setup,
 * 5 a launch touched a chunk that was not resident, 6 a capacity overrun or
 * a range outside the allocations, 7 engine error.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/clock.h"
#include "client_go.h"
#include "common/parse.h"
#include "daemon/client.h"
#include "engine/engine.h"
#include "sim/run.h"
#include "sim/workload.h"
#include "tmem.h"

#define MAX_SETS 16

typedef struct opts {
    const char *sock, *name, *workload, *out, *shared;
    const char *sets[MAX_SETS];
    size_t nsets;
    dmn_class_t cls;
    int prio;
    uint32_t task;
    uint64_t seed, budget, chunk, granule, device;
    uint64_t launch_us, idle_every, idle_us, max_launches;
} opts_t;

/* Launch ranges handed to the engine, kept until the launch runs. */
typedef struct pending {
    struct pending *next;
    uint32_t kernel, n;
    eng_range_t r[];
} pending_t;

typedef struct feed_ctx {
    sim_source_t *src;
    uint32_t task;
    tmem_t *mem;
    pending_t *head, *tail;
} feed_ctx_t;

static unsigned long plan_fills, plan_evicts, plan_aheads;

static void on_plan(void *arg, uint64_t grant_seq, dmn_plan_kind_t kind, const dmn_range_t *r,
                    uint32_t n)
{
    (void)grant_seq;
    if (kind == DMN_PLAN_FILL)
        plan_fills += n;
    else if (kind == DMN_PLAN_AHEAD)
        plan_aheads += n;
    else
        plan_evicts += n;
    tmem_plan(arg, kind, r, n);
}

/* The chosen task of the workload as the engine's task 0; allocations get
 * their data at once, launches' ranges are queued for their execution. */
static gmux_status_t feed_next(void *ctx, uint32_t task, eng_item_t *it)
{
    feed_ctx_t *f = ctx;
    (void)task;
    sim_event_t ev;
    gmux_status_t st = sim_source_next(f->src, f->task, &ev);
    if (st != GMUX_OK)
        return st;
    switch (ev.kind) {
    case SIM_EV_ALLOC:
        it->kind = ENG_ITEM_ALLOC;
        it->id = ev.u.alloc.id;
        it->base = ev.u.alloc.base;
        it->size = ev.u.alloc.size;
        return tmem_alloc(f->mem, it->id, it->base, it->size);
    case SIM_EV_FREE:
        it->kind = ENG_ITEM_FREE;
        it->id = ev.u.free.id;
        return GMUX_OK;
    case SIM_EV_LAUNCH: {
        const sim_launch_ev_t *l = &ev.u.launch;
        pending_t *p = malloc(sizeof(*p) + l->nranges * sizeof(eng_range_t));
        if (!p)
            return GMUX_ERR_NOMEM;
        p->next = NULL;
        p->kernel = l->kernel;
        p->n = l->nranges;
        memcpy(p->r, l->ranges, l->nranges * sizeof(eng_range_t));
        if (f->tail)
            f->tail->next = p;
        else
            f->head = p;
        f->tail = p;
        sim_item_from_launch(it, l);
        return GMUX_OK;
    }
    }
    return GMUX_ERR_PARSE;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "gmux_trace_client: %s\nusage: gmux_trace_client --workload W [--set k=v].. "
            "[--seed S] [--task T] --budget SIZE [--chunk SIZE] [--granule N] [--socket PATH "
            "--name N --class batch|latency --priority P] [--launch-us U] [--idle-every N "
            "--idle-us U] [--max-launches N] [--shared FILE --device SIZE] --out FILE\n",
            why);
    return 2;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    static const struct option lo[] = {{"socket", 1, 0, 's'},
                                       {"name", 1, 0, 'n'},
                                       {"class", 1, 0, 'c'},
                                       {"priority", 1, 0, 'p'},
                                       {"workload", 1, 0, 'w'},
                                       {"set", 1, 0, 'S'},
                                       {"seed", 1, 0, 'e'},
                                       {"task", 1, 0, 't'},
                                       {"budget", 1, 0, 'b'},
                                       {"chunk", 1, 0, 'k'},
                                       {"granule", 1, 0, 'g'},
                                       {"launch-us", 1, 0, 'l'},
                                       {"idle-every", 1, 0, 'i'},
                                       {"idle-us", 1, 0, 'I'},
                                       {"max-launches", 1, 0, 'm'},
                                       {"shared", 1, 0, 'H'},
                                       {"device", 1, 0, 'd'},
                                       {"out", 1, 0, 'o'},
                                       {0, 0, 0, 0}};
    *o = (opts_t){.name = "trace", .cls = DMN_CLASS_BATCH, .chunk = 64 << 10, .granule = 64};
    int ch;
    uint64_t v;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        const char *a = optarg;
        gmux_status_t st = GMUX_OK;
        switch (ch) {
        case 's':
            o->sock = a;
            break;
        case 'n':
            o->name = a;
            break;
        case 'c':
            if (strcmp(a, "latency") && strcmp(a, "batch"))
                return usage("bad class");
            o->cls = strcmp(a, "latency") == 0 ? DMN_CLASS_LATENCY : DMN_CLASS_BATCH;
            break;
        case 'p':
            o->prio = atoi(a);
            break;
        case 'w':
            o->workload = a;
            break;
        case 'S':
            if (o->nsets == MAX_SETS)
                return usage("too many --set");
            o->sets[o->nsets++] = a;
            break;
        case 'e':
            st = com_parse_u64(a, &o->seed);
            break;
        case 't':
            st = com_parse_u64(a, &v), o->task = (uint32_t)v;
            break;
        case 'b':
            st = com_parse_size(a, &o->budget);
            break;
        case 'k':
            st = com_parse_size(a, &o->chunk);
            break;
        case 'g':
            st = com_parse_u64(a, &o->granule);
            break;
        case 'l':
            st = com_parse_u64(a, &o->launch_us);
            break;
        case 'i':
            st = com_parse_u64(a, &o->idle_every);
            break;
        case 'I':
            st = com_parse_u64(a, &o->idle_us);
            break;
        case 'm':
            st = com_parse_u64(a, &o->max_launches);
            break;
        case 'H':
            o->shared = a;
            break;
        case 'd':
            st = com_parse_size(a, &o->device);
            break;
        case 'o':
            o->out = a;
            break;
        default:
            return usage("unknown option");
        }
        if (st != GMUX_OK)
            return usage(a);
    }
    if (optind != argc || !o->workload || !o->out || !o->budget || (o->shared && !o->device))
        return usage("missing or extra arguments");
    return 0;
}

static tmem_shared_t *map_shared(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd < 0)
        return NULL;
    void *p = MAP_FAILED;
    if (ftruncate(fd, 4096) == 0)
        p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* The launch's ranges as the working set it announces. */
static uint32_t to_ranges(const pending_t *p, dmn_range_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->n && n < cap; i++)
        out[n++] = (dmn_range_t){p->r[i].addr, p->r[i].len};
    return n;
}

static dmn_range_t ws[256];

int main(int argc, char **argv)
{
    opts_t o;
    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    int rc = 4;
    char err[256] = "";
    FILE *out = fopen(o.out, "w");
    if (!out)
        return 4;
    sim_params_t sp;
    sim_params_default(&sp);
    sp.chunk_bytes = (double)o.chunk;
    tmem_params_t mp = {o.chunk, o.budget, o.granule, NULL, o.device, &sp};
    if (o.shared && !(mp.shared = map_shared(o.shared))) {
        fprintf(stderr, "%s: cannot map %s\n", o.name, o.shared);
        goto close_out;
    }
    tmem_t *mem = NULL;
    if (tmem_create(&mp, &mem) != GMUX_OK) {
        fprintf(stderr, "%s: bad memory parameters\n", o.name);
        goto close_out;
    }
    feed_ctx_t f = {NULL, o.task, mem, NULL, NULL};
    if (sim_workload_open(o.workload, o.sets, o.nsets, o.seed, &f.src, err, sizeof(err)) !=
            GMUX_OK ||
        o.task >= f.src->ntasks) {
        fprintf(stderr, "%s: workload: %s\n", o.name, err[0] ? err : "no such task");
        goto destroy_mem;
    }
    eng_backend_t be = tmem_backend(mem);
    eng_engine_params_t ep = {.ntasks = 1,
                              .policy = ENG_PLACE_OPT,
                              .capacity_bytes = o.budget,
                              .chunk_size = o.chunk,
                              .lookahead = 256,
                              .prefetch_slices = 1,
                              .batch_chunks = 32,
                              .quantum_ns = 10 * COM_NS_PER_MS,
                              .feed = {feed_next, &f}};
    eng_engine_t *eng = NULL;
    if (eng_engine_create(&ep, &be, &eng) != GMUX_OK) {
        fprintf(stderr, "%s: cannot create the engine\n", o.name);
        goto close_src;
    }
    dmn_client_t *c = NULL;
    if (o.sock) {
        dmn_client_opts_t co = {o.sock, o.name, o.cls, o.prio, o.budget, on_plan,
                                mem,    NULL,   NULL,  NULL,   NULL};
        if (dmn_client_open(&co, &c) != GMUX_OK) {
            fprintf(stderr, "%s: refused by the daemon\n", o.name);
            goto destroy_eng;
        }
        if (client_go_wait(c, o.name) != 0) {
            rc = 3;
            dmn_client_close(c);
            goto destroy_eng;
        }
    }
    sim_device_t *dev = tmem_device(mem);
    dmn_msg_stats_t stats = {0};
    rc = 0;
    for (uint64_t k = 0; !o.max_launches || k < o.max_launches; k++) {
        eng_step_t step;
        gmux_status_t st = eng_engine_next(eng, &step);
        if (st == GMUX_ERR_NOT_FOUND)
            break;
        pending_t *p = f.head;
        if (st != GMUX_OK || !p || p->kernel != step.kernel) {
            fprintf(stderr, "%s: engine: %s %s\n", o.name, gmux_status_str(st), tmem_error(mem));
            rc = tmem_error(mem)[0] ? 6 : 7;
            break;
        }
        uint64_t req = com_clock_ns();
        if (c) {
            dmn_client_pending(c, 1, ws, to_ranges(p, ws, 256));
            if (dmn_client_wait_turn(c, 60 * COM_NS_PER_S) != GMUX_OK) {
                fprintf(stderr, "%s: no turn within 60 s\n", o.name);
                rc = 3;
                break;
            }
        }
        if (tmem_displaced(mem) > 0)
            tmem_restore(mem);
        int local = c ? dmn_client_is_local(c) : 1;
        uint64_t start = com_clock_ns();
        st = tmem_launch(mem, p->kernel, p->r, p->n);
        if (st != GMUX_OK || tmem_error(mem)[0]) {
            fprintf(stderr, "%s: %s\n", o.name, tmem_error(mem));
            rc = st == GMUX_ERR_STATE ? 5 : 6;
            break;
        }
        if (o.launch_us)
            com_clock_sleep_ns(o.launch_us * COM_NS_PER_US);
        uint64_t end = com_clock_ns();
        fprintf(out, "K %llu %llu %llu %llu %d\n", (unsigned long long)k, (unsigned long long)req,
                (unsigned long long)start, (unsigned long long)end, local);
        f.head = p->next;
        if (!f.head)
            f.tail = NULL;
        free(p);
        uint64_t t0 = dev->now_ns > step.wait ? dev->now_ns : step.wait;
        dev->now_ns = t0 + step.time_ns;
        if (eng_engine_complete(eng, dev->now_ns) != GMUX_OK) {
            rc = 7;
            break;
        }
        const tmem_stats_t *ms = tmem_stats(mem);
        stats = (dmn_msg_stats_t){
            ms->resident, o.budget, eng_engine_faults(eng), ms->filled + ms->evicted, k + 1, 0, 0};
        if (c) {
            dmn_client_report(c, &stats);
            if (o.idle_every && (k + 1) % o.idle_every == 0) {
                dmn_client_idle(c);
                com_clock_sleep_ns(o.idle_us * COM_NS_PER_US);
            }
        }
    }
    if (rc == 0 && tmem_error(mem)[0]) {
        fprintf(stderr, "%s: %s\n", o.name, tmem_error(mem));
        rc = 6;
    }
    if (c) {
        dmn_client_idle(c);
        fprintf(out, "R %u\n", dmn_client_registrations(c));
    }
    fprintf(out, "P %lu %lu %lu\n", plan_fills, plan_evicts, plan_aheads);
    const tmem_stats_t *ms = tmem_stats(mem);
    fprintf(out, "M %llu %llu %llu %llu %llu %llu %llu %llu\n", (unsigned long long)ms->peak,
            (unsigned long long)o.budget, (unsigned long long)ms->plan_evicted,
            (unsigned long long)ms->plan_filled, (unsigned long long)ms->restored,
            (unsigned long long)ms->filled, (unsigned long long)ms->evicted,
            (unsigned long long)eng_engine_faults(eng));
    if (rc == 0)
        fprintf(out, "C %016llx\n", (unsigned long long)tmem_checksum(mem));
    dmn_client_close(c);
destroy_eng:
    eng_engine_destroy(eng);
    while (f.head) {
        pending_t *n = f.head->next;
        free(f.head);
        f.head = n;
    }
close_src:
    sim_source_close(f.src);
destroy_mem:
    tmem_destroy(mem);
    if (mp.shared)
        munmap(mp.shared, 4096);
close_out:
    if (fclose(out) != 0 && rc == 0)
        rc = 4;
    return rc;
}

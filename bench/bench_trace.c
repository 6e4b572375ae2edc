/*
 * Parse rate of the two trace forms, side by side in one run, on the same
 * generated trace of at least a million launches (written to temporary files
 * by the bench): events per second reading every task in a round-robin
 * interleaving (as the simulator does), for the binary form, the text form
 * and the generator itself. Prints one JSON line.
 *
 * Usage: bench_trace [TOKENS]   (llm-decode, 8 instances, llama2-7b shapes,
 * batch 1; 324 launches per token per instance; default 400 tokens: 1.04 M launches)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "sim/trace_io.h"
#include "sim/workload.h"

typedef struct rate {
    uint64_t events, launches, ranges;
    double seconds; /* wall clock */
    double cpu;     /* CPU time of this thread: what one core costs, whatever the load */
} rate_t;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int drain(sim_source_t *src, rate_t *r)
{
    uint32_t n = src->ntasks, left = n;
    char *done = calloc(n, 1);
    if (!done)
        return -1;
    uint64_t t0 = com_clock_ns();
    double c0 = cpu_now();
    while (left) {
        for (uint32_t t = 0; t < n; t++) {
            if (done[t])
                continue;
            sim_event_t ev;
            gmux_status_t st = sim_source_next(src, t, &ev);
            if (st == GMUX_ERR_NOT_FOUND) {
                done[t] = 1;
                left--;
                continue;
            }
            if (st != GMUX_OK) {
                fprintf(stderr, "bench_trace: %s\n", src->error);
                free(done);
                return -1;
            }
            r->events++;
            if (ev.kind == SIM_EV_LAUNCH) {
                r->launches++;
                r->ranges += ev.u.launch.nranges;
            }
        }
    }
    r->seconds = (double)(com_clock_ns() - t0) / 1e9;
    r->cpu = cpu_now() - c0;
    free(done);
    return 0;
}

static int write_file(const char *workload, const char *const *set, size_t nset, const char *path,
                      sim_trace_format_t f, double *seconds)
{
    char err[512];
    sim_source_t *src;
    sim_trace_writer_t *w;
    if (sim_workload_open(workload, set, nset, 1, &src, err, sizeof(err)) != GMUX_OK ||
        sim_trace_writer_open(path, f, &w, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, "bench_trace: %s\n", err);
        return -1;
    }
    uint64_t t0 = com_clock_ns();
    gmux_status_t st = sim_trace_copy(src, w, err, sizeof(err));
    char werr[512];
    gmux_status_t wst = sim_trace_writer_close(w, werr, sizeof(werr));
    *seconds = (double)(com_clock_ns() - t0) / 1e9;
    sim_source_close(src);
    if (st != GMUX_OK || wst != GMUX_OK) {
        fprintf(stderr, "bench_trace: %s\n", st != GMUX_OK ? err : werr);
        return -1;
    }
    return 0;
}

static int read_file(const char *path, rate_t *r)
{
    char err[512];
    sim_source_t *src;
    if (sim_trace_open(path, &src, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, "bench_trace: %s\n", err);
        return -1;
    }
    int rc = drain(src, r);
    sim_source_close(src);
    return rc;
}

/* Peak resident memory of the whole run: the traces are streamed, never loaded. */
static long max_rss_kib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

static long fsize(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    char tokens[64];
    snprintf(tokens, sizeof(tokens), "tokens=%s", argc > 1 ? argv[1] : "400");
    const char *set[] = {"instances=8", "model=llama2-7b", "batch=1", "prompt=1024", tokens};
    size_t nset = sizeof(set) / sizeof(set[0]);
    char bin[] = "/tmp/gmux-bench-trace-bin-XXXXXX", txt[] = "/tmp/gmux-bench-trace-txt-XXXXXX";
    int fb = mkstemp(bin), ft = mkstemp(txt);
    if (fb < 0 || ft < 0)
        return 1;
    close(fb);
    close(ft);
    int rc = 1;
    double wb, wt;
    rate_t gen = {0}, rb = {0}, rt = {0};
    char err[512];
    sim_source_t *src;
    if (sim_workload_open("llm-decode", set, nset, 1, &src, err, sizeof(err)) != GMUX_OK) {
        fprintf(stderr, "bench_trace: %s\n", err);
        goto out_files;
    }
    int grc = drain(src, &gen);
    sim_source_close(src);
    if (grc || write_file("llm-decode", set, nset, bin, SIM_TRACE_BINARY, &wb) ||
        write_file("llm-decode", set, nset, txt, SIM_TRACE_TEXT, &wt) || read_file(bin, &rb) ||
        read_file(txt, &rt))
        goto out_files;
    if (rb.events != rt.events || rb.events != gen.events) {
        fprintf(stderr, "bench_trace: forms disagree on the number of events\n");
        goto out_files;
    }
    printf("{\"bench\": \"trace_parse\", \"workload\": \"llm-decode %s\", \"events\": %" PRIu64
           ", \"launches\": %" PRIu64 ", \"ranges\": %" PRIu64
           ", \"binary_bytes\": %ld, \"text_bytes\": %ld, "
           "\"binary_events_per_cpu_s\": %.0f, \"text_events_per_cpu_s\": %.0f, "
           "\"generator_events_per_cpu_s\": %.0f, \"binary_over_text_cpu\": %.2f, "
           "\"binary_events_per_wall_s\": %.0f, \"text_events_per_wall_s\": %.0f, "
           "\"binary_write_s\": %.3f, \"text_write_s\": %.3f, \"max_rss_kib\": %ld}\n",
           tokens, rb.events, rb.launches, rb.ranges, fsize(bin), fsize(txt), rb.events / rb.cpu,
           rt.events / rt.cpu, gen.events / gen.cpu, rt.cpu / rb.cpu, rb.events / rb.seconds,
           rt.events / rt.seconds, wb, wt, max_rss_kib());
    rc = 0;
out_files:
    remove(bin);
    remove(txt);
    return rc;
}

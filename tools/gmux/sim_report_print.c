/* gmux sim reports: the table and the JSON object of one configuration
 * (sim_report_cfg.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/text.h"
#include "sim_report_cfg.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static double secs(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* Writes one report line of text, whatever precedes it on the line being col
 * columns wide: wrapped within COM_TEXT_WIDTH, each further line indented by
 * col (the table's own lines are sized to fit). */
static void wrapf(FILE *out, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void wrapf(FILE *out, size_t col, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    com_text_wrap(out, text, col, COM_TEXT_WIDTH);
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void sim_report_table(const sim_job_t *job, const sim_profile_t *prof, const cfg_result_t *cr,
                      FILE *out)
{
    const sim_params_t *pp = &job->params;
    uint32_t nt = prof->oracle.ntasks;
    char asked[96] = "";
    if (cr->one_chunk)
        snprintf(asked, sizeof(asked), "; %.0f%% asked would leave less than one chunk",
                 cr->asked_pct);
    fprintf(out, "== %s: %u tasks, %" PRIu64 " launches, seed %" PRIu64 "\n",
            sim_report_job_name(job), nt, prof->oracle.launches, job->seed);
    fputs("   ", out);
    wrapf(out, 3,
          "footprint %.2f GiB, device memory %.2f GiB (oversubscription %.0f%%%s), chunk %.0f "
          "KiB, H2D %.1f GB/s, D2H %.1f GB/s",
          (double)prof->footprint_bytes / GIB, (double)cr->capacity / GIB, cr->pct, asked,
          pp->chunk_bytes / 1024.0, pp->h2d_bps / 1e9, pp->d2h_bps / 1e9);
    if (cr->bound_st == GMUX_OK) {
        char released[96] = "";
        if (cr->bound.wb_released_ns)
            snprintf(released, sizeof(released), ", write-backs after their writes %.6f s",
                     secs(cr->bound.wb_released_ns));
        fputs("   ", out);
        wrapf(out, 3,
              "transfer bound %.6f s = max(compute %.6f s, OPT fetch %.2f GiB, OPT write-back "
              "%.2f GiB%s)%s",
              secs(cr->bound.bound_ns), secs(cr->bound.compute_ns),
              (double)cr->bound.fetch_bytes / GIB, (double)cr->bound.writeback_bytes / GIB,
              released,
              cr->bound.exact ? "" : " [compute term only: reference string over bound_max_refs]");
    } else if (cr->bound_st == GMUX_ERR_CAPACITY)
        fprintf(out,
                "   transfer bound undefined: a launch needs more than the device memory, "
                "so no policy can run at this size (compute alone %.6f s)\n",
                secs(cr->bound.compute_ns));
    else
        fprintf(out, "   transfer bound not computed: %s\n", gmux_status_str(cr->bound_st));
    /* 80 columns: a makespan to 9999 s, bytes to 99999 GiB, faults to 9,999,999 */
    fprintf(out, "   %-13s %11s %7s %7s %9s %8s %8s %7s\n", "policy", "makespan_s", "%oracle",
            "%bound", "vs_demand", "H2D_GiB", "D2H_GiB", "faults");
    const sim_result_t *dem =
        cr->st[SIM_POLICY_DEMAND] == GMUX_OK ? &cr->res[SIM_POLICY_DEMAND] : NULL;
    bool below = false; /* a row beat the whole-chunk bound (block-granular faults) */
    for (int p = 0; p < SIM_POLICY_COUNT; p++) {
        if (!job->policies[p])
            continue;
        if (cr->st[p] != GMUX_OK) {
            fprintf(out, "   %-13s ", sim_policy_name((sim_policy_t)p));
            wrapf(out, 17, "n/a: %s", cr->err[p]);
            continue;
        }
        const sim_result_t *r = &cr->res[p];
        double ms = (double)(r->makespan_ns ? r->makespan_ns : 1);
        char vs[32] = "-", of_bound[32] = "-";
        if (dem)
            snprintf(vs, sizeof(vs), "%.2fx", (double)dem->makespan_ns / ms);
        /* The oracle has unlimited memory: a bound for this capacity says nothing of it. */
        if (cr->bound_st == GMUX_OK && p != SIM_POLICY_ORACLE) {
            bool beat = r->makespan_ns < cr->bound.bound_ns;
            below |= beat;
            snprintf(of_bound, sizeof(of_bound), "%.1f%%%s",
                     100.0 * (double)cr->bound.bound_ns / ms, beat ? "*" : "");
        }
        fprintf(out, "   %-13s %11.6f %6.1f%% %7s %9s %8.2f %8.2f %7" PRIu64 "\n",
                sim_policy_name((sim_policy_t)p), secs(r->makespan_ns),
                100.0 * (double)prof->oracle.makespan_ns / ms, of_bound, vs,
                (double)r->bytes_h2d / GIB, (double)r->bytes_d2h / GIB, r->faults);
    }
    if (below) { /* the bound holds for every policy, blocks or chunks (docs/sim.md) */
        fputs("   ", out);
        wrapf(out, 3,
              "* faster than the transfer bound: a defect of the simulator, please "
              "report it with this command line");
    }
    fputs("   ", out);
    wrapf(out, 3, "proactive working sets: %s",
          job->predict_label ? job->predict_label
                             : "recorded ranges (ablation: a perfect predictor)");
    for (int p = SIM_POLICY_PROACTIVE; p <= SIM_POLICY_PROACTIVE_LRU; p++) {
        const sim_result_t *r = &cr->res[p];
        if (!job->policies[p] || cr->st[p] != GMUX_OK || !job->predictor)
            continue;
        fprintf(out, "   %-14s predicted bytes: precision %.4f recall %.4f\n",
                sim_policy_name((sim_policy_t)p),
                r->pred_bytes ? (double)r->pred_hit_bytes / (double)r->pred_bytes : 1.0,
                r->pred_touched_bytes ? (double)r->pred_hit_bytes / (double)r->pred_touched_bytes
                                      : 1.0);
        if (r->stream_hits + r->stream_misses) {
            fprintf(out, "   %-14s ", sim_policy_name((sim_policy_t)p));
            wrapf(out, 18,
                  "streams: %" PRIu64 " continuations held, %" PRIu64
                  " broken; precision %.4f recall %.4f of their slices",
                  r->stream_hits, r->stream_misses,
                  r->stream_pred_bytes ? (double)r->stream_hit_bytes / (double)r->stream_pred_bytes
                                       : 1.0,
                  r->stream_slice_bytes
                      ? (double)r->stream_hit_bytes / (double)r->stream_slice_bytes
                      : 1.0);
        }
    }
    for (int p = SIM_POLICY_PROACTIVE; p <= SIM_POLICY_PROACTIVE_LRU; p++) {
        const sim_result_t *r = &cr->res[p];
        if (!job->policies[p] || cr->st[p] != GMUX_OK || !r->makespan_ns)
            continue;
        /* what bounds the run: a copy engine busy all the time is the bottleneck */
        double ms = (double)r->makespan_ns;
        fprintf(out, "   %-14s ", sim_policy_name((sim_policy_t)p));
        wrapf(out, 18, "copy engines busy: H2D %.1f%%, D2H %.1f%% of the makespan (%.3f s, %.3f s)",
              100.0 * (double)r->busy_h2d_ns / ms, 100.0 * (double)r->busy_d2h_ns / ms,
              secs(r->busy_h2d_ns), secs(r->busy_d2h_ns));
    }
    fprintf(out, "   per-task throughput (launches/s of the task over its own completion time)\n");
    /* 80 columns with four policies: names to 21, rates to 13 characters */
    fprintf(out, "   %-21s", "task");
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        if (job->policies[p] && cr->st[p] == GMUX_OK)
            fprintf(out, " %13s", sim_policy_name((sim_policy_t)p));
    fputc('\n', out);
    for (uint32_t t = 0; t < nt; t++) {
        fprintf(out, "   %-21.21s", prof->task_names[t]);
        for (int p = 0; p < SIM_POLICY_COUNT; p++) {
            if (!job->policies[p] || cr->st[p] != GMUX_OK)
                continue;
            const sim_task_result_t *tr = &cr->res[p].tasks[t];
            double f = secs(tr->finish_ns);
            fprintf(out, " %13.1f", f > 0 ? (double)tr->launches / f : 0.0);
        }
        fputc('\n', out);
    }
}

void sim_report_json(const sim_job_t *job, const sim_profile_t *prof, const cfg_result_t *cr,
                     FILE *out)
{
    fprintf(out, "{\"input\":");
    json_str(out, sim_report_job_name(job));
    fprintf(out,
            ",\"seed\":%" PRIu64 ",\"tasks\":%u,\"launches\":%" PRIu64
            ",\"footprint_bytes\":%" PRIu64 ",\"capacity_bytes\":%" PRIu64
            ",\"oversub_pct\":%.3f,\"chunk_bytes\":%.0f",
            job->seed, prof->oracle.ntasks, prof->oracle.launches, prof->footprint_bytes,
            cr->capacity, cr->pct, job->params.chunk_bytes);
    /* always named: the size asked (null without one: the device is hbm) */
    if (cr->asked_pct > 0)
        fprintf(out, ",\"oversub_asked_pct\":%.3f", cr->asked_pct);
    else
        fprintf(out, ",\"oversub_asked_pct\":null");
    if (cr->bound_st == GMUX_OK)
        fprintf(out,
                ",\"transfer_bound_s\":%.9f,\"bound_exact\":%s,\"bound_compute_s\":%.9f,"
                "\"bound_fetch_bytes\":%" PRIu64 ",\"bound_writeback_bytes\":%" PRIu64
                ",\"bound_wb_released_s\":%.9f",
                secs(cr->bound.bound_ns), cr->bound.exact ? "true" : "false",
                secs(cr->bound.compute_ns), cr->bound.fetch_bytes, cr->bound.writeback_bytes,
                secs(cr->bound.wb_released_ns));
    else /* undefined (docs/sim.md): null, the compute term alone still a number */
        fprintf(out,
                ",\"transfer_bound_s\":null,\"bound_exact\":null,\"bound_compute_s\":%.9f,"
                "\"bound_fetch_bytes\":null,\"bound_writeback_bytes\":null,"
                "\"bound_wb_released_s\":null",
                secs(cr->bound.compute_ns));
    fprintf(out, ",\"oracle_s\":%.9f,\"policies\":{", secs(prof->oracle.makespan_ns));
    int first = 1;
    for (int p = 0; p < SIM_POLICY_COUNT; p++) {
        if (!job->policies[p])
            continue;
        fprintf(out, "%s\"%s\":", first ? "" : ",", sim_policy_name((sim_policy_t)p));
        first = 0;
        if (cr->st[p] != GMUX_OK) {
            fprintf(out, "{\"error\":");
            json_str(out, cr->err[p]);
            fputc('}', out);
            continue;
        }
        const sim_result_t *r = &cr->res[p];
        fprintf(out,
                "{\"makespan_s\":%.9f,\"bytes_h2d\":%" PRIu64 ",\"bytes_d2h\":%" PRIu64
                ",\"faults\":%" PRIu64 ",\"slices\":%" PRIu64 ",\"task_finish_s\":[",
                secs(r->makespan_ns), r->bytes_h2d, r->bytes_d2h, r->faults, r->slices);
        for (uint32_t t = 0; t < r->ntasks; t++)
            fprintf(out, "%s%.9f", t ? "," : "", secs(r->tasks[t].finish_ns));
        fprintf(out, "]");
        if (p == SIM_POLICY_PROACTIVE || p == SIM_POLICY_PROACTIVE_LRU)
            fprintf(out,
                    ",\"h2d_busy_s\":%.9f,\"d2h_busy_s\":%.9f,\"clean_bytes\":%" PRIu64
                    ",\"clean_wasted_bytes\":%" PRIu64 ",\"clean_rewritten_bytes\":%" PRIu64
                    ",\"clean_freed_bytes\":%" PRIu64 ",\"clean_dropped_bytes\":%" PRIu64,
                    secs(r->busy_h2d_ns), secs(r->busy_d2h_ns), r->clean_bytes,
                    r->clean_rewritten_bytes + r->clean_freed_bytes, r->clean_rewritten_bytes,
                    r->clean_freed_bytes, r->clean_dropped_bytes);
        if (job->predictor && (p == SIM_POLICY_PROACTIVE || p == SIM_POLICY_PROACTIVE_LRU))
            fprintf(out,
                    ",\"predicted_bytes\":%" PRIu64 ",\"recorded_bytes\":%" PRIu64
                    ",\"predicted_recorded_bytes\":%" PRIu64 ",\"replans\":%" PRIu64
                    ",\"replan_positions\":%" PRIu64 ",\"stream_predicted_bytes\":%" PRIu64
                    ",\"stream_hit_bytes\":%" PRIu64 ",\"stream_slice_bytes\":%" PRIu64
                    ",\"stream_hits\":%" PRIu64 ",\"stream_misses\":%" PRIu64,
                    r->pred_bytes, r->pred_touched_bytes, r->pred_hit_bytes, r->replans,
                    r->replan_positions, r->stream_pred_bytes, r->stream_hit_bytes,
                    r->stream_slice_bytes, r->stream_hits, r->stream_misses);
        fputc('}', out);
    }
    fprintf(out, "}}");
}

/*
 * gmux predict-report: how well launch arguments predict the bytes each
 * kernel touches. Per kernel and overall: the template chosen, precision and
 * recall of predicted bytes, and the same for the whole-allocation baseline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine/template_db.h"
#include "predict_drive.h"
#include "predict_report_opts.h"

#define CMD "predict-report"

static void print_help(void)
{
    printf("Usage: gmux predict-report TRACE [--templates FILE] [--json]\n"
           "       gmux predict-report --workload NAME [--set KEY=VALUE ...] [--seed S]\n"
           "                           [--templates FILE] [--json]\n"
           "       gmux predict-report -h | --help | -V | --version\n\n"
           "Replays the trace; each launch is predicted before it runs, then learnt from\n"
           "(online learning). With --templates, the database written by `gmux profile`\n"
           "is used from the first launch; a database that cannot be read is reported\n"
           "and the run goes on with online learning.\n\n"
           "Per kernel: the template of each pointer argument (or whole-region fallback\n"
           "and why), precision and recall of predicted bytes, and the whole-allocation\n"
           "baseline beside them. 'templated' sums the kernels whose every pointer\n"
           "argument has a trusted template (by the end of the trace), over all their\n"
           "launches, including those predicted before the templates were trusted\n"
           "(whole regions while learning); 'their trusted launches' counts only the\n"
           "launches predicted with every pointer argument's template trusted.\n\n"
           "Exit status: 0 (also when the --templates database cannot be read); 1 when\n"
           "the trace cannot be read or replayed; 2 for a usage error (a bad workload\n"
           "name or --set included).\n");
}

/* Whether every pointer argument of kernel k is trusted; *after = samples it took. */
static bool has_template(const eng_predictor_t *p, uint32_t k, uint32_t *after)
{
    eng_pred_kernel_info_t ki;
    bool any = false;
    *after = 0;
    if (eng_predictor_kernel_info(p, k, &ki) != GMUX_OK)
        return false;
    for (uint32_t i = 0; i < ki.nargs; i++) {
        eng_pred_arg_info_t ai;
        eng_predictor_arg_info(p, k, i, &ai);
        if (ai.kind != ENG_ARG_PTR)
            continue;
        if (ai.state != ENG_PRED_TRUSTED)
            return false;
        if (ai.trusted_after > *after)
            *after = ai.trusted_after;
        any = true;
    }
    return any;
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void json_score(const char *key, const eng_score_t *s)
{
    printf("\"%s\": {\"precision\": %.6f, \"recall\": %.6f, \"predicted_bytes\": %llu, "
           "\"touched_bytes\": %llu, \"hit_bytes\": %llu}",
           key, eng_score_precision(s), eng_score_recall(s), (unsigned long long)s->predicted,
           (unsigned long long)s->touched, (unsigned long long)s->hit);
}

static void print_text(const sim_source_t *src, const eng_predictor_t *p, const pdrive_report_t *r,
                       const char *templates)
{
    eng_score_t all = {0}, all_w = {0}, tpl = {0}, tpl_w = {0}, tpl_t = {0};
    uint32_t ntpl = 0, nk = 0, max_after = 0;
    printf("%-28s %9s %6s %9s %9s | %9s %9s\n", "kernel", "launches", "templ", "precision",
           "recall", "whole-P", "whole-R");
    for (uint32_t k = 0; k < r->nkernels; k++) {
        const pdrive_kernel_t *pk = &r->kernels[k];
        uint32_t after;
        if (pk->launches == 0)
            continue;
        bool t = has_template(p, k, &after);
        nk++;
        printf("%-28s %9llu %6s %9.4f %9.4f | %9.4f %9.4f\n", src->kernel_names[k],
               (unsigned long long)pk->launches, t ? "yes" : "no", eng_score_precision(&pk->pred),
               eng_score_recall(&pk->pred), eng_score_precision(&pk->whole),
               eng_score_recall(&pk->whole));
        eng_score_add(&all, &pk->pred);
        eng_score_add(&all_w, &pk->whole);
        if (t) {
            ntpl++;
            eng_score_add(&tpl, &pk->pred);
            eng_score_add(&tpl_w, &pk->whole);
            eng_score_add(&tpl_t, &pk->trusted);
            if (after > max_after)
                max_after = after;
        }
    }
    printf("%-28s %9s %6u %9.4f %9.4f | %9.4f %9.4f\n", "overall", "", nk,
           eng_score_precision(&all), eng_score_recall(&all), eng_score_precision(&all_w),
           eng_score_recall(&all_w));
    printf("%-28s %9s %6u %9.4f %9.4f | %9.4f %9.4f\n", "templated kernels", "", ntpl,
           eng_score_precision(&tpl), eng_score_recall(&tpl), eng_score_precision(&tpl_w),
           eng_score_recall(&tpl_w));
    printf("%-28s %9s %6s %9.4f %9.4f\n", "  their trusted launches", "", "",
           eng_score_precision(&tpl_t), eng_score_recall(&tpl_t));
    printf("\ntemplates (%s; most samples before trust: %u)\n",
           templates ? templates : "learned online", max_after);
    for (uint32_t k = 0; k < r->nkernels; k++) {
        char desc[2048];
        if (r->kernels[k].launches == 0)
            continue;
        printf("  %-26s %s\n", src->kernel_names[k],
               eng_predictor_describe(p, k, desc, sizeof(desc)));
    }
}

static void print_json(const sim_source_t *src, const eng_predictor_t *p, const pdrive_report_t *r,
                       const char *templates)
{
    eng_score_t all = {0}, all_w = {0}, tpl = {0}, tpl_w = {0}, tpl_t = {0};
    printf("{\"templates\": ");
    if (templates)
        json_str(templates);
    else
        printf("null");
    printf(", \"kernels\": [");
    bool first = true;
    for (uint32_t k = 0; k < r->nkernels; k++) {
        const pdrive_kernel_t *pk = &r->kernels[k];
        uint32_t after;
        char desc[2048];
        if (pk->launches == 0)
            continue;
        bool t = has_template(p, k, &after);
        eng_pred_kernel_info_t ki = {0};
        eng_predictor_kernel_info(p, k, &ki);
        printf("%s\n  {\"name\": ", first ? "" : ",");
        first = false;
        json_str(src->kernel_names[k]);
        printf(", \"launches\": %llu, \"launches_templated\": %llu, \"has_template\": %s, "
               "\"samples_to_trust\": %u, \"unattributed_bytes\": %llu, \"template\": ",
               (unsigned long long)pk->launches, (unsigned long long)pk->launches_templated,
               t ? "true" : "false", after, (unsigned long long)ki.unattributed);
        json_str(eng_predictor_describe(p, k, desc, sizeof(desc)));
        printf(", ");
        json_score("predicted", &pk->pred);
        printf(", ");
        json_score("whole", &pk->whole);
        printf("}");
        eng_score_add(&all, &pk->pred);
        eng_score_add(&all_w, &pk->whole);
        if (t) {
            eng_score_add(&tpl, &pk->pred);
            eng_score_add(&tpl_w, &pk->whole);
            eng_score_add(&tpl_t, &pk->trusted);
        }
    }
    printf("\n],\n\"overall\": {");
    json_score("predicted", &all);
    printf(", ");
    json_score("whole", &all_w);
    printf("},\n\"templated\": {");
    json_score("predicted", &tpl);
    printf(", ");
    json_score("whole", &tpl_w);
    printf(", ");
    json_score("trusted_launches", &tpl_t);
    printf("}}\n");
}

int cmd_predict_report(int argc, char **argv)
{
    struct predict_report_opts o;
    int rc = predict_report_opts_read(argc, argv, &o);
    if (rc != 0) {
        predict_report_opts_free(&o);
        if (rc > 0)
            return rc;
        print_help();
        return 0;
    }
    const char *templates = o.templates;
    bool json = o.json;
    sim_source_t *src;
    rc = pdrive_open(CMD, &o.in, &src);
    if (rc != 0)
        goto free_sets;
    eng_predictor_t *p;
    if (eng_predictor_create(&p) != GMUX_OK) {
        rc = cli_fail(CMD, "out of memory");
        goto close_source;
    }
    if (templates) {
        char err[512];
        if (eng_tpl_db_load(p, templates, err, sizeof(err)) != GMUX_OK) {
            fprintf(stderr, "gmux %s: %s; going on with online learning\n", CMD, err);
            templates = NULL;
        }
    }
    pdrive_report_t r = {0};
    rc = pdrive_run(CMD, src, p, true, true, &r);
    if (rc == 0) {
        if (json)
            print_json(src, p, &r, templates);
        else
            print_text(src, p, &r, templates);
    }
    pdrive_report_fini(&r);
    eng_predictor_destroy(p);

close_source:
    sim_source_close(src);
free_sets:
    predict_report_opts_free(&o);
    return rc;
}

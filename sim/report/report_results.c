/* Results per backend as a table, JSON ("vpsim.results/1") and CSV. */
#include "report_results.h"

#include "../config/cfg_schema.h"
#include "../results/results_doc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void report_results_json_warnings(util_json *j, const results_cycle *r) { results_json_write_warnings(j, r); }

/* The record is results_doc's table (sim/results/results_json.c); the producer's blocks follow it. */
void report_results_json(util_json *j, const report_results_meta *m, const results_cycle *rs, int n,
                         const plan *p)
{
    const int mode = cfg_enum_index(results_mode_names, m->mode ? m->mode : "");
    if (mode < 0) {
        fprintf(stderr, "vpsim: internal error: results of mode '%s' (not one of model, run, import-trace)\n",
                m->mode ? m->mode : "(none)");
        abort();
    }
    /* The document points at the producer's data (written, never freed). */
    const results_doc d = {.mode = (results_mode)mode, .scenario = (char *)m->scenario,
                           .scenario_path = (char *)m->scenario_path, .system = (char *)m->system,
                           .model = (char *)m->model, .tp = m->tp, .batch = m->batch, .context = m->context,
                           .graph = m->graph, .expected_tokens = m->expected_tokens,
                           .tokens_formula = (char *)m->tokens_formula, .provenance = (char *)m->provenance,
                           .backends = (results_cycle *)rs, .n_backends = n, .plan = p};
    util_json_obj_begin(j);
    results_json_write_fields(j, &d);
    if (m->write_extra)
        m->write_extra(j, m->extra_ctx);
    util_json_obj_end(j); /* a pretty writer ends the document with a newline */
}

/* "yes" / "no" / "-" from an engine cell ("yes", "no: why", "n/a", ""). */
static const char *engine_short(const char *cell)
{
    if (!cell[0] || !strcmp(cell, "n/a"))
        return "-";
    return strncmp(cell, "yes", 3) ? "no" : "yes";
}

static void table_engines(util_buf *out, const results_cycle *rs, int n)
{
    bool any = false;
    for (int i = 0; i < n; i++) {
        const results_cycle *r = &rs[i];
        if (!r->engine_vllm[0] || !strcmp(r->engine_vllm, "n/a"))
            continue;
        if (!any)
            util_buf_printf(out, "\nwould the engine run this backend for the verify allreduce (vllm/sgl column; "
                                 "default settings, gates in sim/model/model_engine.c):\n");
        any = true;
        if (!strcmp(r->engine_vllm, r->engine_sglang))
            util_buf_printf(out, "  %-10s vllm, sglang: %s\n", r->backend, r->engine_vllm);
        else
            util_buf_printf(out, "  %-10s vllm: %s; sglang: %s\n", r->backend, r->engine_vllm, r->engine_sglang);
    }
}

/* Each distinct warning once, whatever number of backends it hits. */
static void table_warnings(util_buf *out, const results_cycle *rs, int n)
{
    bool any = false;
    for (int i = 0; i < n; i++)
        for (int w = 0; w < rs[i].n_warnings; w++) {
            const char *text = rs[i].warnings[w].text;
            bool seen = false;
            for (int k = 0; k <= i && !seen; k++)
                for (int v = 0; v < (k == i ? w : rs[k].n_warnings) && !seen; v++)
                    seen = !strcmp(rs[k].warnings[v].text, text);
            if (seen)
                continue;
            if (!any)
                util_buf_printf(out, "\nwarnings (figures that are not like for like):\n");
            any = true;
            util_buf_printf(out, "  ! %s\n", text);
        }
}

/* One line when every backend needs the same (only a custom backend's workspace differs). */
static void table_memory(util_buf *out, const results_cycle *rs, int n)
{
    int first = -1;
    bool same = true;
    for (int i = 0; i < n; i++) {
        if (!rs[i].mem_known)
            continue;
        if (first < 0)
            first = i;
        else if (fabs(rs[i].mem_gib - rs[first].mem_gib) >= 0.05)
            same = false;
    }
    if (first < 0)
        return;
    if (same) {
        util_buf_printf(out, "\nmemory per rank: %.1f of %.1f GiB (%s; vpsim plan lists the items)\n",
                        rs[first].mem_gib, rs[first].mem_capacity_gib, rs[first].fits ? "fits" : "does not fit");
        return;
    }
    util_buf_printf(out, "\nmemory per rank (vpsim plan lists the items):\n");
    for (int i = 0; i < n; i++)
        if (rs[i].mem_known)
            util_buf_printf(out, "  %-10s %.1f of %.1f GiB (%s)\n", rs[i].backend, rs[i].mem_gib,
                            rs[i].mem_capacity_gib, rs[i].fits ? "fits" : "does not fit");
}

void report_results_table(util_buf *out, const report_results_meta *m, const results_cycle *rs, int n)
{
    util_buf_printf(out, "%s: scenario %s on %s (%s), TP=%d, batch %d, context %d, %s\n",
                    m->mode ? m->mode : "results", m->scenario ? m->scenario : "?", m->system ? m->system : "?",
                    m->model ? m->model : "?", m->tp, m->batch, m->context, m->graph ? "CUDA graph" : "eager");
    if (m->tokens_formula)
        util_buf_printf(out, "tokens per cycle: %s\n", m->tokens_formula);
    util_buf_printf(out, "tok/s = tokens per cycle / cycle time; cycle = draft steps + verify + draft-extend + host\n"
                         "per request: tpot_ms = cycle_ms / tok/cyc; acc/cyc = draft tokens accepted per cycle "
                         "(engines' \"accept length\" = tok/cyc)\n\n");
    util_buf_printf(out, "%-10s %9s %9s %8s %8s %8s %8s %8s %8s %8s %7s %8s %8s %7s %8s\n", "backend", "allred_us",
                    "verify_ms", "comm", "gemm", "attn", "other", "draft_ms", "host_ms", "cycle_ms", "tok/cyc", "tok/s",
                    "tpot_ms", "acc/cyc", "vllm/sgl");
    for (int i = 0; i < n; i++) {
        const results_cycle *r = &rs[i];
        if (!r->available) {
            util_buf_printf(out, "%-10s %9s   (unavailable: see below)\n", r->backend, "-");
            continue;
        }
        char eng[16];
        snprintf(eng, sizeof(eng), "%s/%s", engine_short(r->engine_vllm), engine_short(r->engine_sglang));
        util_buf_printf(out, "%-10s %9.1f %9.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.3f %8.1f %8.2f %7.3f %8s\n",
                        r->backend, r->allreduce_us, r->verify_ms, r->verify_class_ms[PLAN_CLASS_COMM],
                        r->verify_class_ms[PLAN_CLASS_GEMM], r->verify_class_ms[PLAN_CLASS_ATTENTION],
                        r->verify_class_ms[PLAN_CLASS_OTHER], r->draft_ms, r->host_ms, r->cycle_ms,
                        r->tokens_per_cycle, r->tok_per_s, r->tpot_ms, r->accepted_per_cycle, eng);
    }
    bool any_method = false;
    for (int i = 0; i < n; i++) {
        if (rs[i].available && rs[i].allreduce_method[0]) {
            if (!any_method)
                util_buf_printf(out, "\nallreduce cost from:\n");
            any_method = true;
            util_buf_printf(out, "  %-10s %s\n", rs[i].backend, rs[i].allreduce_method);
        }
    }
    table_memory(out, rs, n);
    table_engines(out, rs, n);
    bool any_missing = false;
    for (int i = 0; i < n; i++) {
        if (!rs[i].available) {
            if (!any_missing)
                util_buf_printf(out, "\nunavailable:\n");
            any_missing = true;
            util_buf_printf(out, "  %-10s %s\n", rs[i].backend, rs[i].reason);
        }
    }
    table_warnings(out, rs, n);
}

static const char *const csv_cols[] = {"backend",         "available",      "reason",        "allreduce_us",
                                       "allreduce_method", "verify_ms",     "verify_comm_ms", "verify_gemm_ms",
                                       "verify_attention_ms", "verify_other_ms", "draft_ms",   "draft_extend_ms",
                                       "host_ms",          "cycle_ms",      "tokens_per_cycle", "tok_per_s",
                                       /* added later, at the end so that readers of the first columns work */
                                       "tpot_ms", "accepted_per_cycle", "engine_vllm", "engine_sglang",
                                       "nospec_tok_per_s", "warnings", "mem_gib", "mem_capacity_gib", "fits"};

int report_results_csv_column(const char *name)
{
    for (size_t i = 0; i < sizeof(csv_cols) / sizeof(csv_cols[0]); i++)
        if (!strcmp(csv_cols[i], name))
            return (int)i;
    return -1;
}

void report_results_csv_header(util_buf *out, const char *const *extra_keys, int n_extra)
{
    for (int i = 0; i < n_extra; i++) {
        util_csv_field(out, extra_keys[i]);
        util_buf_printf(out, ",");
    }
    for (size_t i = 0; i < sizeof(csv_cols) / sizeof(csv_cols[0]); i++)
        util_buf_printf(out, "%s%s", i ? "," : "", csv_cols[i]);
    util_buf_printf(out, "\n");
}

/* The columns after tok_per_s. Warnings are "code: text" joined by " | ". */
static void csv_tail(util_buf *out, const results_cycle *r)
{
    if (r->available)
        util_buf_printf(out, ",%.6g", r->tpot_ms);
    else
        util_buf_printf(out, ",");
    util_buf_printf(out, ",%.6g,", r->accepted_per_cycle);
    util_csv_field(out, r->engine_vllm);
    util_buf_printf(out, ",");
    util_csv_field(out, r->engine_sglang);
    util_buf_printf(out, ",");
    if (r->available && r->nospec_tok_per_s > 0)
        util_buf_printf(out, "%.6g", r->nospec_tok_per_s);
    util_buf_printf(out, ",");
    util_buf w = {0};
    for (int i = 0; i < r->n_warnings; i++)
        util_buf_printf(&w, "%s%s: %s", i ? " | " : "", r->warnings[i].code, r->warnings[i].text);
    util_csv_field(out, w.s ? w.s : "");
    util_buf_free(&w);
    if (r->mem_known)
        util_buf_printf(out, ",%.6g,%.6g,%s\n", r->mem_gib, r->mem_capacity_gib, r->fits ? "true" : "false");
    else
        util_buf_printf(out, ",,,\n");
}

void report_results_csv_row(util_buf *out, const char *const *extra_vals, int n_extra, const results_cycle *r)
{
    for (int i = 0; i < n_extra; i++) {
        util_csv_field(out, extra_vals[i]);
        util_buf_printf(out, ",");
    }
    util_csv_field(out, r->backend);
    util_buf_printf(out, ",%s,", r->available ? "true" : "false");
    util_csv_field(out, r->available ? "" : r->reason);
    if (!r->available) {
        util_buf_printf(out, ",,,,,,,,,,,,%.6g,", r->tokens_per_cycle);
        csv_tail(out, r);
        return;
    }
    util_buf_printf(out, ",%.6g,", r->allreduce_us);
    util_csv_field(out, r->allreduce_method);
    util_buf_printf(out, ",%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g", r->verify_ms,
                    r->verify_class_ms[PLAN_CLASS_COMM], r->verify_class_ms[PLAN_CLASS_GEMM],
                    r->verify_class_ms[PLAN_CLASS_ATTENTION], r->verify_class_ms[PLAN_CLASS_OTHER], r->draft_ms,
                    r->draft_extend_ms, r->host_ms, r->cycle_ms, r->tokens_per_cycle, r->tok_per_s);
    csv_tail(out, r);
}

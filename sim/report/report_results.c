/* Results per backend as a table, JSON ("vpsim.results/1") and CSV. */
#include "report_results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A number with six significant digits: enough for any figure here, and no binary noise
 * ("2.2000000000000002") in a document people read and diff. util_json_num prints 17 digits, so write a
 * null through the writer (which places commas) and replace its text. */
static void json_num6(util_json *j, double v)
{
    util_json_null(j);
    if (!isfinite(v))
        return;
    j->out.len -= 4;
    j->out.s[j->out.len] = '\0';
    util_buf_printf(&j->out, "%.6g", v);
}

static void knum6(util_json *j, const char *key, double v, bool present)
{
    util_json_key(j, key);
    if (present)
        json_num6(j, v);
    else
        util_json_null(j);
}

static void kstr_or_null(util_json *j, const char *key, const char *s)
{
    util_json_key(j, key);
    if (s)
        util_json_str(j, s);
    else
        util_json_null(j);
}

static const char *const class_keys[PLAN_CLASS_COUNT] = {"gemm_ms", "attention_ms", "comm_ms", "other_ms"};
static const char *const verify_class_keys[PLAN_CLASS_COUNT] = {"verify_gemm_ms", "verify_attention_ms",
                                                                "verify_comm_ms", "verify_other_ms"};

static void json_ops(util_json *j, const results_cycle *r, const plan *p)
{
    util_json_key(j, "ops");
    util_json_arr_begin(j);
    int idx = 0;
    for (int ph = 0; p && ph < p->n_phases; ph++) {
        for (int o = 0; o < p->phases[ph].n_ops && idx < r->n_op_us; o++, idx++) {
            const plan_op *op = &p->phases[ph].ops[o];
            util_json_obj_begin(j);
            util_json_kstr(j, "phase", p->phases[ph].name);
            util_json_kint(j, "index", o);
            util_json_kstr(j, "name", op->name);
            util_json_kstr(j, "kind", plan_op_kind_names[op->kind]);
            util_json_kint(j, "layer", op->layer);
            /* The op's size, so that `vpsim calibrate` can tell a run of other shapes (another TP, model or
             * --set) from this plan's op by op, not by names alone. */
            util_json_kint(j, "bytes", llround(op->bytes_read + op->bytes_written));
            knum6(j, "us", r->op_us[idx], true);
            util_json_obj_end(j);
        }
    }
    util_json_arr_end(j);
}

void report_results_json_warnings(util_json *j, const results_cycle *r)
{
    util_json_key(j, "warnings");
    util_json_arr_begin(j);
    for (int i = 0; i < r->n_warnings; i++) {
        util_json_obj_begin(j);
        util_json_kstr(j, "code", r->warnings[i].code);
        util_json_kstr(j, "text", r->warnings[i].text);
        util_json_obj_end(j);
    }
    util_json_arr_end(j);
}

static void json_backend(util_json *j, const results_cycle *r, const plan *p)
{
    const bool ok = r->available;
    util_json_obj_begin(j);
    util_json_kstr(j, "backend", r->backend);
    util_json_kbool(j, "available", ok);
    kstr_or_null(j, "reason", ok ? NULL : r->reason);
    knum6(j, "allreduce_us", r->allreduce_us, ok);
    kstr_or_null(j, "allreduce_method", ok ? r->allreduce_method : NULL);
    knum6(j, "allgather_us", r->allgather_us, ok);
    knum6(j, "verify_ms", r->verify_ms, ok);
    for (int c = 0; c < PLAN_CLASS_COUNT; c++)
        knum6(j, verify_class_keys[c], r->verify_class_ms[c], ok);
    knum6(j, "draft_ms", r->draft_ms, ok);
    knum6(j, "draft_steps_ms", r->draft_steps_ms, ok);
    knum6(j, "draft_extend_ms", r->draft_extend_ms, ok);
    knum6(j, "host_ms", r->host_ms, ok);
    knum6(j, "cycle_ms", r->cycle_ms, ok);
    knum6(j, "tokens_per_cycle", r->tokens_per_cycle, true);
    knum6(j, "tok_per_s", r->tok_per_s, ok);
    knum6(j, "tpot_ms", r->tpot_ms, ok);
    knum6(j, "accepted_per_cycle", r->accepted_per_cycle, true);
    knum6(j, "nospec_tok_per_s", r->nospec_tok_per_s, ok && r->nospec_tok_per_s > 0);
    knum6(j, "memory_gib", r->mem_gib, r->mem_known);
    knum6(j, "memory_capacity_gib", r->mem_capacity_gib, r->mem_known);
    util_json_key(j, "fits");
    if (r->mem_known)
        util_json_bool(j, r->fits);
    else
        util_json_null(j);
    util_json_key(j, "engine");
    util_json_obj_begin(j);
    kstr_or_null(j, "vllm", r->engine_vllm[0] ? r->engine_vllm : NULL);
    kstr_or_null(j, "sglang", r->engine_sglang[0] ? r->engine_sglang : NULL);
    util_json_obj_end(j);
    report_results_json_warnings(j, r);
    util_json_key(j, "phases");
    util_json_arr_begin(j);
    for (int i = 0; ok && i < r->n_phases; i++) {
        const results_phase *ph = &r->phases[i];
        util_json_obj_begin(j);
        util_json_kstr(j, "name", ph->name);
        util_json_kstr(j, "kind", plan_phase_kind_names[ph->kind]);
        knum6(j, "ms", ph->ms, true);
        for (int c = 0; c < PLAN_CLASS_COUNT; c++)
            knum6(j, class_keys[c], ph->class_ms[c], true);
        util_json_kint(j, "collectives", ph->collectives);
        knum6(j, "allreduce_us", ph->collective_us_mean, true);
        util_json_obj_end(j);
    }
    util_json_arr_end(j);
    if (ok && r->op_us)
        json_ops(j, r, p);
    util_json_obj_end(j);
}

void report_results_json(util_json *j, const report_results_meta *m, const results_cycle *rs, int n,
                         const plan *p)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "schema", RESULTS_SCHEMA);
    kstr_or_null(j, "mode", m->mode);
    kstr_or_null(j, "scenario", m->scenario);
    kstr_or_null(j, "scenario_path", m->scenario_path);
    kstr_or_null(j, "system", m->system);
    kstr_or_null(j, "model", m->model);
    util_json_kint(j, "tp", m->tp);
    util_json_kint(j, "batch", m->batch);
    util_json_kint(j, "context", m->context);
    util_json_kbool(j, "graph", m->graph);
    knum6(j, "expected_tokens", m->expected_tokens, true);
    kstr_or_null(j, "tokens_formula", m->tokens_formula);
    kstr_or_null(j, "tok_per_s_formula", "tok_per_s = tokens_per_cycle / (cycle_ms / 1000)");
    kstr_or_null(j, "provenance", m->provenance);
    util_json_key(j, "backends");
    util_json_arr_begin(j);
    for (int i = 0; i < n; i++)
        json_backend(j, &rs[i], p);
    util_json_arr_end(j);
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

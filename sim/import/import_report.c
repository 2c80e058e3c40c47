/* import_report: what `vpsim import-trace` prints and writes — the trace as a results row in the table,
 * JSON and Chrome trace of `vpsim run` (report_results.c, report_trace.c), then its own sections: the
 * phases' kernel time by kind with the gaps, each collective's call split into wire time and waiting
 * with the arrival skew's distribution, the kernels no pattern named, and the system file's fit. */
#include "import.h"

#include "../report/report.h"
#include "../report/report_meta.h"

#include <math.h>
#include <string.h>

static bool is_ar(int kind) { return kind == PLAN_OP_ALLREDUCE || kind == PLAN_OP_ALLREDUCE_NORM; }

void import_fill_results(const import_ctx *x, results_cycle *r)
{
    const trace_summary *s = x->sum;
    memset(r, 0, sizeof(*r));
    snprintf(r->backend, sizeof(r->backend), "%s (trace)", import_backend_key(x));
    r->available = true;
    r->tokens_per_cycle = x->plan->expected_tokens;
    for (int j = 0; j < s->n_phases && j < RESULTS_MAX_PHASES; j++) {
        const trace_phase_stats *ps = &s->phases[j];
        results_phase *o = &r->phases[r->n_phases++];
        snprintf(o->name, sizeof(o->name), "%s", ps->name);
        o->kind = ps->kind;
        o->ms = ps->ms;
        memcpy(o->class_ms, ps->class_ms, sizeof(o->class_ms));
        double sum = 0;
        for (int i = 0; i < ps->n_colls; i++)
            if (is_ar(ps->colls[i].kind)) {
                o->collectives += ps->colls[i].calls;
                sum += ps->colls[i].call_us * ps->colls[i].calls;
            }
        o->collective_us_mean = o->collectives ? sum / o->collectives : 0.0;
        if (ps->kind == PLAN_PHASE_VERIFY || ps->kind == PLAN_PHASE_DECODE)
            for (int i = 0; i < ps->n_colls; i++) {
                if (is_ar(ps->colls[i].kind))
                    r->allreduce_us = ps->colls[i].call_us;
                else if (ps->colls[i].kind == PLAN_OP_ALLGATHER)
                    r->allgather_us = ps->colls[i].call_us;
            }
    }
    snprintf(r->allreduce_method, sizeof(r->allreduce_method), "measured: server trace, mean call over %d rank(s) x "
             "%d cycle(s)", s->ranks, s->cycles);
    r->host_ms = s->host_ms;
    results_cycle_finish(r);
}

static report_results_meta meta_of(const import_ctx *x)
{
    report_results_meta m = report_meta_measured(x->scenario_path, x->sc, x->plan, "import-trace", x->sum->graph);
    m.provenance = x->tag;
    return m;
}

static const char *kind_label(int k) { return k >= 0 ? plan_op_kind_names[k] : "unmapped"; }

void import_report_table(util_buf *out, const import_ctx *x, const results_cycle *r, const import_fit *fit)
{
    const trace_summary *s = x->sum;
    const report_results_meta m = meta_of(x);
    util_buf_printf(out, "import-trace: %d rank(s), %d matched cycle(s) of %d draft step(s) + verify + draft-extend; "
                         "phases by %s; %s\n",
                    s->ranks, s->cycles, s->draft_steps,
                    s->marked ? "the engine's markers" : "the collective pattern (each pass ends at its logits all-gather)",
                    s->graph ? "CUDA graphs" : "eager launches");
    util_buf_printf(out, "%s\n\n", x->tag);
    report_results_table(out, &m, r, 1);
    const double named = s->kernel_us > 0 ? 100.0 * s->mapped_us / s->kernel_us : 0.0;
    util_buf_printf(out, "\nkernel time named by the patterns: %.1f %% of %.3f ms per cycle and rank\n", named,
                    s->kernel_us / 1e3);
    util_buf_printf(out, "cycle: %.3f ms = host %.3f ms + phases; period between cycle ends p10 %.3f  p50 %.3f  p90 "
                         "%.3f ms\n",
                    s->cycle_ms, s->host_ms, s->cycle_p10_ms, s->cycle_p50_ms, s->cycle_p90_ms);
    util_buf_printf(out, "\nper phase, per rank and cycle: kernel time by kind (us, every stream), idle on the main stream\n");
    util_buf_printf(out, "%-13s %9s", "phase", "ms");
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        if (k != PLAN_OP_ALLREDUCE_NORM && k != PLAN_OP_REDUCE_SCATTER && k != PLAN_OP_ALLTOALL)
            util_buf_printf(out, " %12.12s", plan_op_kind_names[k]);
    util_buf_printf(out, " %9s %9s %6s %8s %8s\n", "unmapped", "gaps_us", "gaps", "lead_us", "tail_us");
    for (int j = 0; j < s->n_phases; j++) {
        const trace_phase_stats *p = &s->phases[j];
        util_buf_printf(out, "%-13s %9.3f", p->name, p->ms);
        for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
            if (k != PLAN_OP_ALLREDUCE_NORM && k != PLAN_OP_REDUCE_SCATTER && k != PLAN_OP_ALLTOALL)
                util_buf_printf(out, " %12.1f", p->kernel_us[k] + (k == PLAN_OP_ALLREDUCE ? p->kernel_us[PLAN_OP_ALLREDUCE_NORM] : 0));
        util_buf_printf(out, " %9.1f %9.1f %6.0f %8.1f %8.1f\n", p->unmapped_us, p->gap_us, p->gaps, p->lead_us,
                        p->tail_us);
    }
    util_buf_printf(out, "\ncollectives, per call (wire = the last rank's kernel; wait = a rank's kernel less that; skew = "
                         "last arrival less first):\n");
    util_buf_printf(out, "%-13s %-10s %6s %9s %9s %9s %9s %9s %9s %9s %9s\n", "phase", "kind", "calls", "call_us",
                    "wire_us", "wait_us", "skew_p10", "skew_p50", "skew_p90", "skew_max", "clock_p50");
    for (int j = 0; j < s->n_phases; j++)
        for (int i = 0; i < s->phases[j].n_colls; i++) {
            const trace_coll_stats *c = &s->phases[j].colls[i];
            char clock[16];
            snprintf(clock, sizeof(clock), isnan(c->clock_skew_p50_us) ? "-" : "%.1f", c->clock_skew_p50_us);
            util_buf_printf(out, "%-13s %-10s %6d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9s\n", s->phases[j].name,
                            plan_op_kind_names[c->kind], c->calls, c->call_us, c->wire_us, c->wait_us, c->skew_p10_us,
                            c->skew_p50_us, c->skew_p90_us, c->skew_max_us, clock);
        }
    if (s->ranks == 1)
        util_buf_printf(out, "  one rank: no peer to wait for is in the trace, so a call's time is not split (wire = the "
                             "call)\n");
    else {
        util_buf_printf(out, "  mean wait per allreduce call, by rank (us):");
        for (int r2 = 0; r2 < s->ranks && r2 < 64; r2++)
            util_buf_printf(out, " %d:%.1f", r2, s->wait_by_rank_us[r2]);
        util_buf_printf(out, "\n  arrived last (waited for by the others), calls by rank:");
        for (int r2 = 0; r2 < s->ranks && r2 < 64; r2++)
            util_buf_printf(out, " %d:%d", r2, s->last_by_rank[r2]);
        util_buf_printf(out, "\n");
    }
    if (s->n_unmapped) {
        util_buf_printf(out, "\nkernels no pattern names (us per cycle and rank; add them to --kernels FILE):\n");
        for (int i = 0; i < s->n_unmapped; i++)
            util_buf_printf(out, "  %9.1f us  %6lld x  %s\n", s->unmapped[i].us, s->unmapped[i].count,
                            s->unmapped[i].name);
        if (s->unmapped_rest_us > 0)
            util_buf_printf(out, "  %9.1f us  (other names)\n", s->unmapped_rest_us);
    }
    if (fit && fit->checked) {
        const double err = s->cycle_ms > 0 ? 100.0 * (fit->model_cycle_ms - s->cycle_ms) / s->cycle_ms : 0.0;
        util_buf_printf(out, "\nsystem file: %s, per plan op on the critical path %.2f us of idle (%d ops), phase lead "
                             "%.1f us, host %.1f us\n",
                        x->out_path ? x->out_path : "(not written: --out FILE)", fit->gap_us, fit->main_ops,
                        fit->lead_us, fit->host_us);
        util_buf_printf(out, "model of it (%s, %s): cycle %.3f ms against the trace's %.3f ms (%+.1f %%); verify %.3f "
                             "against %.3f ms; allreduce %.1f against %.1f us\n",
                        import_backend_key(x), s->graph ? "run.graph=true" : "run.graph=false", fit->model_cycle_ms,
                        s->cycle_ms, err, fit->model_verify_ms, r->verify_ms, fit->model_allreduce_us, r->allreduce_us);
        if (fit->negative_gap < 0)
            util_buf_printf(out, "  note: the tables price the critical path %.2f us per op above the trace's; the gap "
                                 "is floored at 0\n",
                            -fit->negative_gap);
    }
}

typedef struct json_ctx {
    const import_ctx *x;
    const import_fit *fit;
} json_ctx;

static void coll_json(util_json *j, const trace_coll_stats *c)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "kind", plan_op_kind_names[c->kind]);
    util_json_kint(j, "calls_per_cycle", c->calls);
    util_json_knum(j, "call_us", c->call_us);
    util_json_knum(j, "wire_us", c->wire_us);
    util_json_knum(j, "wait_us", c->wait_us);
    util_json_key(j, "skew_us");
    util_json_obj_begin(j);
    util_json_knum(j, "mean", c->skew_mean_us);
    util_json_knum(j, "p10", c->skew_p10_us);
    util_json_knum(j, "p50", c->skew_p50_us);
    util_json_knum(j, "p90", c->skew_p90_us);
    util_json_knum(j, "max", c->skew_max_us);
    if (!isnan(c->clock_skew_p50_us))
        util_json_knum(j, "clock_p50", c->clock_skew_p50_us);
    util_json_kint(j, "samples", c->n_samples);
    util_json_obj_end(j);
    util_json_obj_end(j);
}

static void import_json_extra(util_json *j, const void *ctx)
{
    const json_ctx *jc = ctx;
    const import_ctx *x = jc->x;
    const trace_summary *s = x->sum;
    util_json_key(j, "import");
    util_json_obj_begin(j);
    util_json_kstr(j, "source", x->tag);
    util_json_key(j, "files");
    util_json_arr_begin(j);
    for (int r = 0; r < x->n_ranks; r++)
        util_json_str(j, x->ranks[r].path);
    util_json_arr_end(j);
    util_json_kint(j, "ranks", s->ranks);
    util_json_kint(j, "cycles", s->cycles);
    util_json_kint(j, "draft_steps", s->draft_steps);
    util_json_kstr(j, "phases_by", s->marked ? "markers" : "collective pattern");
    util_json_kbool(j, "graph", s->graph);
    util_json_knum(j, "cycle_ms", s->cycle_ms);
    util_json_knum(j, "host_ms", s->host_ms);
    util_json_knum(j, "cycle_p50_ms", s->cycle_p50_ms);
    util_json_knum(j, "kernel_us", s->kernel_us);
    util_json_knum(j, "named_fraction", s->kernel_us > 0 ? s->mapped_us / s->kernel_us : 0.0);
    util_json_key(j, "phases");
    util_json_arr_begin(j);
    for (int p = 0; p < s->n_phases; p++) {
        const trace_phase_stats *ps = &s->phases[p];
        util_json_obj_begin(j);
        util_json_kstr(j, "name", ps->name);
        util_json_knum(j, "ms", ps->ms);
        util_json_key(j, "kernel_us");
        util_json_obj_begin(j);
        for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
            if (ps->kernels[k] > 0)
                util_json_knum(j, plan_op_kind_names[k], ps->kernel_us[k]);
        util_json_obj_end(j);
        util_json_knum(j, "unmapped_us", ps->unmapped_us);
        util_json_knum(j, "gap_us", ps->gap_us);
        util_json_knum(j, "lead_us", ps->lead_us);
        util_json_knum(j, "tail_us", ps->tail_us);
        util_json_key(j, "collectives");
        util_json_arr_begin(j);
        for (int i = 0; i < ps->n_colls; i++)
            coll_json(j, &ps->colls[i]);
        util_json_arr_end(j);
        util_json_obj_end(j);
    }
    util_json_arr_end(j);
    util_json_key(j, "unmapped");
    util_json_arr_begin(j);
    for (int i = 0; i < s->n_unmapped; i++) {
        util_json_obj_begin(j);
        util_json_kstr(j, "name", s->unmapped[i].name);
        util_json_knum(j, "us", s->unmapped[i].us);
        util_json_kint(j, "count", s->unmapped[i].count);
        util_json_obj_end(j);
    }
    util_json_arr_end(j);
    if (jc->fit && jc->fit->checked) {
        util_json_key(j, "model_check");
        util_json_obj_begin(j);
        util_json_knum(j, "model_cycle_ms", jc->fit->model_cycle_ms);
        util_json_knum(j, "trace_cycle_ms", s->cycle_ms);
        util_json_knum(j, "error_pct", s->cycle_ms > 0 ? 100 * (jc->fit->model_cycle_ms - s->cycle_ms) / s->cycle_ms : 0);
        util_json_knum(j, "gap_per_op_us", jc->fit->gap_us);
        util_json_obj_end(j);
    }
    util_json_obj_end(j);
}

void import_report_json(util_buf *out, const import_ctx *x, const results_cycle *r, const import_fit *fit)
{
    report_results_meta m = meta_of(x);
    const json_ctx jc = {x, fit};
    m.write_extra = import_json_extra;
    m.extra_ctx = &jc;
    util_json j;
    util_json_init(&j, true);
    report_results_json(&j, &m, r, 1, NULL);
    util_buf_printf(&j.out, "\n");
    *out = j.out;
}

void import_report_chrome(util_buf *out, const import_ctx *x)
{
    util_json j;
    report_trace_begin(&j);
    for (int r = 0; r < x->n_ranks; r++) {
        const trace_rank *tr = &x->ranks[r];
        const trace_phase *ph = tr->phases.data;
        int first = -1, last = -1;
        for (int i = 0; i < (int)tr->phases.count; i++)
            if (ph[i].cycle == 0) {
                first = first < 0 ? i : first;
                last = i;
            }
        char name[32];
        snprintf(name, sizeof(name), "rank %d", tr->rank >= 0 ? tr->rank : r);
        report_trace_process(&j, r, name, plan_stream_names, PLAN_STREAM_COUNT);
        if (first < 0)
            continue;
        const trace_kernel *k = tr->kernels.data;
        const double t0 = ph[first].start;
        const int main_stream = ph[first].n ? k[ph[first].first].stream : 0;
        for (int p = first; p <= last; p++) {
            char pname[32];
            trace_phase_name(ph[p].kind, ph[p].step, pname, sizeof(pname));
            for (int i = ph[p].first; i < ph[p].first + ph[p].n; i++) {
                if (k[i].phase != p)
                    continue;
                const report_trace_ev e = {trace_name(tr, k[i].name), kind_label(k[i].kind), k[i].ts - t0, k[i].dur, r,
                                           k[i].stream == main_stream ? PLAN_STREAM_MAIN : PLAN_STREAM_SIDE, pname, -2, i};
                report_trace_event(&j, &e);
            }
        }
    }
    report_trace_end(&j, out);
}

/* import_system: the system file `vpsim import-trace --out F` writes — the scenario's system with the
 * server trace's measured figures put in, so that `vpsim model --system F` prices the scenario's plan
 * with that box's kernels, collectives and gaps — and the check that it reproduces the trace's cycle.
 *
 * What goes in, and why each is what it is:
 * - measured.ops.<kind>: a real server's kernels do not correspond one to one with the plan's ops (fused
 *   kernels, split-K reductions), so each (phase, kind, stream) keeps the trace's kernel time and spreads
 *   it over the plan's ops of that kind in proportion to the base system's cost of each (the roofline
 *   decides which op of a kind is the larger, the trace how long the kind takes). Points are per op size.
 * - measured.allreduce.<backend> / allgather_nccl: per payload, the mean call as the server's cycle
 *   sees it (wire time plus the wait for the last rank, split in the source text): the figure that
 *   reproduces the cycle. The split itself is in the report and the JSON.
 * - launch gaps: what the trace's critical path holds beyond those ops, per plan op on it (idle between
 *   kernels, and kernels the plan has no op for); the gap before a phase as graph_launch_us; the idle
 *   between cycles as host.cycle_overhead_us. */
#include "import.h"

#include "../calib/cal_system.h"
#include "../model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pt {
    double bytes, us;
    int count;
} pt;

static int cmp_pt(const void *a, const void *b)
{
    const pt *x = a, *y = b;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* Points of equal size merged (mean: the sum over the plan's ops stays), then the nearest neighbours in
 * log size until at most CAL_MAX_POINTS remain. */
static int merge_points(pt *p, int n)
{
    qsort(p, (size_t)n, sizeof(pt), cmp_pt);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && p[m - 1].bytes == p[i].bytes) {
            p[m - 1].us = (p[m - 1].us * p[m - 1].count + p[i].us * p[i].count) / (p[m - 1].count + p[i].count);
            p[m - 1].count += p[i].count;
        } else
            p[m++] = p[i];
    }
    while (m > CAL_MAX_POINTS) {
        int best = 0;
        for (int i = 1; i + 1 < m; i++)
            if (log(p[i + 1].bytes / p[i].bytes) < log(p[best + 1].bytes / p[best].bytes))
                best = i;
        const int c = p[best].count + p[best + 1].count;
        p[best].bytes = exp((log(p[best].bytes) * p[best].count + log(p[best + 1].bytes) * p[best + 1].count) / c);
        p[best].us = (p[best].us * p[best].count + p[best + 1].us * p[best + 1].count) / c;
        p[best].count = c;
        memmove(p + best + 1, p + best + 2, (size_t)(m - best - 2) * sizeof(pt));
        m--;
    }
    return m;
}

static void table_yaml(util_buf *o, const char *indent, const pt *p, int m)
{
    util_buf_printf(o, "%sbytes: [", indent);
    for (int i = 0; i < m; i++)
        util_buf_printf(o, "%s%.0f", i ? ", " : "", p[i].bytes);
    util_buf_printf(o, "]\n%sus: [", indent);
    for (int i = 0; i < m; i++)
        util_buf_printf(o, "%s%.4g", i ? ", " : "", p[i].us);
    util_buf_printf(o, "]\n");
}

/* The plan's phase for summary phase j (same name), or -1. */
static int plan_phase_of(const plan *p, const trace_summary *s, int j)
{
    for (int ph = 0; ph < p->n_phases; ph++)
        if (!strcmp(p->phases[ph].name, s->phases[j].name))
            return ph;
    return -1;
}

const char *import_backend_key(const import_ctx *x) { return x->custom_ar ? "oneshot" : "nccl"; }

int import_system_text(const import_ctx *x, util_buf *out, import_fit *fit)
{
    const trace_summary *s = x->sum;
    const plan *p = x->plan;
    const cfg_system *base = &x->sc->system;
    memset(fit, 0, sizeof(*fit));
    for (int j = 0; j < s->n_phases; j++)
        if (plan_phase_of(p, s, j) < 0) {
            fprintf(stderr, "vpsim import-trace: the trace's phase %s is not a phase of scenario %s's plan (its cycle: "
                            "%d draft step(s)): use a scenario with speculative.steps matching the server's\n",
                    s->phases[j].name, x->sc->name, s->draft_steps);
            return VP_EXIT_USAGE;
        }
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    pt *pts[PLAN_OP_KIND_COUNT];
    int npts[PLAN_OP_KIND_COUNT] = {0};
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        pts[k] = util_xcalloc((size_t)n_ops + 1, sizeof(pt));
    double model_main_us = 0.0, crit_us = 0.0, lead_us = 0.0;
    int main_ops = 0, leads = 0;
    for (int j = 0; j < s->n_phases; j++) {
        const trace_phase_stats *ts = &s->phases[j];
        const plan_phase *pp = &p->phases[plan_phase_of(p, s, j)];
        crit_us += ts->ms * 1e3 - ts->lead_us;
        if (j > 0) {
            lead_us += ts->lead_us;
            leads++;
        }
        for (int st = 0; st < PLAN_STREAM_COUNT; st++) {
            double measured[PLAN_OP_KIND_COUNT] = {0}, formula[PLAN_OP_KIND_COUNT] = {0};
            for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
                if (plan_op_is_compute((plan_op_kind)k))
                    measured[k] = st == PLAN_STREAM_MAIN ? ts->kernel_us[k] - ts->side_us[k] : ts->side_us[k];
            for (int i = 0; i < pp->n_ops; i++)
                if ((int)pp->ops[i].stream == st && plan_op_is_compute(pp->ops[i].kind))
                    formula[pp->ops[i].kind] += model_op_us(base, &pp->ops[i], false, NULL, NULL);
            /* A class (GEMMs; norms, element-wise and embedding) is spread as one where the trace names no
             * kernel of a kind the plan has, or kernels of a kind it has no op for: a MoE run as cuBLAS
             * batched GEMMs is named gemm, and per kind its time would land on the dense GEMMs and leave the
             * plan's grouped GEMMs at nothing, so their overlap with the side stream would be lost. */
            double class_meas[PLAN_CLASS_COUNT] = {0}, class_form[PLAN_CLASS_COUNT] = {0};
            bool mismatch[PLAN_CLASS_COUNT] = {0};
            for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
                const int c = (int)plan_op_class((plan_op_kind)k);
                class_meas[c] += measured[k];
                class_form[c] += formula[k];
                mismatch[c] |= (measured[k] > 0) != (formula[k] > 0);
            }
            for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
                if (!plan_op_is_compute((plan_op_kind)k))
                    continue;
                const int c = (int)plan_op_class((plan_op_kind)k);
                const bool pooled = mismatch[c] && class_meas[c] > 0 && class_form[c] > 0;
                const double scale = pooled ? class_meas[c] / class_form[c] : formula[k] > 0 ? measured[k] / formula[k] : 0.0;
                fit->pooled[k] |= pooled && formula[k] > 0;
                for (int i = 0; i < pp->n_ops; i++) {
                    const plan_op *op = &pp->ops[i];
                    if ((int)op->kind != k || (int)op->stream != st)
                        continue;
                    const double us = scale * model_op_us(base, op, false, NULL, NULL);
                    pts[k][npts[k]++] = (pt){op->bytes_read + op->bytes_written, us, 1};
                }
                if (!pooled && formula[k] <= 0 && measured[k] > 0)
                    fit->unplaced_us += measured[k];
            }
        }
    }
    util_buf fresh = {0};
    util_buf_printf(&fresh, "measured:\n  use: true\n  ops:\n");
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
        if (npts[k] == 0)
            continue;
        const int m = merge_points(pts[k], npts[k]);
        util_buf_printf(&fresh, "    %s:\n", plan_op_kind_names[k]);
        table_yaml(&fresh, "      ", pts[k], m);
        util_buf_printf(&fresh, "      source: \"%s; the trace's %s kernel time per phase spread over the plan's %d "
                                "ops in proportion to the base system's cost of each%s\"\n",
                        x->tag, plan_op_kind_names[k], npts[k],
                        fit->pooled[k] ? " (pooled with its class's other kinds: the trace names none of its kernels "
                                         "apart, or kernels of a kind the plan has no op for)"
                                       : "");
        npts[k] = m;
    }
    /* Collectives: per payload, the mean call (wire + wait) of the trace's calls in phases that have them. */
    const int coll_kinds[2] = {PLAN_OP_ALLREDUCE, PLAN_OP_ALLGATHER};
    for (int c = 0; c < 2; c++) {
        pt cp[TRACE_MAX_PHASES];
        int ncp = 0;
        double wire = 0, wait = 0, skew = 0;
        int nw = 0;
        for (int j = 0; j < s->n_phases; j++) {
            const plan_phase *pp = &p->phases[plan_phase_of(p, s, j)];
            for (int i = 0; i < s->phases[j].n_colls; i++) {
                const trace_coll_stats *cs = &s->phases[j].colls[i];
                const bool ar = cs->kind == PLAN_OP_ALLREDUCE || cs->kind == PLAN_OP_ALLREDUCE_NORM;
                if ((coll_kinds[c] == PLAN_OP_ALLREDUCE) != ar || (!ar && cs->kind != PLAN_OP_ALLGATHER))
                    continue;
                double payload = 0;
                for (int o = 0; o < pp->n_ops && payload == 0; o++)
                    if ((c == 0 && (pp->ops[o].kind == PLAN_OP_ALLREDUCE || pp->ops[o].kind == PLAN_OP_ALLREDUCE_NORM)) ||
                        (c == 1 && pp->ops[o].kind == PLAN_OP_ALLGATHER))
                        payload = (double)pp->ops[o].payload_bytes;
                if (payload <= 0)
                    continue;
                cp[ncp++] = (pt){payload, cs->call_us, cs->calls > 0 ? cs->calls : 1};
                wire += cs->wire_us * cs->calls;
                wait += cs->wait_us * cs->calls;
                skew += cs->skew_p50_us * cs->calls;
                nw += cs->calls;
            }
        }
        if (ncp == 0)
            continue;
        const int m = merge_points(cp, ncp);
        if (c == 0)
            util_buf_printf(&fresh, "  allreduce:\n    %s:\n", import_backend_key(x));
        else
            util_buf_printf(&fresh, "  allgather_nccl:\n");
        const char *in = c == 0 ? "      " : "    ";
        util_buf_printf(&fresh, "%sranks: %d\n%slaunch: %s\n", in, p->ranks, in, s->graph ? "graph" : "eager");
        table_yaml(&fresh, in, cp, m);
        util_buf_printf(&fresh, "%ssource: \"%s; a call as the server's cycle sees it: wire %.1f us + waiting for "
                                "peers %.1f us (arrival skew p50 %.1f us across %d rank(s))\"\n",
                        in, x->tag, nw ? wire / nw : 0, nw ? wait / nw : 0, nw ? skew / nw : 0, s->ranks);
    }
    /* What the tables price on the critical path, against what the trace's holds. */
    for (int j = 0; j < s->n_phases; j++) {
        const plan_phase *pp = &p->phases[plan_phase_of(p, s, j)];
        for (int i = 0; i < pp->n_ops; i++) {
            const plan_op *op = &pp->ops[i];
            if (op->stream != PLAN_STREAM_MAIN)
                continue;
            main_ops++;
            const double b = plan_op_is_collective(op->kind) ? (double)op->payload_bytes : op->bytes_read + op->bytes_written;
            if (plan_op_is_collective(op->kind)) {
                for (int c2 = 0; c2 < s->phases[j].n_colls; c2++) {
                    const trace_coll_stats *cs = &s->phases[j].colls[c2];
                    if (cs->kind == (int)op->kind || (cs->kind == PLAN_OP_ALLREDUCE_NORM && op->kind == PLAN_OP_ALLREDUCE))
                        model_main_us += cs->call_us;
                }
                (void)b;
                continue;
            }
            for (int q = 0; q < npts[op->kind]; q++)
                if (pts[op->kind][q].bytes == b)
                    model_main_us += pts[op->kind][q].us;
        }
    }
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++)
        free(pts[k]);
    fit->lead_us = leads ? lead_us / leads : 0.0;
    const double idle = crit_us - model_main_us + (s->graph ? 0.0 : lead_us);
    fit->gap_us = main_ops ? idle / main_ops : 0.0;
    if (fit->gap_us < 0) {
        fit->negative_gap = fit->gap_us;
        fit->gap_us = 0;
    }
    fit->host_us = s->host_ms * 1e3 - (s->graph ? fit->lead_us : 0.0);
    if (fit->host_us < 0)
        fit->host_us = 0;
    fit->main_ops = main_ops;
    util_buf_printf(&fresh, "launch:\n");
    if (s->graph)
        util_buf_printf(&fresh, "  graph_node_us: %.4g\n  graph_launch_us: %.4g\n", fit->gap_us, fit->lead_us);
    else {
        const double cap = fit->gap_us;
        util_buf_printf(&fresh, "  eager_gap_us: %.4g\n  eager_us: %.4g\n  eager_collective_us: %.4g\n  eager_jitter_us: 0\n",
                        fit->gap_us, base->launch.eager_us < cap ? base->launch.eager_us : cap,
                        base->launch.eager_collective_us < cap ? base->launch.eager_collective_us : cap);
    }
    util_buf_printf(&fresh, "host:\n  cycle_overhead_us: %.4g\n", fit->host_us);
    /* A trace of a TP=N job is a box of at least N GPUs, whatever the base says (a one-GPU base, or the
     * one-GPU fixture that stands in for one rank of N). */
    if (base->gpus < p->ranks)
        util_buf_printf(&fresh, "gpus: %d\n", p->ranks);
    char note_gap[900], note_lead[800], note_host[800], note_cap[800], note_jit[800], note_gpus[800];
    snprintf(note_gpus, sizeof(note_gpus), "%s: the plan's TP (the traces are of a TP=%d job; the base has %d)", x->tag,
             p->ranks, base->gpus);
    snprintf(note_gap, sizeof(note_gap), "%s: per op of the plan's critical path (%d ops), the trace's idle between "
             "kernels plus kernels the plan has no op for (%.0f us per cycle)", x->tag, main_ops, fit->unplaced_us);
    snprintf(note_lead, sizeof(note_lead), "%s: the idle before a phase's first kernel after the previous phase", x->tag);
    snprintf(note_host, sizeof(note_host), "%s: the idle between a cycle's last kernel and the next cycle's first%s",
             x->tag, s->graph ? ", less one graph launch" : "");
    snprintf(note_cap, sizeof(note_cap), "%s: at most the per-op idle, which already holds the host's pace", x->tag);
    snprintf(note_jit, sizeof(note_jit), "%s: 0, since the measured waits for peers are inside measured.allreduce",
             x->tag);
    const cal_note notes[] = {{"launch.graph_node_us", note_gap}, {"launch.graph_launch_us", note_lead},
                              {"launch.eager_gap_us", note_gap},  {"launch.eager_us", note_cap},
                              {"launch.eager_collective_us", note_cap}, {"launch.eager_jitter_us", note_jit},
                              {"host.cycle_overhead_us", note_host}, {"gpus", note_gpus}};
    util_buf header = {0};
    util_buf_printf(&header, "# System file written by `vpsim import-trace`\n"
                             "#   base:     %s (its values with the comments beside them, and its header below)\n"
                             "#   measured: %s (%d rank(s), %d cycle(s), %s)\n"
                             "#   scenario: %s (the plan whose ops the kernel times are spread over)\n",
                    x->sc->system_path, x->files, s->ranks, s->cycles, s->graph ? "CUDA graphs" : "eager launches",
                    x->sc->name);
    const char *clear[] = {"measured.allreduce", "measured.allgather_nccl"};
    const cal_system_spec spec = {.cmd = "import-trace", .base_opt = "--system", .what = "the imported system file",
                                  .base = x->sc->system_path, .fresh_text = fresh.s, .header = header.s,
                                  .clear = clear, .n_clear = 2, .notes = notes,
                                  .n_notes = (int)(sizeof(notes) / sizeof(notes[0]))};
    const int rc = cal_system_write(&spec, out);
    util_buf_free(&fresh);
    util_buf_free(&header);
    return rc;
}

int import_round_trip(const import_ctx *x, const char *system_path, import_fit *fit)
{
    cfg_scenario sc;
    cfg_error err;
    const char *sets[CFG_MAX_SETS + 1];
    int n = 0;
    for (int i = 0; i < x->n_sets; i++)
        sets[n++] = x->sets[i];
    sets[n++] = x->sum->graph ? "run.graph=true" : "run.graph=false";
    if (cfg_scenario_load(x->sc->path, sets, n, system_path, &sc, &err)) {
        fprintf(stderr, "vpsim import-trace: the written system file does not load with the scenario: %s\n", err.msg);
        return VP_EXIT_FAIL;
    }
    char why[256];
    model_ctx *ctx = model_prepare(&sc, x->plan, why, sizeof(why));
    int rc = VP_EXIT_OK;
    if (!ctx) {
        fprintf(stderr, "vpsim import-trace: model mode refuses the written system file: %s\n", why);
        rc = VP_EXIT_FAIL;
    } else {
        results_cycle r;
        const int be = cfg_enum_index(cfg_backend_names, import_backend_key(x));
        model_eval(ctx, (cfg_backend)be, false, &r);
        if (!r.available) {
            fprintf(stderr, "vpsim import-trace: model mode cannot run backend %s on the written system file: %s\n",
                    import_backend_key(x), r.reason);
            rc = VP_EXIT_USAGE;
        }
        fit->model_cycle_ms = r.cycle_ms;
        fit->model_verify_ms = r.verify_ms;
        fit->model_allreduce_us = r.allreduce_us;
        results_cycle_free(&r);
        model_free(ctx);
    }
    cfg_scenario_free(&sc);
    return rc;
}

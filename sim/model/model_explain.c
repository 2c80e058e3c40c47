/* --explain: every term of every formula for one verify allreduce per backend and for one decoder layer;
 * how each backend's cycle total is built (phases, op classes, largest ops); and the inputs the answer
 * is most sensitive to, with their provenance. */
#include "model_internal.h"
#include "model_topo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void print_terms(util_buf *out, const model_terms *t, const char *indent)
{
    for (int i = 0; i < t->n; i++) {
        const model_term *x = &t->t[i];
        util_buf_printf(out, "%s%-16s %12.4g %-5s %s\n", indent, x->name, x->value, x->unit, x->note);
    }
}

/* Long provenance text, wrapped at word boundaries so that nothing is cut mid-word. */
static void print_wrapped(util_buf *out, const char *lead, const char *text)
{
    const int width = 100, indent = (int)strlen(lead);
    util_buf_printf(out, "%s", lead);
    int col = indent;
    while (*text) {
        const int w = (int)strcspn(text, " ");
        if (col > indent && col + 1 + w > width) {
            util_buf_printf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            util_buf_printf(out, " ");
            col++;
        }
        util_buf_printf(out, "%.*s", w, text);
        col += w;
        text += w;
        while (*text == ' ')
            text++;
    }
    util_buf_printf(out, "\n");
}

static void explain_system(util_buf *out, const model_ctx *ctx)
{
    const cfg_system *s = &ctx->sc->system;
    util_buf_printf(out, "system %s: %d x %s, %s, p2p %s, %d socket(s), %s, CPU %s\n", s->name, s->gpus, s->gpu.name,
                    cfg_interconnect_names[s->topology.interconnect], cfg_p2p_names[s->topology.p2p],
                    s->topology.sockets,
                    s->topology.gpus_per_switch ? "GPUs behind PCIe switches" : "GPUs attached to the root complex",
                    cfg_cpu_vendor_names[s->topology.cpu_vendor]);
    const int n = ctx->p->ranks;
    if (n > 1 && n <= s->gpus && n <= MODEL_MAX_RANKS) {
        util_buf_printf(out, "NCCL path types between the %d ranks (rank i on GPU i):\n", n);
        for (int a = 0; a < n; a++) {
            util_buf_printf(out, "  GPU %-2d (socket %d, switch %2d):", a, model_topo_socket(s, a),
                            model_topo_switch(s, a));
            for (int b = 0; b < n; b++)
                util_buf_printf(out, " %4s", a == b ? "-" : model_path_type_names[model_topo_path_type(s, a, b)]);
            util_buf_printf(out, "\n");
        }
        double worst = 0.0, route = 0.0;
        const char *src = "";
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                if (a != b) {
                    worst = fmax(worst, model_link_visible_us(s, a, b, &src));
                    route = fmax(route, model_topo_latency(s, a, b));
                }
        util_buf_printf(out, "  slowest peer store to be seen: %.2f us (%s; the links' route gives %.2f us)\n", worst,
                        src, route);
        if (s->paths.gpus > 0)
            util_buf_printf(out, "  paths: %d GPUs, %s%s%s\n", s->paths.gpus,
                            s->paths.source && *s->paths.source ? s->paths.source : "no source given",
                            s->paths.findings && *s->paths.findings ? "; findings: " : "",
                            s->paths.findings ? s->paths.findings : "");
    }
    util_buf_printf(out, "launch: %s; working set per cycle %.2f GiB %s L2 (%.0f MiB)\n\n",
                    ctx->graph ? "CUDA graph per phase" : "eager (host runs ahead of the GPU)",
                    ctx->working_set_bytes / 1073741824.0, ctx->in_l2 ? "fits in" : "exceeds", s->gpu.l2_mb);
}

static const plan_op *find_collective(const plan *p, plan_op_kind kind)
{
    const plan_phase *v = plan_find_phase(p, "verify");
    if (!v)
        v = plan_find_phase(p, "decode");
    /* A decoder layer's collective rather than the embedding's: that is the one repeated 122 times. */
    for (int i = 0; v && i < v->n_ops; i++)
        if (v->ops[i].kind == kind && v->ops[i].layer >= 0)
            return &v->ops[i];
    for (int i = 0; v && i < v->n_ops; i++)
        if (v->ops[i].kind == kind)
            return &v->ops[i];
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++)
            if (p->phases[ph].ops[i].kind == kind)
                return &p->phases[ph].ops[i];
    return NULL;
}

/* One collective of `kind` (a decoder layer's where there is one) on every backend, with its terms. */
static void explain_collective(util_buf *out, const model_ctx *ctx, const cfg_backend *bes, int n_bes,
                               plan_op_kind kind)
{
    const plan_op *ar = find_collective(ctx->p, kind);
    if (!ar) {
        util_buf_printf(out, "no %s in this plan (TP=%d)\n\n", plan_op_kind_names[kind], ctx->p->ranks);
        return;
    }
    util_buf_printf(out, "one %s: %s, layer %d, %lld B per rank over %d ranks\n", plan_op_kind_names[kind], ar->name,
                    ar->layer, ar->payload_bytes, ar->ranks);
    for (int b = 0; b < n_bes; b++) {
        model_terms t;
        t.n = 0;
        model_coll c;
        model_collective(&ctx->sc->system, bes[b], kind, (double)ar->payload_bytes, ar->ranks, &t, &c);
        if (!c.available) {
            util_buf_printf(out, "  %s: unavailable: %s\n", cfg_backend_names[bes[b]], c.reason);
            continue;
        }
        util_buf_printf(out, "  %s = %.2f us  (%s)\n", cfg_backend_names[bes[b]], c.us, c.method);
        print_terms(out, &t, "      ");
        if (c.table)
            print_wrapped(out, "      source: ", c.table->source && c.table->source[0] ? c.table->source : "not given");
    }
    util_buf_printf(out, "\n");
}

/* fusion.allreduce_residual_norm: one fused op's norm part per backend (its allreduce is as above). */
static void explain_allreduce_norm(util_buf *out, const model_ctx *ctx, const cfg_backend *bes, int n_bes)
{
    const plan_op *op = find_collective(ctx->p, PLAN_OP_ALLREDUCE_NORM);
    if (!op)
        return;
    const cfg_system *s = &ctx->sc->system;
    util_buf_printf(out, "one allreduce_norm: %s, layer %d, %lld rows x %lld: its allreduce (as above) + the residual "
                         "add and RMSNorm\n", op->name, op->layer, op->m, op->n);
    for (int b = 0; b < n_bes; b++) {
        model_terms t;
        t.n = 0;
        const bool fused = model_backend_fuses_norm(bes[b]);
        const double us = model_norm_part_us(s, fused, op, ctx->in_l2, &t);
        util_buf_printf(out, "  %s: norm part %.2f us (%s)\n", cfg_backend_names[bes[b]], us,
                        fused ? "fused epilogue, no launch" : "separate kernel, plus its launch or graph-node gap");
        print_terms(out, &t, "      ");
    }
    util_buf_printf(out, "\n");
}

/* A representative layer: the verify pass's second decoder layer (the first MoE layer of DeepSeek-V3). */
static void explain_layer(util_buf *out, const model_ctx *ctx)
{
    const plan *p = ctx->p;
    const cfg_system *s = &ctx->sc->system;
    int ph = 0;
    for (int i = 0; i < p->n_phases; i++)
        if (p->phases[i].kind == PLAN_PHASE_VERIFY || p->phases[i].kind == PLAN_PHASE_DECODE)
            ph = i;
    const plan_phase *phase = &p->phases[ph];
    const int layer = ctx->sc->target.layers > 1 ? 1 : 0;
    const double gap = ctx->graph ? s->launch.graph_node_us : s->launch.eager_gap_us;
    util_buf_printf(out, "one layer: %s layer %d, compute ops (collectives above); kernel gap %.2f us (%s)\n",
                    phase->name, layer, gap, ctx->graph ? "launch.graph_node_us" : "launch.eager_gap_us");
    double sum = 0.0;
    for (int i = 0; i < phase->n_ops; i++) {
        const plan_op *op = &phase->ops[i];
        if (op->layer != layer || plan_op_is_collective(op->kind))
            continue;
        model_terms t;
        t.n = 0;
        const char *src = NULL;
        const double us = model_op_us(s, op, ctx->in_l2, &t, &src);
        util_buf_printf(out, "  %-26s %-12s %-4s %8.2f us (%s)\n", op->name, plan_op_kind_names[op->kind],
                        plan_stream_names[op->stream], us, src);
        print_terms(out, &t, "      ");
        if (strcmp(src, "probed") == 0) { /* the law's provenance, whole: it can be long */
            const int c = plan_op_law_class(op, NULL);
            const cfg_law_table *law = &s->measured.compute[c];
            char lead[64];
            snprintf(lead, sizeof(lead), "      measured.compute.%s source: ", cfg_law_names[c]);
            print_wrapped(out, lead, law->source && law->source[0] ? law->source : "not given");
        }
        sum += us + gap;
    }
    const int base = ctx->phases[ph].first;
    for (int g = 0; g < ctx->n_regions; g++) {
        const model_region *r = &ctx->regions[g];
        if (r->first < base || r->first >= base + phase->n_ops || phase->ops[r->first - base].layer != layer)
            continue;
        util_buf_printf(out, "  side-stream overlap (%s .. %s): max(main %.2f, side %.2f, all bytes through DRAM "
                             "%.2f) = %.2f us\n",
                        phase->ops[r->first - base].name, phase->ops[r->last - base].name, r->t_main, r->t_side,
                        r->t_mem, r->t);
        sum -= r->t_main + r->t_side - r->t;
    }
    util_buf_printf(out, "  layer compute on the critical path: %.2f us (kernels + gaps, overlap applied)\n\n", sum);
}

/* The largest ops of one phase by their own kernel time summed over layers (not their critical-path
 * share: side-stream ops overlap), with the source of each figure. */
#define EXPLAIN_TOP_OPS 5

typedef struct op_sum {
    const char *name;
    int n;
    double us;
    const char *src;
} op_sum;

static int by_us(const void *a, const void *b)
{
    const op_sum *x = a, *y = b;
    return (y->us > x->us) - (y->us < x->us);
}

static void explain_largest_ops(util_buf *out, const model_ctx *ctx, const results_cycle *r, int ph)
{
    const plan_phase *phase = &ctx->p->phases[ph];
    const int first = ctx->phases[ph].first;
    op_sum *sums = util_xcalloc((size_t)phase->n_ops + 1, sizeof(*sums));
    int n = 0;
    for (int i = 0; i < phase->n_ops && first + i < r->n_op_us; i++) {
        const plan_op *op = &phase->ops[i];
        int k = 0;
        while (k < n && strcmp(sums[k].name, op->name) != 0)
            k++;
        if (k == n) {
            sums[n].name = op->name;
            if (plan_op_is_collective(op->kind))
                sums[n].src = op->kind == PLAN_OP_ALLTOALL ? "all-to-all formula, terms above" : r->allreduce_method;
            else
                model_op_us(&ctx->sc->system, op, ctx->in_l2, NULL, &sums[n].src);
            n++;
        }
        sums[k].n++;
        sums[k].us += r->op_us[first + i];
    }
    qsort(sums, (size_t)n, sizeof(*sums), by_us);
    for (int k = 0; k < n && k < EXPLAIN_TOP_OPS; k++)
        util_buf_printf(out, "        %-26s %4d x %8.2f us = %7.3f ms  (%s)\n", sums[k].name, sums[k].n,
                        sums[k].us / sums[k].n, sums[k].us / 1000.0, sums[k].src ? sums[k].src : "formula");
    free(sums);
}

/* How one backend's cycle total is built: phases, then op classes, then the largest ops. */
static void explain_cycle(util_buf *out, const model_ctx *ctx, cfg_backend be)
{
    results_cycle r;
    model_eval(ctx, be, true, &r);
    if (!r.available) {
        util_buf_printf(out, "the cycle with %s: unavailable: %s\n\n", cfg_backend_names[be], r.reason);
        results_cycle_free(&r);
        return;
    }
    util_buf_printf(out, "the cycle with %s: %.3f ms -> %.1f tok/s at %.3f tokens per cycle\n", r.backend,
                    r.cycle_ms, r.tok_per_s, r.tokens_per_cycle);
    for (int ph = 0; ph < r.n_phases; ph++) {
        const results_phase *x = &r.phases[ph];
        util_buf_printf(out, "  %-22s %8.3f ms %5.1f%%  ", x->name, x->ms, 100.0 * x->ms / r.cycle_ms);
        for (int c = 0; c < PLAN_CLASS_COUNT; c++)
            util_buf_printf(out, " %s %.3f", plan_class_names[c], x->class_ms[c]);
        if (x->collectives)
            util_buf_printf(out, "  (%d collectives, mean %.1f us)", x->collectives, x->collective_us_mean);
        util_buf_printf(out, "\n");
        /* Op detail for the phases that carry the cycle: a draft step repeats the same few ops. */
        if (x->ms >= 0.1 * r.cycle_ms)
            explain_largest_ops(out, ctx, &r, ph);
    }
    for (int ph = 0; ph < ctx->p->n_phases; ph++)
        if (ctx->phases[ph].tbo) {
            model_tbo_explain(out, ctx, be);
            break;
        }
    util_buf_printf(out, "  %-22s %8.3f ms %5.1f%%   host.cycle_overhead_us%s (system-file values: tags below)\n\n",
                    "host", r.host_ms, 100.0 * r.host_ms / r.cycle_ms,
                    ctx->sc->speculative.topk > 1 ? " + host.tree_overhead_us" : "");
    results_cycle_free(&r);
}

#define EXPLAIN_SENS_FRAC 0.2
#define EXPLAIN_SENS_TOP 8

/* The inputs whose +-20% moves tok/s most, per backend, with each one's provenance tag. */
static void explain_sensitivity(util_buf *out, const model_ctx *ctx, const cfg_backend *bes, int n_bes)
{
    util_buf_printf(out, "what the answer rests on: inputs whose %+.0f%% / %+.0f%% moves tok/s most (each moved alone; "
                         "tag = the comment beside it in the system file)\n",
                    -100 * EXPLAIN_SENS_FRAC, 100 * EXPLAIN_SENS_FRAC);
    model_sens_item items[EXPLAIN_SENS_TOP];
    for (int b = 0; b < n_bes; b++) {
        const int n = model_sensitivity(ctx->sc, ctx->p, bes[b], EXPLAIN_SENS_FRAC, items, EXPLAIN_SENS_TOP);
        if (n == 0)
            continue;
        util_buf_printf(out, "  %s (%.1f tok/s):\n", cfg_backend_names[bes[b]], items[0].base_tok_per_s);
        for (int i = 0; i < n; i++) {
            const model_sens_item *x = &items[i];
            util_buf_printf(out, "    %-42s %-10s %10.4g%s  tok/s %7.1f .. %7.1f  (%+5.1f%% .. %+5.1f%%)%s\n", x->key,
                            x->tag, x->value, x->count > 1 ? " (all)" : "      ", x->lo_tok_per_s, x->hi_tok_per_s,
                            100.0 * (x->lo_tok_per_s / x->base_tok_per_s - 1.0),
                            100.0 * (x->hi_tok_per_s / x->base_tok_per_s - 1.0), x->clamped ? "  clamped to range" : "");
        }
    }
    util_buf_printf(out, "\n");
}

void model_explain(util_buf *out, const model_ctx *ctx, const cfg_backend *bes, int n_bes)
{
    explain_system(out, ctx);
    explain_collective(out, ctx, bes, n_bes, PLAN_OP_ALLREDUCE);
    if (ctx->sc->collectives.allreduce_split && ctx->p->ranks > 1) {
        /* The split's halves, as a decoder layer runs them (plan_split.c). */
        explain_collective(out, ctx, bes, n_bes, PLAN_OP_REDUCE_SCATTER);
        explain_collective(out, ctx, bes, n_bes, PLAN_OP_ALLGATHER);
    }
    /* Expert parallelism (parallel.ep): its dispatch/combine all-to-all has a formula of its own. */
    if (find_collective(ctx->p, PLAN_OP_ALLTOALL))
        explain_collective(out, ctx, bes, n_bes, PLAN_OP_ALLTOALL);
    explain_allreduce_norm(out, ctx, bes, n_bes);
    explain_layer(out, ctx);
    for (int b = 0; b < n_bes; b++)
        explain_cycle(out, ctx, bes[b]);
    char tok[256];
    model_tokens_formula(ctx->sc, tok, sizeof(tok));
    util_buf_printf(out, "tokens per cycle = %s\n", tok);
    if (ctx->sc->speculative.topk > 1)
        util_buf_printf(out, "cycle = draft steps + verify + draft-extend + host (host.cycle_overhead_us %.0f + "
                             "host.tree_overhead_us %.0f us)\n",
                        ctx->sc->system.host.cycle_overhead_us, ctx->sc->system.host.tree_overhead_us);
    else
        util_buf_printf(out, "cycle = draft steps + verify + draft-extend + host.cycle_overhead_us (%.0f us)\n",
                        ctx->sc->system.host.cycle_overhead_us);
    util_buf_printf(out, "tok/s = tokens per cycle / (cycle ms / 1000)\n\n");
    explain_sensitivity(out, ctx, bes, n_bes);
}

/* --explain: every term of every formula for one verify allreduce per backend and for one decoder layer. */
#include "model_internal.h"
#include "model_topo.h"

#include <math.h>
#include <string.h>

static void print_terms(util_buf *out, const model_terms *t, const char *indent)
{
    for (int i = 0; i < t->n; i++) {
        const model_term *x = &t->t[i];
        util_buf_printf(out, "%s%-16s %12.4g %-5s %s\n", indent, x->name, x->value, x->unit, x->note);
    }
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
        double worst = 0.0;
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                if (a != b && model_topo_latency(s, a, b) > worst)
                    worst = model_topo_latency(s, a, b);
        util_buf_printf(out, "  slowest one-way latency between ranks: %.2f us\n", worst);
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

static void explain_collective(util_buf *out, const model_ctx *ctx, const cfg_backend *bes, int n_bes)
{
    const plan_op *ar = find_collective(ctx->p, PLAN_OP_ALLREDUCE);
    if (!ar) {
        util_buf_printf(out, "no allreduce in this plan (TP=%d)\n\n", ctx->p->ranks);
        return;
    }
    util_buf_printf(out, "one allreduce: %s, layer %d, %lld B per rank over %d ranks\n", ar->name, ar->layer,
                    ar->payload_bytes, ar->ranks);
    for (int b = 0; b < n_bes; b++) {
        model_terms t;
        t.n = 0;
        model_coll c;
        model_collective(&ctx->sc->system, bes[b], PLAN_OP_ALLREDUCE, (double)ar->payload_bytes, ar->ranks, &t, &c);
        if (!c.available) {
            util_buf_printf(out, "  %s: unavailable: %s\n", cfg_backend_names[bes[b]], c.reason);
            continue;
        }
        util_buf_printf(out, "  %s = %.2f us  (%s)\n", cfg_backend_names[bes[b]], c.us, c.method);
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

void model_explain(util_buf *out, const model_ctx *ctx, const cfg_backend *bes, int n_bes)
{
    explain_system(out, ctx);
    explain_collective(out, ctx, bes, n_bes);
    explain_layer(out, ctx);
    char tok[256];
    model_tokens_formula(ctx->sc, tok, sizeof(tok));
    util_buf_printf(out, "tokens per cycle = 1 + sum over draft positions of the chained acceptance = %s\n", tok);
    util_buf_printf(out, "cycle = draft steps + verify + draft-extend + host.cycle_overhead_us (%.0f us)\n",
                    ctx->sc->system.host.cycle_overhead_us);
    util_buf_printf(out, "tok/s = tokens per cycle / (cycle ms / 1000)\n\n");
}

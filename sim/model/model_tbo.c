/* Two-batch overlap: the critical path of the two interleaved micro-batches of a split target phase
 * (plan_tbo.c). Formula and assumptions in docs/model.md ("Two-batch overlap").
 *
 * Two dependency chains (micro-batches a and b: each op waits for its own micro-batch's previous op)
 * share two resources taken in plan order: the SMs (compute ops, one at a time: two kernels side by
 * side would share the same SMs and DRAM, so they gain nothing over running in turn) and the
 * communicator (collectives, one at a time: one communicator cannot host two at once). A compute op
 * that starts while a collective is in flight runs on the SMs the collective leaves free, slowed by
 * stretch = sms / (sms - channels) for the overlapped part. Per layer of stages C1 AR1 C2 AR2 this
 * gives, in steady state, max(C_a + C_b, AR_a + AR_b) per stage pair instead of their sum. */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double model_tbo_stretch(const cfg_scenario *sc, cfg_backend be, model_terms *terms)
{
    if (model_backend_host_staged(be)) {
        model_term_add(terms, "tbo.stretch", INFINITY, "x",
                       "%s is host-staged: the host runs it between graph pieces, nothing overlaps",
                       cfg_backend_names[be]);
        return INFINITY;
    }
    const cfg_system *s = &sc->system;
    const int ch = sc->nccl.channels > 0 ? sc->nccl.channels : s->nccl.channels;
    const int sms = s->gpu.sms;
    model_term_add(terms, "tbo.sms", sms, "SMs", "system gpu.sms");
    model_term_add(terms, "tbo.coll_sms", ch, "SMs", "one SM per channel: %s (assumed for custom kernels too)",
                   sc->nccl.channels > 0 ? "scenario nccl.channels" : "system nccl.channels");
    if (sms <= 0 || ch >= sms) {
        model_term_add(terms, "tbo.stretch", INFINITY, "x", "the collective holds every SM: nothing overlaps");
        return INFINITY;
    }
    const double f = (double)sms / (sms - ch);
    model_term_add(terms, "tbo.stretch", f, "x", "compute beside a collective: sms %d / (sms %d - coll_sms %d)", sms,
                   sms, ch);
    return f;
}

/* A compute op of t us starting at `start` while the communicator is busy until `comm_free`: the part
 * inside the window runs `stretch` times slower. */
static double stretched_us(double t, double start, double comm_free, double stretch)
{
    const double w = comm_free - start;
    if (w <= 0.0 || t <= 0.0)
        return t;
    if (t * stretch <= w)
        return t * stretch;
    return w + (t - w / stretch);
}

double model_tbo_phase(const model_ctx *ctx, int ph, const double *cost, const launch_costs *L, double stretch,
                       double *class_us, double *op_us, model_tbo_sums *sums)
{
    const bool graph = ctx->graph;
    const double base = graph ? L->graph_launch : 0.0, gap = graph ? L->graph_node : L->eager_gap;
    double ready[3] = {base, base, base}, res_free[2] = {base, base}; /* [0] SMs, [1] communicator */
    double host = base, frontier = base;
    memset(sums, 0, sizeof(*sums));
    class_us[PLAN_CLASS_OTHER] += base;
    const int first = ctx->phases[ph].first, end = first + ctx->phases[ph].n;
    for (int i = first; i < end; i++) {
        const model_op *o = &ctx->ops[i];
        const bool coll = o->coll >= 0;
        const double t = coll ? cost[o->coll] : o->us;
        if (coll && t <= 0.0)
            continue; /* backend none: not launched */
        /* An op outside the micro-batches (a hand-edited plan) waits for both. */
        const int x = o->mb <= 2 ? o->mb : 0;
        const double dep = x ? ready[x] : fmax(ready[0], fmax(ready[1], ready[2]));
        /* Without overlap a compute op also waits for the collective in flight: the serial walk. */
        const double busy = !coll && isinf(stretch) ? fmax(res_free[0], res_free[1]) : res_free[coll];
        double start = fmax(dep, busy) + gap;
        if (!graph) {
            host += coll ? L->eager_coll : L->eager;
            start = fmax(start, host);
        }
        double dur = t;
        if (!coll) {
            if (!isinf(stretch))
                dur = stretched_us(t, start, res_free[1], stretch);
            sums->compute += t + gap;
            sums->stretched += dur - t;
        } else {
            sums->comm += t + gap;
        }
        const double stop = start + dur;
        res_free[coll] = stop;
        if (x)
            ready[x] = stop;
        else
            ready[0] = ready[1] = ready[2] = stop;
        if (stop > frontier) {
            class_us[o->cls] += stop - frontier;
            frontier = stop;
        }
        if (op_us)
            op_us[i] = dur;
    }
    if (host > frontier) {
        class_us[PLAN_CLASS_OTHER] += host - frontier;
        frontier = host;
    }
    sums->serial = base + sums->compute + sums->comm;
    sums->critical_path = frontier;
    return frontier;
}

static void print_tbo_terms(util_buf *out, const model_terms *t)
{
    for (int i = 0; i < t->n; i++)
        util_buf_printf(out, "    %-18s %12.4g %-5s %s\n", t->t[i].name, t->t[i].value, t->t[i].unit, t->t[i].note);
}

/* --explain: the overlap terms of each split phase for one backend. */
void model_tbo_explain(util_buf *out, const model_ctx *ctx, cfg_backend be)
{
    const cfg_scenario *sc = ctx->sc;
    const cfg_system *s = &sc->system;
    model_terms t;
    t.n = 0;
    const double stretch = model_tbo_stretch(sc, be, &t);
    util_buf_printf(out, "  two-batch overlap with %s:\n", cfg_backend_names[be]);
    if (isinf(stretch)) {
        print_tbo_terms(out, &t);
        util_buf_printf(out, "    the micro-batches run in turn: each phase is the serial walk of its split ops\n");
        return;
    }
    double cost[MODEL_MAX_COLLS];
    for (int i = 0; i < ctx->n_colls; i++) {
        model_coll c;
        model_collective(s, be, ctx->colls[i].kind, (double)ctx->colls[i].bytes, ctx->colls[i].ranks, NULL, &c);
        if (!c.available)
            return; /* the cycle's line above already says why */
        cost[i] = c.us;
    }
    const launch_costs L = model_launch_costs(s, be, ctx->sc->parallel.tp, ctx->graph);
    for (int ph = 0; ph < ctx->p->n_phases; ph++) {
        if (!ctx->phases[ph].tbo)
            continue;
        double class_us[PLAN_CLASS_COUNT] = {0};
        model_tbo_sums x;
        model_tbo_phase(ctx, ph, cost, &L, stretch, class_us, NULL, &x);
        model_term_add(&t, "tbo.compute", x.compute, "us", "%s: both micro-batches' compute + gaps",
                       ctx->p->phases[ph].name);
        model_term_add(&t, "tbo.comm", x.comm, "us", "%s: both micro-batches' collectives + gaps",
                       ctx->p->phases[ph].name);
        model_term_add(&t, "tbo.serial", x.serial, "us", "launch + compute + comm: no overlap");
        model_term_add(&t, "tbo.stretched", x.stretched, "us", "compute lost to the collective's SMs");
        model_term_add(&t, "tbo.critical_path", x.critical_path, "us", "the two chains' schedule span");
        model_term_add(&t, "tbo.hidden", x.serial - x.critical_path, "us", "serial - critical_path");
    }
    print_tbo_terms(out, &t);
}

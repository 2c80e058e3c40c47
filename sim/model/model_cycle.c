/* The cycle: per-op costs precomputed once, then one walk of the plan per backend with launch costs
 * (eager host run-ahead, or CUDA graphs), side-stream overlap and host-staged collectives. Formulas in
 * docs/model.md ("The cycle"). */
#include "model_internal.h"
#include "model_topo.h"

#include "../config/cfg_accept.h"
#include "../plan/plan_memory.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_GIB 1073741824.0

bool model_ctx_in_l2(const model_ctx *ctx) { return ctx->in_l2; }

void model_tokens_formula(const cfg_scenario *sc, char *buf, size_t len)
{
    cfg_accept a;
    cfg_accept_eval(sc, &a);
    if (a.warning[0])
        snprintf(buf, len, "%s; warning: %s", a.explain, a.warning);
    else
        snprintf(buf, len, "%s", a.explain);
}

double model_host_us(const cfg_scenario *sc)
{
    const bool tree = sc->speculative.algorithm != CFG_SPEC_NONE && sc->speculative.topk > 1;
    return sc->system.host.cycle_overhead_us + (tree ? sc->system.host.tree_overhead_us : 0.0);
}

static const char *check_tables(const cfg_system *s, char *buf, size_t len)
{
    const char *why;
    for (int i = 0; i < CFG_SYS_AR_COUNT; i++)
        if (*(why = model_table_check(&s->measured.allreduce[i]))) {
            snprintf(buf, len, "system.measured.allreduce.%s: %s", cfg_backend_keys[i], why);
            return buf;
        }
    if (*(why = model_table_check(&s->measured.allgather_nccl))) {
        snprintf(buf, len, "system.measured.allgather_nccl: %s", why);
        return buf;
    }
    for (int i = 0; i < CFG_SYS_OPS_COUNT; i++)
        if (*(why = model_table_check(&s->measured.ops[i]))) {
            snprintf(buf, len, "system.measured.ops.%s: %s", plan_op_kind_names[i], why);
            return buf;
        }
    for (int i = 0; i < CFG_LAW_COUNT; i++)
        if (*(why = model_law_check(&s->measured.compute[i]))) {
            snprintf(buf, len, "system.measured.compute.%s: %s", cfg_law_names[i], why);
            return buf;
        }
    if (*(why = model_topo_check(s))) {
        snprintf(buf, len, "%s", why);
        return buf;
    }
    return NULL;
}

static int coll_slot(model_ctx *ctx, const plan_op *op)
{
    for (int i = 0; i < ctx->n_colls; i++)
        if (ctx->colls[i].kind == op->kind && ctx->colls[i].bytes == op->payload_bytes &&
            ctx->colls[i].ranks == op->ranks)
            return i;
    if (ctx->n_colls == MODEL_MAX_COLLS)
        return -1;
    ctx->colls[ctx->n_colls] = (model_coll_key){op->kind, op->payload_bytes, op->ranks};
    return ctx->n_colls++;
}

/* A region starts at a side-stream op and runs to the op before the next collective (or the phase end). */
static void build_region(model_ctx *ctx, int first, int end, double gap)
{
    if (ctx->n_regions == ctx->cap_regions) {
        ctx->cap_regions = ctx->cap_regions ? 2 * ctx->cap_regions : 16;
        ctx->regions = util_xrealloc(ctx->regions, (size_t)ctx->cap_regions * sizeof(model_region));
    }
    model_region *r = &ctx->regions[ctx->n_regions];
    memset(r, 0, sizeof(*r));
    r->first = first;
    int i = first;
    while (i < end && ctx->ops[i].coll < 0)
        i++;
    r->last = i - 1;
    r->n_ops = r->last - r->first + 1;
    double side_total = 0.0, side_class[PLAN_CLASS_COUNT] = {0};
    for (int k = r->first; k <= r->last; k++) {
        const model_op *o = &ctx->ops[k];
        const double t = o->us + gap;
        r->t_mem += o->mem_us;
        if (o->stream == PLAN_STREAM_SIDE) {
            r->t_side += t;
            side_class[o->cls] += t;
            side_total += t;
        } else {
            r->t_main += t;
            r->main_class_us[o->cls] += t;
        }
    }
    for (int c = 0; c < PLAN_CLASS_COUNT; c++)
        r->side_class_w[c] = side_total > 0 ? side_class[c] / side_total : 0.0;
    r->t = fmax(r->t_main, fmax(r->t_side, r->t_mem));
    r->last_us = ctx->ops[r->last].us;
    ctx->ops[first].region = ctx->n_regions++;
}

/* What one shape of the plan costs (plan.shapes: ops of one shape cost the same), priced at its first op. */
typedef struct shape_cost {
    bool priced;
    int coll;
    double us, mem_us, norm_us[2];
} shape_cost;

/* Price one op into `o` (its kind, class and stream already there). 0, or -1 past MODEL_MAX_COLLS. */
static int price_op(model_ctx *ctx, const plan_op *op, model_op *o)
{
    const cfg_system *s = &ctx->sc->system;
    if (plan_op_is_collective(op->kind)) {
        o->coll = coll_slot(ctx, op);
        if (o->coll < 0)
            return -1;
        if (op->kind == PLAN_OP_ALLREDUCE_NORM)
            for (int fused = 0; fused < 2; fused++)
                o->norm_us[fused] = model_norm_part_us(s, fused, op, ctx->in_l2, NULL);
    } else {
        o->us = model_op_us(s, op, ctx->in_l2, NULL, NULL);
        o->mem_us = model_op_mem_us(s, op, ctx->in_l2);
    }
    return 0;
}

model_ctx *model_prepare(const cfg_scenario *sc, const plan *p, char *why, size_t why_len)
{
    const cfg_system *s = &sc->system;
    if (check_tables(s, why, why_len))
        return NULL;
    model_ctx *ctx = util_xcalloc(1, sizeof(*ctx));
    ctx->sc = sc;
    ctx->p = p;
    ctx->graph = sc->run.graph;
    cfg_accept_eval(sc, &ctx->accept);
    ctx->tokens_per_cycle = ctx->accept.tokens;
    plan_memory_sums(sc, p, -1, &ctx->memory);
    /* The weights and the KV cache are what a replayed cycle re-reads; activations are small. */
    int n = 0;
    for (int ph = 0; ph < p->n_phases; ph++) {
        n += p->phases[ph].n_ops;
        ctx->working_set_bytes += p->phases[ph].summary.weight_bytes + p->phases[ph].summary.attention_bytes_read;
    }
    ctx->in_l2 = ctx->working_set_bytes < s->gpu.l2_mb * 1048576.0;
    ctx->n_ops = n;
    ctx->ops = util_xmalloc(((size_t)n + 1) * sizeof(model_op));
    ctx->phases = util_xcalloc((size_t)p->n_phases + 1, sizeof(model_phase_span));
    const double gap = ctx->graph ? s->launch.graph_node_us : s->launch.eager_gap_us;
    ctx->verify_ar_slot = -1;
    shape_cost *shapes = util_xcalloc((size_t)p->n_shapes + 1, sizeof(shape_cost));
    int k = 0;
    for (int ph = 0; ph < p->n_phases; ph++) {
        const plan_phase *phase = &p->phases[ph];
        ctx->phases[ph].first = k;
        ctx->phases[ph].n = phase->n_ops;
        ctx->phases[ph].tbo = phase->summary.two_batch;
        for (int i = 0; i < phase->n_ops; i++, k++) {
            const plan_op *op = &phase->ops[i];
            model_op *o = &ctx->ops[k];
            o->kind = (unsigned char)op->kind;
            o->cls = (unsigned char)plan_op_class(op->kind);
            o->stream = (unsigned char)op->stream;
            o->mb = (unsigned char)op->micro_batch;
            o->region = -1;
            o->coll = -1;
            o->us = o->mem_us = o->norm_us[0] = o->norm_us[1] = 0.0;
            /* Each shape priced once (a plan without its shape index, never made by plan_summarize,
             * prices every op). */
            shape_cost *c = phase->shape ? &shapes[phase->shape[i]] : NULL;
            if (c && c->priced) {
                o->coll = c->coll;
                o->us = c->us;
                o->mem_us = c->mem_us;
                o->norm_us[0] = c->norm_us[0];
                o->norm_us[1] = c->norm_us[1];
            } else {
                if (price_op(ctx, op, o)) {
                    snprintf(why, why_len, "plan has more than %d distinct collectives", MODEL_MAX_COLLS);
                    free(shapes);
                    model_free(ctx);
                    return NULL;
                }
                if (c)
                    *c = (shape_cost){true, o->coll, o->us, o->mem_us, {o->norm_us[0], o->norm_us[1]}};
            }
            if (ctx->verify_ar_slot < 0 && (op->kind == PLAN_OP_ALLREDUCE || op->kind == PLAN_OP_ALLREDUCE_NORM) &&
                (phase->kind == PLAN_PHASE_VERIFY || phase->kind == PLAN_PHASE_DECODE))
                ctx->verify_ar_slot = o->coll;
        }
        const int end = ctx->phases[ph].first + phase->n_ops;
        for (int i = ctx->phases[ph].first; i < end; i++) {
            if (ctx->ops[i].stream == PLAN_STREAM_SIDE) {
                build_region(ctx, i, end, gap);
                i = ctx->regions[ctx->n_regions - 1].last;
            }
        }
    }
    free(shapes);
    return ctx;
}

void model_free(model_ctx *ctx)
{
    if (!ctx)
        return;
    free(ctx->ops);
    free(ctx->regions);
    free(ctx->phases);
    free(ctx);
}


/* Where the host (launches) and the GPU (work) stand in a phase, in microseconds; `since` counts the
 * launches since the phase began (the arrival skew's k). */
typedef struct timeline {
    double host, gpu;
    int since;
} timeline;

/* Mean collective times over the verify pass (what a user compares with their server's). */
typedef struct verify_means {
    double ar_sum, ag_sum;
    int ar, ag;
} verify_means;

/* An overlap region (side-stream work beside the main stream): its ops move as one block. */
static void advance_region(const model_ctx *ctx, const model_region *g, const launch_costs *L, bool graph,
                           timeline *tl, results_phase *out, double *op_us)
{
    double start = tl->gpu, stop;
    if (graph) {
        stop = start + g->t;
    } else {
        const double first_launch = tl->host + L->eager;
        tl->host += g->n_ops * L->eager;
        tl->since += g->n_ops;
        start = fmax(tl->gpu + L->eager_gap, first_launch);
        stop = fmax(start + g->t, tl->host + g->last_us);
    }
    const double delta = stop - tl->gpu;
    for (int c = 0; c < PLAN_CLASS_COUNT; c++)
        out->class_ms[c] += g->main_class_us[c] + (delta - g->t_main) * g->side_class_w[c];
    if (op_us)
        for (int k = g->first; k <= g->last; k++)
            op_us[k] = ctx->ops[k].us;
    tl->gpu = stop;
}

/* One op of t microseconds: launched eagerly, as a graph node, or (host-staged collectives) run by the
 * host itself, which waits for the GPU first. Returns when the GPU is done with it. */
static double advance_op(timeline *tl, double t, bool coll, bool staged, bool graph, const launch_costs *L)
{
    if (coll && staged && t > 0) {
        tl->host = fmax(tl->host, tl->gpu) + t;
        if (graph)
            tl->host += L->graph_launch;
        return tl->host;
    }
    if (graph)
        return tl->gpu + L->graph_node + t;
    tl->host += coll ? L->eager_coll : L->eager;
    tl->since++;
    if (!coll)
        return fmax(tl->gpu + L->eager_gap, tl->host) + t;
    /* The slowest rank's host launches it skew after the mean rank's; every GPU waits for it. */
    const double skew = L->skew_coeff * sqrt((double)tl->since);
    return fmax(tl->gpu + L->eager_gap, tl->host + skew) + t;
}

/* An allreduce_norm without a fused kernel: its norm follows as a kernel of its own (launch or node gap). */
static void separate_norm(const model_op *o, bool staged, bool graph, const launch_costs *L, timeline *tl,
                          results_phase *out)
{
    const double next = advance_op(tl, o->norm_us[0], false, staged, graph, L);
    out->class_ms[plan_op_class(PLAN_OP_NORM)] += next - tl->gpu;
    tl->gpu = next;
}

static void eval_phase(const model_ctx *ctx, int ph, const double *cost, const launch_costs *L, bool staged,
                       double tbo_stretch, bool fuses_norm, results_cycle *r, verify_means *vm)
{
    const plan_phase *phase = &ctx->p->phases[ph];
    results_phase *out = &r->phases[ph];
    snprintf(out->name, sizeof(out->name), "%s", phase->name);
    out->kind = phase->kind;
    const bool is_verify = phase->kind == PLAN_PHASE_VERIFY || phase->kind == PLAN_PHASE_DECODE;
    const bool graph = ctx->graph;
    timeline tl = {0.0, 0.0, 0};
    double ar_sum = 0.0;
    int ar_n = 0;
    /* Two micro-batches (model_tbo.c); a host-staged backend overlaps nothing and walks them in turn. */
    const bool tbo = ctx->phases[ph].tbo && !staged;
    if (tbo) {
        model_tbo_sums sums;
        tl.gpu = model_tbo_phase(ctx, ph, cost, L, tbo_stretch, out->class_ms, r->op_us, &sums);
    } else if (graph) {
        tl.host = tl.gpu = L->graph_launch;
        out->class_ms[PLAN_CLASS_OTHER] += L->graph_launch;
    }
    const int first = ctx->phases[ph].first, end = first + ctx->phases[ph].n;
    for (int i = first; i < end; i++) {
        const model_op *o = &ctx->ops[i];
        if (o->region >= 0 && !tbo) {
            const model_region *g = &ctx->regions[o->region];
            advance_region(ctx, g, L, graph, &tl, out, r->op_us);
            i = g->last;
            continue;
        }
        const bool coll = o->coll >= 0, with_norm = o->kind == PLAN_OP_ALLREDUCE_NORM;
        const double t = coll ? cost[o->coll] : o->us;
        const bool fused = with_norm && fuses_norm && t > 0.0;
        if (coll && t <= 0.0) {
            /* backend none: the collective is not launched at all (its norm still is) */
            if (with_norm && !tbo)
                separate_norm(o, staged, graph, L, &tl, out);
            continue;
        }
        if (!tbo) { /* (a two-batch phase holds no allreduce_norm: cfg_scenario refuses the pair) */
            const double next = advance_op(&tl, t + (fused ? o->norm_us[1] : 0.0), coll, staged, graph, L);
            out->class_ms[o->cls] += next - tl.gpu;
            tl.gpu = next;
            if (with_norm && !fused)
                separate_norm(o, staged, graph, L, &tl, out);
            if (r->op_us)
                r->op_us[i] = t + (with_norm ? o->norm_us[fused] : 0.0);
        }
        if (coll && (o->kind == PLAN_OP_ALLREDUCE || with_norm)) {
            ar_sum += t + (with_norm ? o->norm_us[fused] : 0.0);
            ar_n++;
        }
        if (coll && is_verify) {
            if (o->kind == PLAN_OP_ALLREDUCE || with_norm) {
                /* allreduce_norm: its whole time, norm included, as a replay measures the op */
                vm->ar_sum += t + (with_norm ? o->norm_us[fused] : 0.0);
                vm->ar++;
            } else if (o->kind == PLAN_OP_ALLGATHER) { /* a split's reduce-scatters are in neither mean */
                vm->ag_sum += t;
                vm->ag++;
            }
        }
    }
    /* The phase ends when the slowest rank's host has launched its last op (eager: the drift above). */
    const double host_end = tl.host + L->skew_coeff * sqrt((double)tl.since);
    if (host_end > tl.gpu)
        out->class_ms[PLAN_CLASS_OTHER] += host_end - tl.gpu;
    double total = 0.0;
    for (int c = 0; c < PLAN_CLASS_COUNT; c++) {
        out->class_ms[c] /= 1000.0;
        total += out->class_ms[c];
    }
    out->ms = total;
    out->collectives = ar_n;
    out->collective_us_mean = ar_n ? ar_sum / ar_n : 0.0;
}

/* The like-for-like caveats of one collective's figure. */
static void coll_notes(const model_ctx *ctx, cfg_backend be, const model_coll *c, results_cycle *r)
{
    const char *name = cfg_backend_names[be];
    if (c->table && c->table->launch != CFG_TABLE_LAUNCH_ANY &&
        (c->table->launch == CFG_TABLE_LAUNCH_GRAPH) != ctx->graph)
        results_warn(r, "launch-mismatch",
                     "%s: the measured allreduce table was taken with %s launches (measured.allreduce.%s.launch) "
                     "and is applied to a scenario with %s (run.graph=%s): per-call costs differ between the two",
                     name, cfg_table_launch_names[c->table->launch], cfg_backend_keys[be],
                     ctx->graph ? "a CUDA graph" : "eager launches", ctx->graph ? "true" : "false");
    /* A table left out on purpose (measured.use, measured.collectives) is said by the method, not warned. */
    if (c->table_skip && c->table_skip != model_skip_use && c->table_skip != model_skip_collectives)
        results_warn(r, "table-not-applied",
                     "%s: a measured table exists but is not used here (%s): this figure is the formula, not "
                     "comparable with results that use the measurement",
                     name, c->table_skip);
}

static void serving_notes(const model_ctx *ctx, cfg_backend be, results_cycle *r)
{
    const cfg_scenario *sc = ctx->sc;
    /* The acceptance model knows which rates it reused (chain or tree), and says nothing when a
     * measured accept length decides the tokens. */
    if (ctx->accept.extrapolated && ctx->accept.warning[0])
        results_warn(r, "acceptance-extrapolated", "%s", ctx->accept.warning);
    if (ctx->verify_ar_slot < 0)
        return;
    const model_coll_key *k = &ctx->colls[ctx->verify_ar_slot];
    model_engine_pick(MODEL_ENGINE_VLLM, &sc->system, be, (double)k->bytes, k->ranks, r->engine_vllm,
                      sizeof(r->engine_vllm));
    model_engine_pick(MODEL_ENGINE_SGLANG, &sc->system, be, (double)k->bytes, k->ranks, r->engine_sglang,
                      sizeof(r->engine_sglang));
}

void model_eval(const model_ctx *ctx, cfg_backend be, bool with_ops, results_cycle *r)
{
    const cfg_scenario *sc = ctx->sc;
    const cfg_system *s = &sc->system;
    memset(r, 0, sizeof(*r));
    snprintf(r->backend, sizeof(r->backend), "%s", cfg_backend_names[be]);
    r->tokens_per_cycle = ctx->tokens_per_cycle;
    r->accepted_per_cycle = ctx->tokens_per_cycle > 1 ? ctx->tokens_per_cycle - 1.0 : 0.0;
    serving_notes(ctx, be, r);
    /* Memory first: a scenario that does not fit is not a cycle time anyone will see,
     * but how far it misses is worth reporting, so the figures stay with the unavailable result. */
    double mem_bytes;
    r->mem_known = true;
    r->fits = plan_memory_total_for_backend(sc, &ctx->memory, be, &mem_bytes);
    r->mem_gib = mem_bytes / MODEL_GIB;
    r->mem_capacity_gib = s->gpu.memory_gib;
    if (!model_backend_available(s, be, ctx->p->ranks, r->reason, sizeof(r->reason)))
        return;
    if (!r->fits) {
        plan_memory_verdict(sc, mem_bytes, r->reason, sizeof(r->reason));
        return;
    }

    double cost[MODEL_MAX_COLLS];
    for (int i = 0; i < ctx->n_colls; i++) {
        model_coll c;
        model_collective(s, be, ctx->colls[i].kind, (double)ctx->colls[i].bytes, ctx->colls[i].ranks, NULL, &c);
        if (!c.available) {
            snprintf(r->reason, sizeof(r->reason), "%s", c.reason);
            return;
        }
        cost[i] = c.us;
        coll_notes(ctx, be, &c, r);
        /* collectives.allreduce_split: no measured reduce-scatter tables exist, so the split is all
         * formula while the unsplit allreduce may be a measurement. */
        if (ctx->colls[i].kind == PLAN_OP_REDUCE_SCATTER && s->measured.use && s->measured.collectives &&
            cfg_backend_has_table(be) &&
            s->measured.allreduce[be].n_bytes > 0)
            results_warn(r, "split-formula",
                         "%s: the split's reduce-scatters are the formula (there are no measured reduce-scatter "
                         "tables) while an unsplit allreduce uses measured.allreduce.%s: compare the two with --set "
                         "system.measured.use=false",
                         cfg_backend_names[be], cfg_backend_keys[be]);
        if (i == ctx->verify_ar_slot)
            snprintf(r->allreduce_method, sizeof(r->allreduce_method), "%s", c.method);
    }
    r->available = true;
    if (with_ops) {
        r->op_us = util_xcalloc((size_t)ctx->n_ops + 1, sizeof(double));
        r->n_op_us = ctx->n_ops;
    }
    const launch_costs L = model_launch_costs(s, be, sc->parallel.tp, ctx->graph);
    verify_means vm = {0};
    const double tbo_stretch = model_tbo_stretch(sc, be, NULL);
    r->n_phases = ctx->p->n_phases < RESULTS_MAX_PHASES ? ctx->p->n_phases : RESULTS_MAX_PHASES;
    for (int ph = 0; ph < r->n_phases; ph++)
        eval_phase(ctx, ph, cost, &L, model_backend_host_staged(be), tbo_stretch, model_backend_fuses_norm(be), r,
                   &vm);
    r->allreduce_us = vm.ar ? vm.ar_sum / vm.ar : 0.0;
    r->allgather_us = vm.ag ? vm.ag_sum / vm.ag : 0.0;
    r->host_ms = model_host_us(sc) / 1000.0;
    results_cycle_finish(r);
}

/* The executor core: validate the collectives (--check), measure every op in instrumented eager
 * passes, then time whole cycles (as a CUDA graph where the device and backend allow it). */
#include "exec.h"
#include "exec_internal.h"

#include "../comm/comm_select.h"
#include "exec_watch.h"

#include "../util/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void exec_env_set(exec_ctx *x, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    util_env_vset(x->env, &x->n_env, key, fmt, ap);
    va_end(ap);
}


/* Enqueue one cycle. With timers, slot 2*i / 2*i+1 bracket flat op i on the op's stream. Of the compute
 * ops only those of the classes whose bit `keep` has (a plan_class bit; EXEC_KEEP_ALL: the cycle) are
 * run (--class-cost); collectives always. The side stream forks only for an op that runs: a fork and
 * join around an empty branch still puts an event node between two kernels of the main stream, and
 * that node, not any op, cost attention alone 0.1 ms a cycle at the default on one H200 (bench/NOTES.md,
 * 2026-12-02, session 19). */
#define EXEC_KEEP_ALL ((1u << PLAN_CLASS_COUNT) - 1u)
static void enqueue_some(exec_ctx *x, bool timers, unsigned keep)
{
    const plan *p = x->plan;
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++) {
        bool forked = false;
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            /* The side stream forks at its first op that runs and joins before the next collective:
             * the shared expert overlaps the routed experts and is summed before the allreduce. (With
             * timers every op runs: the instrumented pass keeps every class.) */
            const bool runs = plan_op_is_collective(op->kind) || (keep & (1u << plan_op_class(op->kind)));
            if (op->stream == PLAN_STREAM_SIDE && runs && !forked) {
                x->dev->fork(x);
                forked = true;
            }
            if (plan_op_is_collective(op->kind) && forked) {
                x->dev->join(x);
                forked = false;
            }
            int s = op->stream == PLAN_STREAM_SIDE ? 1 : 0;
            if (timers)
                x->dev->timer_record(x, 2 * flat, s);
            if (plan_op_is_collective(op->kind)) {
                exec_collective(x, op, flat, x->dev->comm_send(x), x->dev->comm_recv(x), op->count);
            } else if (runs) {
                exec_watch_op(flat, -1, -1);
                x->dev->compute(x, op, flat);
            }
            if (timers)
                x->dev->timer_record(x, 2 * flat + 1, s);
        }
        if (forked)
            x->dev->join(x);
    }
}

static void enqueue_cycle(exec_ctx *x, bool timers) { enqueue_some(x, timers, EXEC_KEEP_ALL); }

static exec_stats stats_of(const double *v, int n)
{
    exec_stats s = {0};
    if (n <= 0)
        return s;
    s.median_us = util_percentile(v, n, 0.5);
    s.p10_us = util_percentile(v, n, 0.1);
    s.p90_us = util_percentile(v, n, 0.9);
    s.min_us = util_percentile(v, n, 0.0);
    s.max_us = util_percentile(v, n, 1.0);
    return s;
}

static void progress(const exec_ctx *x, const char *what, int i, int n)
{
    if (!x->opt->progress || x->dist.rank != 0)
        return;
    fprintf(stderr, "\r%s: %s %d/%d   ", util_prog(), what, i, n);
    if (i == n)
        fprintf(stderr, "\n");
    fflush(stderr);
}

/* Why this job cannot replay with x->dev and x->comm ("" when it can). The backend's own verdict is
 * collective: every rank reaches it or none does. */
static void why_not(exec_ctx *x, char *why, size_t len)
{
    const plan *p = x->plan;
    const dist_job *d = &x->dist;
    if (p->ranks != d->size && d->size != 1) {
        snprintf(why, len,
                 "the plan has %d tensor-parallel ranks but the job has %d MPI ranks; launch with mpirun -np %d, "
                 "or -np 1 for one rank's compute only",
                 p->ranks, d->size, p->ranks);
        return;
    }
    if (x->opt->check && x->comm->moves_no_data) {
        snprintf(why, len,
                 "--check: backend %s moves no data (its collectives are %s), so there is nothing to check; use a "
                 "backend that reduces (nccl, mpi, oneshot, ...)",
                 x->comm->name, strcmp(x->comm->name, "model") == 0 ? "delays" : "skipped");
        return;
    }
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            const bool aux = op->kind != PLAN_OP_ALLREDUCE_NORM || x->dev->comm_aux;
            if (comm_backend_has(x->comm, op->kind) && aux)
                continue;
            snprintf(why, len, "%s '%s' (phase %s): %s %s has no %s%s", plan_op_kind_names[op->kind], op->name,
                     p->phases[ph].name, aux ? "backend" : "device", aux ? x->comm->name : x->dev->name,
                     plan_op_kind_names[op->kind],
                     op->kind == PLAN_OP_ALLTOALL ? "; use nccl or mpi" : "");
            return;
        }
    exec_comm_bind(x);
    char bwhy[400] = "";
    if (x->comm->supported(&x->cc, bwhy, sizeof(bwhy)))
        snprintf(why, len, "backend %s: %s", x->comm->name, bwhy);
}

/* Find the device and backend, refuse what cannot run here (rank 0 says why), then initialise the
 * device, its buffers and the backend. 0, or 2 on every rank. */
int exec_open(exec_ctx *x)
{
    const exec_options *opt = x->opt;
    const plan *p = x->plan;
    const dist_job *d = &x->dist;
    char why[512] = "";
    x->dev = exec_find_device(opt->device, why, sizeof(why));
    if (x->dev)
        x->comm = opt->allreduce_policy ? comm_select_configure(opt->allreduce_policy, -1, &x->select_opts)
                                        : comm_find_backend(opt->backend, why, sizeof(why));
    x->cc.opts = opt->allreduce_policy ? &x->select_opts : NULL;
    if (x->dev && x->comm)
        why_not(x, why, sizeof(why));
    if (why[0]) {
        if (d->rank == 0)
            fprintf(stderr, "%s: %s\n", util_prog(), why);
        return 2;
    }
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            if (!plan_op_is_collective(op->kind))
                continue;
            long long in, out;
            plan_collective_elems(op, &in, &out);
            long long n = in > out ? in : out;
            if (n > x->cc.max_comm_elems)
                x->cc.max_comm_elems = n;
        }
    exec_watch_backend(x->comm->name);
    exec_watch_plan(p);
    exec_watch_step("initialising the %s device and its buffers", x->dev->name);
    x->dev->init(x);
    if (dist_agree(d, x->dev->prepare(x), x->why, sizeof(x->why))) {
        if (d->rank == 0)
            fprintf(stderr, "%s: %s\n", util_prog(), x->why);
        x->dev->fini(x);
        exec_watch_plan(NULL);
        return 2;
    }
    exec_watch_step("initialising backend %s", x->comm->name);
    x->comm->init(&x->cc);
    return 0;
}

/* Timer slots: 2i / 2i+1 bracket flat op i; then the whole pass; then N_CALIB empty pairs. */
enum { N_CALIB = 32 };
typedef struct run_slots {
    int n_ops, a, b, calib;
} run_slots;

static void record_calibration(exec_ctx *x, const run_slots *s)
{
    for (int k = 0; k < 2 * N_CALIB; k++)
        x->dev->timer_record(x, s->calib + k, 0);
}

/* Instrumented passes: a timer pair around every op. Fills raw[i] (median over passes, max over
 * ranks), this rank's start[i] and dur[i] of the last pass, out->inst_cycle; returns what an empty
 * timer pair measures. */
static double measure_ops(exec_ctx *x, bool graph, const run_slots *s, double *raw, double *start, double *dur,
                          exec_result *out)
{
    const int n_inst = x->opt->instrumented_iters > 0 ? x->opt->instrumented_iters : 1, n_ops = s->n_ops;
    double *per_pass = util_xcalloc((size_t)n_inst * (size_t)n_ops, sizeof(double));
    double *pass_wall = util_xcalloc((size_t)n_inst, sizeof(double));
    double *calib = util_xcalloc((size_t)n_inst * N_CALIB, sizeof(double));
    /* In graph mode the instrumented pass is a graph too: eager launches leave gaps that a per-op
     * timer would charge to small ops. */
    if (graph) {
        exec_watch_step("capturing the instrumented cycle as a CUDA graph");
        x->dev->capture_begin(x);
        record_calibration(x, s);
        x->dev->timer_record(x, s->a, 0);
        enqueue_cycle(x, true);
        x->dev->timer_record(x, s->b, 0);
        x->dev->capture_end(x, EXEC_GRAPH_INSTRUMENTED);
        exec_watch_step("first (untimed) launch of the instrumented graph");
        x->dev->graph_launch(x, EXEC_GRAPH_INSTRUMENTED);
        x->dev->sync(x);
    }
    out->inst_graph = graph;
    out->n_inst = n_inst;
    for (int it = 0; it < n_inst; it++) {
        exec_watch_step("instrumented pass %d/%d%s", it + 1, n_inst, graph ? " (CUDA graph)" : "");
        dist_barrier();
        if (graph) {
            x->dev->graph_launch(x, EXEC_GRAPH_INSTRUMENTED);
        } else {
            record_calibration(x, s);
            x->dev->timer_record(x, s->a, 0);
            enqueue_cycle(x, true);
            x->dev->timer_record(x, s->b, 0);
        }
        x->dev->sync(x);
        pass_wall[it] = x->dev->timer_elapsed_us(x, s->a, s->b);
        for (int k = 0; k < N_CALIB; k++)
            calib[it * N_CALIB + k] = x->dev->timer_elapsed_us(x, s->calib + 2 * k, s->calib + 2 * k + 1);
        for (int i = 0; i < n_ops; i++) {
            per_pass[(size_t)it * n_ops + i] = x->dev->timer_elapsed_us(x, 2 * i, 2 * i + 1);
            start[i] = x->dev->timer_elapsed_us(x, s->a, 2 * i);
            dur[i] = per_pass[(size_t)it * n_ops + i];
        }
        progress(x, "instrumented pass", it + 1, n_inst);
    }
    /* The first empty pair of a pass also waits for the pass to start: leave it out. */
    const double empty_pair_us = util_percentile(calib + 1, n_inst * N_CALIB - 1, 0.5);
    double *col = util_xmalloc((size_t)n_inst * sizeof(double));
    for (int i = 0; i < n_ops; i++) {
        for (int it = 0; it < n_inst; it++)
            col[it] = per_pass[(size_t)it * n_ops + i];
        raw[i] = util_percentile(col, n_inst, 0.5);
    }
    dist_max_doubles(raw, n_ops);
    dist_max_doubles(pass_wall, n_inst);
    out->inst_cycle = stats_of(pass_wall, n_inst);
    free(col);
    free(calib);
    free(per_pass);
    free(pass_wall);
    return empty_pair_us;
}

/* The cycle's variants (the whole cycle; --class-cost's with a class left out or alone): the graph slot
 * each is captured in, and its classes. */
typedef struct cycle_variant {
    int slot;
    unsigned keep;
} cycle_variant;

static const cycle_variant cycle_full = {EXEC_GRAPH_TIMED, EXEC_KEEP_ALL};

/* Capture a variant as a CUDA graph and warm it up (a graph warms up on its own: upload, NCCL's
 * registrations): --warmup launches, untimed. Nothing without graphs. */
static void capture_variant(exec_ctx *x, bool graph, cycle_variant v)
{
    if (!graph)
        return;
    exec_watch_step("capturing the cycle%s as a CUDA graph", v.keep == EXEC_KEEP_ALL ? "" : " (--class-cost variant)");
    x->dev->capture_begin(x);
    enqueue_some(x, false, v.keep);
    x->dev->capture_end(x, v.slot);
    exec_watch_step("%d warm-up launch(es) of the graph", x->opt->warmup);
    for (int w = 0; w < x->opt->warmup; w++)
        x->dev->graph_launch(x, v.slot);
    x->dev->sync(x);
}

/* One launch of a variant, timed; max over ranks. */
static double time_one(exec_ctx *x, bool graph, const run_slots *s, cycle_variant v)
{
    dist_barrier();
    x->dev->timer_record(x, s->a, 0);
    if (graph)
        x->dev->graph_launch(x, v.slot);
    else
        enqueue_some(x, false, v.keep);
    x->dev->timer_record(x, s->b, 0);
    x->dev->sync(x);
    double us = x->dev->timer_elapsed_us(x, s->a, s->b);
    dist_max_doubles(&us, 1);
    return us;
}

/* Timed cycles (the whole cycle), max over ranks per iteration, into *stats. */
static void time_cycles(exec_ctx *x, bool graph, const run_slots *s, exec_stats *stats)
{
    const int iters = x->opt->iters;
    capture_variant(x, graph, cycle_full);
    double *cycle = util_xcalloc((size_t)(iters > 0 ? iters : 1), sizeof(double));
    for (int it = 0; it < iters; it++) {
        exec_watch_step("timed cycle %d/%d%s", it + 1, iters, graph ? " (CUDA graph)" : "");
        cycle[it] = time_one(x, graph, s, cycle_full);
        progress(x, "timed cycle", it + 1, iters);
    }
    *stats = stats_of(cycle, iters);
    free(cycle);
}

/* The median of `iters` launches of a variant in a row, after its warm-up (capture_variant). */
static double median_of(exec_ctx *x, bool graph, const run_slots *s, cycle_variant v, double *buf, int iters)
{
    capture_variant(x, graph, v);
    for (int it = 0; it < iters; it++)
        buf[it] = time_one(x, graph, s, v);
    return util_percentile(buf, iters, 0.5);
}

/* --class-cost: what each compute class costs, two ways (docs/commands.md, "vpsim run").
 * - Its marginal cost: per round the cycle less the cycle with that class's ops left out, launched back
 *   to back (which first alternating), and the median over rounds. Timing all of one and then all of
 *   the other let the GPU's state drift between two medians: the same case's "other" read 1.17-1.37 ms
 *   over three device calls (bench/NOTES.md 2026-12-02, session 18).
 * - The class alone: the median cycle with only its ops, launched again and again, less the median
 *   cycle with no compute op. The other classes' ops are skipped in the whole plan's graph, which is
 *   not the same as a plan of the class alone (bench/class_plans.py): GEMMs and attention read alike
 *   both ways (once the empty fork was gone: enqueue_some), "other" ~10 % less here, for a reason not
 *   found (bench/NOTES.md, 2026-12-02, session 19; the held-out check uses the plans).
 * Where a class's ops border another class's, the cycle holds an interaction that both marginal costs
 * count and no class alone holds (0.04-0.5 ms in the held-out set): the marginal costs add up to more
 * than the cycle, the classes alone to less. No timer sits between ops: nothing is attributed. */
static void class_costs(exec_ctx *x, bool graph, const run_slots *s, exec_result *out)
{
    static const int classes[] = {PLAN_CLASS_GEMM, PLAN_CLASS_ATTENTION, PLAN_CLASS_OTHER};
    const int iters = x->opt->iters > 0 ? x->opt->iters : 1;
    double *diff = util_xcalloc((size_t)iters, sizeof(double));
    for (int i = 0; i < (int)(sizeof(classes) / sizeof(classes[0])); i++) {
        const unsigned bit = 1u << classes[i];
        const cycle_variant without = {EXEC_GRAPH_WITHOUT, EXEC_KEEP_ALL & ~bit}, only = {EXEC_GRAPH_ALONE, bit};
        capture_variant(x, graph, without);
        for (int it = 0; it < iters; it++) {
            exec_watch_step("class-cost round %d/%d%s", it + 1, iters, graph ? " (CUDA graph)" : "");
            const bool full_first = it % 2 == 0;
            const double a = time_one(x, graph, s, full_first ? cycle_full : without);
            const double b = time_one(x, graph, s, full_first ? without : cycle_full);
            diff[it] = full_first ? a - b : b - a;
            progress(x, "class-cost round", it + 1, iters);
        }
        out->class_cost_us[classes[i]] = util_percentile(diff, iters, 0.5);
        out->class_alone_us[classes[i]] = median_of(x, graph, s, only, diff, iters);
    }
    out->class_none_us = median_of(x, graph, s, (cycle_variant){EXEC_GRAPH_ALONE, 0}, diff, iters);
    for (int i = 0; i < (int)(sizeof(classes) / sizeof(classes[0])); i++)
        out->class_alone_us[classes[i]] -= out->class_none_us;
    free(diff);
    out->class_cost = true;
}

/* Per-op times. A timer pair around an op adds more than an empty pair measures (in a graph the kernel
 * after an event node starts later; eager, the host's launch gap): take away a constant per op so that
 * the main stream's ops add up to the uninstrumented cycle, and never less than the empty pair. */
static void attribute_ops(const plan *p, const double *raw, double empty_pair_us, double *dur, exec_result *out)
{
    double raw_main = 0.0;
    int n_main = 0, flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++)
            if (p->phases[ph].ops[i].stream == PLAN_STREAM_MAIN) {
                raw_main += raw[flat];
                n_main++;
            }
    double c = n_main ? (raw_main - out->cycle.median_us) / n_main : 0.0;
    out->timer_overhead_us = c > empty_pair_us ? c : empty_pair_us;
    out->timer_empty_pair_us = empty_pair_us;
    out->op_us = util_xcalloc((size_t)out->n_ops, sizeof(double));
    for (int i = 0; i < out->n_ops; i++) {
        out->op_us[i] = raw[i] > out->timer_overhead_us ? raw[i] - out->timer_overhead_us : 0.0;
        dur[i] = dur[i] > out->timer_overhead_us ? dur[i] - out->timer_overhead_us : 0.0;
    }
}

int exec_run(dist_job *d, const exec_options *opt, const plan *p, exec_result *out)
{
    memset(out, 0, sizeof(*out));
    exec_ctx x = {.opt = opt, .plan = p, .dist = *d};
    int rc = exec_open(&x);
    if (rc)
        return rc;
    const bool graph = opt->graph && x.dev->has_graphs && x.comm->graph_safe;
    if (opt->graph && !graph && d->rank == 0)
        fprintf(stderr, "%s: note: %s; timing eager launches instead of a CUDA graph\n", util_prog(),
                !x.dev->has_graphs ? "this device has no graphs" : "this backend cannot be captured in a CUDA graph");
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    const run_slots slots = {.n_ops = n_ops, .a = 2 * n_ops, .b = 2 * n_ops + 1, .calib = 2 * n_ops + 2};
    x.dev->timers_alloc(&x, 2 * n_ops + 2 + 2 * N_CALIB);
    x.dev->describe(&x, false);
    /* Two-batch overlap: the replay runs the plan's order on the main stream (a's stage, then b's), so it
     * measures the split's cost (weights read twice, half-size kernels and collectives) but not the
     * overlap; the model's critical path adds that (docs/model.md, Two-batch overlap). */
    for (int ph = 0; ph < p->n_phases; ph++)
        if (plan_phase_is_tbo(&p->phases[ph])) {
            exec_env_set(&x, "two_batch_overlap",
                         "micro-batches replayed serially on one stream: split cost measured, overlap not "
                         "replayed (modelled only)");
            break;
        }
    out->ranks = d->size;
    out->iters = opt->iters;
    out->graph = graph;
    out->n_ops = n_ops;

    /* At one rank an allreduce is the identity and an all-gather a copy: checked all the same. */
    if (opt->check) {
        exec_watch_step("--check of every collective");
        out->checked = true;
        out->check_failures = exec_check_collectives(&x, out->check_message, sizeof(out->check_message));
        if (out->check_failures && out->check_message[0])
            fprintf(stderr, "vpsim[rank %d@%s]: check failed: %s\n", d->rank, d->host, out->check_message);
    }
    /* Warm-up before anything is measured: NCCL connects lazily, cuBLAS picks kernels, pages fault in. */
    exec_watch_step("%d eager warm-up cycle(s)", opt->warmup);
    for (int i = 0; i < opt->warmup; i++) {
        enqueue_cycle(&x, false);
        x.dev->sync(&x);
    }
    double *raw = util_xcalloc((size_t)n_ops, sizeof(double));
    double *start = util_xcalloc((size_t)n_ops, sizeof(double));
    double *dur = util_xcalloc((size_t)n_ops, sizeof(double));
    const double empty_pair_us = measure_ops(&x, graph, &slots, raw, start, dur, out);
    time_cycles(&x, graph, &slots, &out->cycle);
    if (opt->class_cost)
        class_costs(&x, graph, &slots, out);
    attribute_ops(p, raw, empty_pair_us, dur, out);
    out->op_start_us = util_xcalloc((size_t)d->size * n_ops, sizeof(double));
    out->op_dur_us = util_xcalloc((size_t)d->size * n_ops, sizeof(double));
    dist_gather_doubles(start, n_ops, out->op_start_us);
    dist_gather_doubles(dur, n_ops, out->op_dur_us);
    free(raw);
    free(start);
    free(dur);

    exec_close(&x, out);
    return out->check_failures ? 1 : 0;
}

void exec_close(exec_ctx *x, exec_result *out)
{
    x->dev->describe(x, true);
    x->comm->describe(&x->cc);
    memcpy(out->env, x->env, sizeof(x->env));
    out->n_env = x->n_env;
    exec_comm_fini(x);
    exec_watch_step("releasing the %s device", x->dev->name);
    x->dev->fini(x);
    exec_watch_plan(NULL);
}

void exec_result_free(exec_result *r)
{
    free(r->op_us);
    free(r->op_start_us);
    free(r->op_dur_us);
    memset(r, 0, sizeof(*r));
}

/* Per-op time of groups of like ops without a timer between them (`vpsim calibrate --measure`).
 *
 * A timer pair around every op (exec_run's instrumented passes) delays the kernel after each event
 * node by an amount that depends on the kernels around it, so exec_run can only attribute a constant
 * per op. The probe needs each shape's own cost instead: the time one more op of that shape adds to a
 * CUDA graph. So each group (n like ops with private weights) is captured twice, as its first k ops and
 * as all n, each graph launched alone between two timers outside it: the difference over n - k ops
 * cancels the graph launch and the timers, and leaves n - k times (node gap + kernel). Before every
 * timed launch an L2 flush op runs outside the timers, because in a replayed cycle each op's weights
 * were evicted by the gigabytes read since their last use. Devices without graphs (CPU) enqueue the
 * ops directly instead; the same difference then holds the host's per-op cost. */
#include "exec.h"
#include "exec_internal.h"
#include "exec_watch.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_FEW = EXEC_GRAPH_TIMED, SLOT_ALL = EXEC_GRAPH_INSTRUMENTED };

static void enqueue_ops(exec_ctx *x, int first, int count)
{
    const plan_op *ops = x->plan->phases[0].ops;
    for (int i = first; i < first + count; i++) {
        exec_watch_op(i, -1, -1);
        x->dev->compute(x, &ops[i], i);
    }
}

/* One timed execution of ops [first, first + count): from a captured graph when `slot` >= 0. */
static double time_once(exec_ctx *x, bool graph, int slot, int first, int count, int flush_op)
{
    if (flush_op >= 0)
        enqueue_ops(x, flush_op, 1);
    x->dev->timer_record(x, 0, 0);
    if (graph)
        x->dev->graph_launch(x, slot);
    else
        enqueue_ops(x, first, count);
    x->dev->timer_record(x, 1, 0);
    x->dev->sync(x);
    return x->dev->timer_elapsed_us(x, 0, 1);
}

static void capture(exec_ctx *x, int slot, int first, int count)
{
    x->dev->capture_begin(x);
    enqueue_ops(x, first, count);
    x->dev->capture_end(x, slot);
}

/* Median over `passes` of (t(all n) - t(first k)) / (n - k), the two alternating. */
static double time_group(exec_ctx *x, bool graph, int first, int n, int k, int passes, int warmup, int flush_op)
{
    if (graph) {
        capture(x, SLOT_FEW, first, k);
        capture(x, SLOT_ALL, first, n);
    }
    for (int i = 0; i < warmup; i++) {
        time_once(x, graph, SLOT_FEW, first, k, flush_op);
        time_once(x, graph, SLOT_ALL, first, n, flush_op);
    }
    double *d = util_xmalloc((size_t)passes * sizeof(double));
    for (int i = 0; i < passes; i++) {
        const double few = time_once(x, graph, SLOT_FEW, first, k, flush_op);
        const double all = time_once(x, graph, SLOT_ALL, first, n, flush_op);
        d[i] = (all - few) / (n - k);
    }
    const double m = util_percentile(d, passes, 0.5);
    free(d);
    if (graph)
        x->dev->graphs_release(x);
    return m;
}

int exec_time_groups(dist_job *d, const exec_options *opt, const plan *p, const exec_groups *g, double *per_op_us,
                     exec_result *env_out)
{
    memset(env_out, 0, sizeof(*env_out));
    if (p->n_phases != 1 || d->size != 1) {
        if (d->rank == 0)
            fprintf(stderr, "vpsim: exec_time_groups needs a one-phase plan on one rank\n");
        return 2;
    }
    exec_ctx x = {.opt = opt, .plan = p, .dist = *d};
    int rc = exec_open(&x);
    if (rc)
        return rc;
    const bool graph = opt->graph && x.dev->has_graphs;
    env_out->graph = graph;
    env_out->ranks = 1;
    env_out->iters = g->passes;
    x.dev->timers_alloc(&x, 2);
    x.dev->describe(&x, false);
    /* Warm-up of everything once: cuBLAS picks its kernels, pages fault in. */
    exec_watch_step("one eager pass over the probe's ops");
    enqueue_ops(&x, 0, p->phases[0].n_ops);
    x.dev->sync(&x);
    for (int i = 0; i < g->n_groups; i++) {
        const int first = g->first[i], n = g->count[i];
        const int k = g->k_few < n ? g->k_few : n - 1;
        exec_watch_step("timing group %d/%d (ops %d..%d)", i + 1, g->n_groups, first, first + n - 1);
        per_op_us[i] = k >= 1 ? time_group(&x, graph, first, n, k, g->passes, g->warmup, g->flush_op) : 0.0;
        if (opt->progress && d->rank == 0) {
            fprintf(stderr, "\rvpsim calibrate --measure: group %d/%d   ", i + 1, g->n_groups);
            if (i + 1 == g->n_groups)
                fprintf(stderr, "\n");
            fflush(stderr);
        }
    }
    exec_close(&x, env_out);
    return 0;
}

/* What `vpsim run` reports (report_run.h): the measured breakdown in the results schema shared with
 * model mode, the timing summary, the check's verdict, the model beside the measurement, the JSON. */
#include "report_run.h"

#include "../exec/exec.h"
#include "../model/model.h"
#include "../report/report_results.h"
#include "../comm/comm_p2p.h"
#include "../util/util.h"

#include <stdlib.h>
#include <string.h>

void report_run_results(results_cycle *r, const plan *p, const exec_result *res, const char *backend)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->backend, sizeof(r->backend), "%s", backend);
    r->available = true;
    snprintf(r->allreduce_method, sizeof(r->allreduce_method), "measured: median of %d instrumented %s passes",
             res->n_inst, res->inst_graph ? "graph" : "eager");
    r->tokens_per_cycle = p->expected_tokens;
    r->op_us = util_xmalloc((size_t)res->n_ops * sizeof(double));
    memcpy(r->op_us, res->op_us, (size_t)res->n_ops * sizeof(double));
    r->n_op_us = res->n_ops;
    int flat = 0;
    double ar_sum = 0, ag_sum = 0;
    int ar_n = 0, ag_n = 0;
    for (int ph = 0; ph < p->n_phases && ph < RESULTS_MAX_PHASES; ph++) {
        const plan_phase *pp = &p->phases[ph];
        results_phase *out = &r->phases[r->n_phases++];
        snprintf(out->name, sizeof(out->name), "%s", pp->name);
        out->kind = pp->kind;
        double coll_sum = 0;
        int coll_n = 0;
        bool target_pass = pp->kind == PLAN_PHASE_VERIFY || pp->kind == PLAN_PHASE_DECODE;
        for (int i = 0; i < pp->n_ops; i++, flat++) {
            const plan_op *op = &pp->ops[i];
            double us = res->op_us[flat];
            /* Side-stream ops overlap the main stream: the main stream is the critical path. */
            if (op->stream != PLAN_STREAM_MAIN)
                continue;
            out->ms += us / 1e3;
            out->class_ms[plan_op_class(op->kind)] += us / 1e3;
            if (op->kind == PLAN_OP_ALLREDUCE || op->kind == PLAN_OP_ALLREDUCE_NORM) { /* the latter: norm included */
                coll_sum += us;
                coll_n++;
                if (target_pass)
                    ar_sum += us, ar_n++;
            } else if (op->kind == PLAN_OP_ALLGATHER && target_pass) {
                ag_sum += us;
                ag_n++;
            }
        }
        out->collectives = coll_n;
        out->collective_us_mean = coll_n ? coll_sum / coll_n : 0.0;
    }
    r->allreduce_us = ar_n ? ar_sum / ar_n : 0.0;
    r->allgather_us = ag_n ? ag_sum / ag_n : 0.0;
    results_cycle_finish(r);
    /* The cycle is what the timed loop measured (a CUDA graph where possible), not the sum of ops; tok/s
     * and TPOT follow from it, so that the row's figures agree. */
    r->host_ms = 0.0;
    results_cycle_set_cycle(r, res->cycle.median_us / 1e3);
}

void report_run_summary(util_buf *out, const plan *p, const exec_result *res, const results_cycle *r)
{
    double sum_ms = 0;
    for (int i = 0; i < r->n_phases; i++)
        sum_ms += r->phases[i].ms;
    util_buf_printf(out, "\nmeasured on %d rank(s), %d timed cycles %s:\n", res->ranks, res->iters,
                    res->graph ? "(one CUDA graph per cycle)" : "(eager launches)");
    util_buf_printf(out, "  cycle              median %9.3f ms   p10 %9.3f   p90 %9.3f   min %9.3f   max %9.3f\n",
                    res->cycle.median_us / 1e3, res->cycle.p10_us / 1e3, res->cycle.p90_us / 1e3,
                    res->cycle.min_us / 1e3, res->cycle.max_us / 1e3);
    util_buf_printf(out, "  instrumented pass  median %9.3f ms   (%s, a timer pair around each of %d ops)\n",
                    res->inst_cycle.median_us / 1e3, res->inst_graph ? "CUDA graph" : "eager", res->n_ops);
    util_buf_printf(out, "  timer overhead     %9.3f us per op, subtracted from each op so that the main stream adds up "
                         "to the cycle (an empty timer pair: %.3f us)\n",
                    res->timer_overhead_us, res->timer_empty_pair_us);
    util_buf_printf(out, "  sum of per-op times (main stream) %.3f ms; replay overhead (cycle - sum) %+.3f ms\n", sum_ms,
                    res->cycle.median_us / 1e3 - sum_ms);
    if (res->class_cost) {
        util_buf_printf(out, "  class cost (cycle less the cycle without it): gemm %.3f ms, attention %.3f ms, other %.3f ms\n",
                        res->class_cost_us[PLAN_CLASS_GEMM] / 1e3, res->class_cost_us[PLAN_CLASS_ATTENTION] / 1e3,
                        res->class_cost_us[PLAN_CLASS_OTHER] / 1e3);
        double sum = res->class_none_us;
        for (int c = 0; c < PLAN_CLASS_COUNT; c++)
            sum += res->class_alone_us[c];
        util_buf_printf(out, "  class alone (its ops only, less none %.3f ms): gemm %.3f ms, attention %.3f ms, other %.3f ms; "
                             "the cycle less these: %+.3f ms of interaction\n",
                        res->class_none_us / 1e3, res->class_alone_us[PLAN_CLASS_GEMM] / 1e3,
                        res->class_alone_us[PLAN_CLASS_ATTENTION] / 1e3, res->class_alone_us[PLAN_CLASS_OTHER] / 1e3,
                        (res->cycle.median_us - sum) / 1e3);
    }
    for (int i = 0; i < res->n_env; i++)
        util_buf_printf(out, "  %-24s %s\n", res->env[i].key, res->env[i].value);
    report_run_check_verdict(out, p, res);
}

static int plan_collectives(const plan *p)
{
    int n = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++)
            n += plan_op_class(p->phases[ph].ops[i].kind) == PLAN_CLASS_COMM;
    return n;
}

void report_run_check_verdict(util_buf *out, const plan *p, const exec_result *res)
{
    if (!res->checked)
        util_buf_printf(out, "  check                    not run (--check compares every collective with a reference)\n");
    else if (res->check_failures)
        util_buf_printf(out, "CHECK FAILED: %lld of %d collective(s) wrong on some rank: %s\n", res->check_failures,
                        plan_collectives(p), res->check_message[0] ? res->check_message : "see stderr");
    else
        util_buf_printf(out, "  check                    passed: %d collective(s) of the plan, every element on every rank "
                             "equal to the reference\n", plan_collectives(p));
}

/* Main-stream time per op class over the phases of `kind` (-1: all phases), from per-op durations. */
static void class_sums(const plan *p, const double *op_us, int kind, double out_ms[PLAN_CLASS_COUNT + 1])
{
    memset(out_ms, 0, sizeof(double) * (PLAN_CLASS_COUNT + 1));
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            bool in = kind < 0 || (int)p->phases[ph].kind == kind;
            if (!in || op->stream != PLAN_STREAM_MAIN)
                continue;
            out_ms[plan_op_class(op->kind)] += op_us[flat] / 1e3;
            out_ms[PLAN_CLASS_COUNT] += op_us[flat] / 1e3;
        }
}

/* The run's backend over the whole cycle, in the run's launch mode. */
static void compare_cycle(report_run_cmp *cmp, const model_ctx *ctx, const exec_result *res, int backend,
                          const results_cycle *measured)
{
    if (backend < 0 || backend == CFG_BACKEND_MODEL)
        return;
    results_cycle r;
    memset(&r, 0, sizeof(r));
    model_eval(ctx, (cfg_backend)backend, false, &r);
    if (r.available) {
        cmp->have_cycle = true;
        snprintf(cmp->backend, sizeof(cmp->backend), "%s", cfg_backend_names[backend]);
        cmp->graph = res->graph;
        cmp->cycle_measured_ms = res->cycle.median_us / 1000.0;
        cmp->host_excluded_ms = r.host_ms;
        cmp->cycle_modelled_ms = r.cycle_ms - r.host_ms;
        cmp->allreduce_measured_us = measured->allreduce_us;
        cmp->allreduce_modelled_us = r.allreduce_us;
        snprintf(cmp->allreduce_method, sizeof(cmp->allreduce_method), "%s", r.allreduce_method);
    }
    results_cycle_free(&r);
}

/* Like for like: a model of one GPU set against a measurement on another is a projection, not a check. */
static void compare_conditions(report_run_cmp *cmp, const cfg_scenario *sc, const plan *p, const exec_result *res)
{
    cmp->tp = p->ranks;
    cmp->batch = p->batch;
    cmp->context = p->context;
    cmp->model_graph = res->graph;
    snprintf(cmp->model_gpu, sizeof(cmp->model_gpu), "%s", sc->system.gpu.name ? sc->system.gpu.name : "");
    const char *device = "", *gpu = "";
    for (int i = 0; i < res->n_env; i++) {
        if (!strcmp(res->env[i].key, "device"))
            device = res->env[i].value;
        else if (!strcmp(res->env[i].key, "gpu"))
            gpu = res->env[i].value;
    }
    snprintf(cmp->run_gpu, sizeof(cmp->run_gpu), "%s", *gpu ? gpu : device);
    /* (cmd_run compares CUDA runs only, so the device is a GPU here) */
    if (*gpu && cmp->model_gpu[0] && strncmp(gpu, cmp->model_gpu, strlen(cmp->model_gpu)))
        snprintf(cmp->warnings[cmp->n_warnings++], sizeof(cmp->warnings[0]),
                 "the run was on %s but the model is of %s (gpu %s): the comparison is across different GPUs "
                 "(pass --system with this machine's file to check the model)", gpu, sc->system.name,
                 cmp->model_gpu);
    /* The custom backends' --p2p against the system's topology.p2p (-1: no custom backend ran). */
    const int p2p = comm_p2p_of_env(res->env, res->n_env);
    if (comm_p2p_model_differs(p2p, sc->system.topology.p2p))
        comm_p2p_model_hint(cmp->warnings[cmp->n_warnings++], sizeof(cmp->warnings[0]), "the custom backend", p2p,
                           sc->system.topology.p2p);
}

int report_run_compare(report_run_cmp *cmp, const cfg_scenario *sc, const plan *p, const exec_result *res, int backend,
                    const results_cycle *measured_result)
{
    memset(cmp, 0, sizeof(*cmp));
    /* The model in the run's launch mode: shallow copy, only run.graph differs (per-op durations, the
     * compute comparison below, do not depend on it). */
    cfg_scenario as_run = *sc;
    as_run.run.graph = res->graph;
    char why[256];
    model_ctx *ctx = model_prepare(&as_run, p, why, sizeof(why));
    if (!ctx) {
        snprintf(cmp->note, sizeof(cmp->note), "no model comparison: %s", why);
        return -1;
    }
    compare_cycle(cmp, ctx, res, backend, measured_result);
    results_cycle r;
    memset(&r, 0, sizeof(r));
    /* Compute only: the collectives of the measurement are compared separately (allreduce_us). */
    model_eval(ctx, CFG_BACKEND_NONE, true, &r);
    if (!r.op_us || r.n_op_us != res->n_ops) {
        snprintf(cmp->note, sizeof(cmp->note), "no model comparison: %s", r.available ? "no per-op model" : r.reason);
        results_cycle_free(&r);
        model_free(ctx);
        return -1;
    }
    /* Collectives are left out on both sides so the comparison is compute against compute. */
    double *measured = util_xmalloc((size_t)res->n_ops * sizeof(double));
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            bool coll = plan_op_class(p->phases[ph].ops[i].kind) == PLAN_CLASS_COMM;
            measured[flat] = coll ? 0.0 : res->op_us[flat];
            if (coll)
                r.op_us[flat] = 0.0;
        }
    int target_kind = plan_find_phase(p, "verify") ? PLAN_PHASE_VERIFY : PLAN_PHASE_DECODE;
    class_sums(p, measured, target_kind, cmp->measured_ms);
    class_sums(p, r.op_us, target_kind, cmp->modelled_ms);
    class_sums(p, measured, -1, cmp->measured_cycle_ms);
    class_sums(p, r.op_us, -1, cmp->modelled_cycle_ms);
    snprintf(cmp->system, sizeof(cmp->system), "%s", sc->system.name);
    compare_conditions(cmp, sc, p, res);
    cmp->have = true;
    free(measured);
    results_cycle_free(&r);
    model_free(ctx);
    return 0;
}

static double err_pct(double model, double meas) { return meas > 0 ? 100.0 * (model - meas) / meas : 0.0; }

void report_run_compare_table(util_buf *out, const report_run_cmp *cmp)
{
    if (!cmp->have) {
        if (cmp->note[0])
            util_buf_printf(out, "\n%s\n", cmp->note);
        return;
    }
    util_buf_printf(out, "\nmodel (system %s, compute only) against this measurement, main stream, per op class:\n",
                    cmp->system);
    util_buf_printf(out, "  %-10s %12s %12s %8s   %12s %12s %8s\n", "class", "verify meas", "verify model", "error",
                    "cycle meas", "cycle model", "error");
    for (int c = 0; c <= PLAN_CLASS_COUNT; c++) {
        if (c == PLAN_CLASS_COMM)
            continue;
        const char *name = c == PLAN_CLASS_COUNT ? "total" : plan_class_names[c];
        util_buf_printf(out, "  %-10s %9.3f ms %9.3f ms %+7.1f%%   %9.3f ms %9.3f ms %+7.1f%%\n", name,
                        cmp->measured_ms[c], cmp->modelled_ms[c], err_pct(cmp->modelled_ms[c], cmp->measured_ms[c]),
                        cmp->measured_cycle_ms[c], cmp->modelled_cycle_ms[c],
                        err_pct(cmp->modelled_cycle_ms[c], cmp->measured_cycle_ms[c]));
    }
    if (cmp->have_cycle) {
        util_buf_printf(out, "model (system %s, backend %s, %s) against the timed cycle, collectives included; the "
                             "model's host overhead (%.3f ms) left out:\n",
                        cmp->system, cmp->backend, cmp->graph ? "CUDA graph" : "eager", cmp->host_excluded_ms);
        util_buf_printf(out, "  %-10s %9.3f ms %9.3f ms %+7.1f%%\n", "cycle", cmp->cycle_measured_ms,
                        cmp->cycle_modelled_ms, err_pct(cmp->cycle_modelled_ms, cmp->cycle_measured_ms));
        util_buf_printf(out, "  %-10s %9.2f us %9.2f us %+7.1f%%   (%s; measured: per-op timers in the cycle)\n",
                        "allreduce", cmp->allreduce_measured_us, cmp->allreduce_modelled_us,
                        err_pct(cmp->allreduce_modelled_us, cmp->allreduce_measured_us), cmp->allreduce_method);
    }
    for (int i = 0; i < cmp->n_warnings; i++)
        util_buf_printf(out, "  ! %s\n", cmp->warnings[i]);
}

static void compare_json(util_json *j, const report_run_cmp *cmp)
{
    util_json_key(j, "model_comparison");
    if (!cmp || !cmp->have) {
        util_json_null(j);
        return;
    }
    util_json_obj_begin(j);
    util_json_kstr(j, "system", cmp->system);
    util_json_kstr(j, "what", "compute ops only, main stream, ms; error = (model - measured) / measured");
    util_json_key(j, "conditions");
    util_json_obj_begin(j);
    util_json_kint(j, "tp", cmp->tp);
    util_json_kint(j, "batch", cmp->batch);
    util_json_kint(j, "context", cmp->context);
    util_json_kbool(j, "graph", cmp->model_graph);
    util_json_kstr(j, "run_gpu", cmp->run_gpu);
    util_json_kstr(j, "model_gpu", cmp->model_gpu);
    util_json_kstr(j, "note", "the model is evaluated on the run's plan and launch mode: tp, batch, context and "
                              "graph are those of both sides");
    util_json_obj_end(j);
    util_json_key(j, "warnings");
    util_json_arr_begin(j);
    for (int i = 0; i < cmp->n_warnings; i++)
        util_json_str(j, cmp->warnings[i]);
    util_json_arr_end(j);
    const char *scopes[] = {"verify", "cycle"};
    for (int s = 0; s < 2; s++) {
        const double *meas = s ? cmp->measured_cycle_ms : cmp->measured_ms;
        const double *mod = s ? cmp->modelled_cycle_ms : cmp->modelled_ms;
        util_json_key(j, scopes[s]);
        util_json_obj_begin(j);
        for (int c = 0; c <= PLAN_CLASS_COUNT; c++) {
            if (c == PLAN_CLASS_COMM)
                continue;
            util_json_key(j, c == PLAN_CLASS_COUNT ? "total" : plan_class_names[c]);
            util_json_obj_begin(j);
            util_json_knum(j, "measured_ms", meas[c]);
            util_json_knum(j, "modelled_ms", mod[c]);
            util_json_knum(j, "error_pct", err_pct(mod[c], meas[c]));
            util_json_obj_end(j);
        }
        util_json_obj_end(j);
    }
    util_json_key(j, "backend_cycle");
    if (cmp->have_cycle) {
        util_json_obj_begin(j);
        util_json_kstr(j, "what", "the timed cycle (median) against the model of the same backend and launch mode, "
                                  "collectives included, host.cycle_overhead_us left out (a replay pays none)");
        util_json_kstr(j, "backend", cmp->backend);
        util_json_kbool(j, "graph", cmp->graph);
        util_json_knum(j, "measured_ms", cmp->cycle_measured_ms);
        util_json_knum(j, "modelled_ms", cmp->cycle_modelled_ms);
        util_json_knum(j, "error_pct", err_pct(cmp->cycle_modelled_ms, cmp->cycle_measured_ms));
        util_json_knum(j, "host_overhead_excluded_ms", cmp->host_excluded_ms);
        util_json_knum(j, "allreduce_measured_us", cmp->allreduce_measured_us);
        util_json_knum(j, "allreduce_modelled_us", cmp->allreduce_modelled_us);
        util_json_kstr(j, "allreduce_method", cmp->allreduce_method);
        util_json_obj_end(j);
    } else {
        util_json_null(j);
    }
    util_json_obj_end(j);
}

typedef struct run_extra {
    const exec_result *res;
    const report_run_cmp *cmp;
    const plan *p;
    int argc;
    char **argv;
} run_extra;

/* What only a measurement has: timing spread, environment, model comparison, command line. */
static void write_run_extra(util_json *j, const void *ctx)
{
    const run_extra *e = ctx;
    const exec_result *res = e->res;
    util_json_key(j, "measured");
    util_json_obj_begin(j);
    util_json_kint(j, "ranks", res->ranks);
    util_json_kint(j, "iters", res->iters);
    util_json_kbool(j, "graph", res->graph);
    util_json_knum(j, "cycle_median_ms", res->cycle.median_us / 1e3);
    util_json_knum(j, "cycle_p10_ms", res->cycle.p10_us / 1e3);
    util_json_knum(j, "cycle_p90_ms", res->cycle.p90_us / 1e3);
    util_json_knum(j, "cycle_min_ms", res->cycle.min_us / 1e3);
    util_json_knum(j, "cycle_max_ms", res->cycle.max_us / 1e3);
    util_json_kint(j, "instrumented_passes", res->n_inst);
    util_json_knum(j, "instrumented_pass_median_ms", res->inst_cycle.median_us / 1e3);
    util_json_kbool(j, "instrumented_as_graph", res->inst_graph);
    util_json_knum(j, "timer_overhead_us", res->timer_overhead_us);
    util_json_knum(j, "timer_empty_pair_us", res->timer_empty_pair_us);
    util_json_kint(j, "check_failures", res->check_failures);
    util_json_key(j, "check");
    util_json_obj_begin(j);
    util_json_kbool(j, "run", res->checked);
    util_json_key(j, "passed");
    if (res->checked)
        util_json_bool(j, res->check_failures == 0);
    else
        util_json_null(j);
    util_json_kint(j, "collectives", plan_collectives(e->p));
    util_json_kint(j, "failures", res->check_failures);
    util_json_key(j, "message");
    if (res->check_failures && res->check_message[0])
        util_json_str(j, res->check_message);
    else
        util_json_null(j);
    util_json_obj_end(j);
    if (res->class_cost) {
        util_json_key(j, "class_cost_ms");
        util_json_obj_begin(j);
        for (int c = 0; c < PLAN_CLASS_COUNT; c++)
            if (c != PLAN_CLASS_COMM)
                util_json_knum(j, plan_class_names[c], res->class_cost_us[c] / 1e3);
        util_json_kstr(j, "method", "median over rounds of the cycle less the cycle with the class's compute ops left "
                                    "out, launched back to back, which first alternating (--class-cost; --iters "
                                    "rounds, no per-op timers)");
        util_json_obj_end(j);
        util_json_key(j, "class_alone_ms");
        util_json_obj_begin(j);
        for (int c = 0; c < PLAN_CLASS_COUNT; c++)
            if (c != PLAN_CLASS_COMM)
                util_json_knum(j, plan_class_names[c], res->class_alone_us[c] / 1e3);
        util_json_knum(j, "none", res->class_none_us / 1e3);
        util_json_kstr(j, "method", "median of --iters cycles in a row with only the class's compute ops, less `none`, "
                                    "the same of the cycle with no compute op (--class-cost)");
        util_json_obj_end(j);
    }
    util_json_obj_end(j);
    util_json_key(j, "environment");
    util_json_obj_begin(j);
    for (int i = 0; i < res->n_env; i++)
        util_json_kstr(j, res->env[i].key, res->env[i].value);
    util_json_obj_end(j);
    compare_json(j, e->cmp);
    util_json_key(j, "command_line");
    util_json_arr_begin(j);
    for (int i = 0; i < e->argc; i++)
        util_json_str(j, e->argv[i]);
    util_json_arr_end(j);
}

void report_run_json(util_json *j, const report_results_meta *m, const results_cycle *r, const plan *p,
                  const exec_result *res, const report_run_cmp *cmp, int argc, char **argv)
{
    run_extra e = {.res = res, .cmp = cmp, .p = p, .argc = argc, .argv = argv};
    report_results_meta meta = *m;
    meta.write_extra = write_run_extra;
    meta.extra_ctx = &e;
    report_results_json(j, &meta, r, 1, p);
}

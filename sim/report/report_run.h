/* report_run: what `vpsim run` reports (report_run.c): the measured breakdown as a results row, the
 * timing summary, --check's verdict, the model beside the measurement, and the run's results JSON. */
#ifndef VPSIM_REPORT_RUN_H
#define VPSIM_REPORT_RUN_H

#include "report_results.h"

#include "../config/cfg.h"
#include "../plan/plan.h"
#include "../util/util.h"

#include <stdbool.h>

struct exec_result;
struct results_cycle;
struct report_results_meta;
struct util_json;
/* The run's measured breakdown as a results row of backend `backend` (its per-op times, the timed cycle). */
void report_run_results(struct results_cycle *r, const plan *p, const struct exec_result *res, const char *backend);
/* The timing summary under the table: the cycle's spread, the sum of per-op times against the cycle. */
void report_run_summary(util_buf *out, const plan *p, const struct exec_result *res, const struct results_cycle *r);
/* --check's verdict in one line: passed (with the collectives checked), failed, or not run. */
void report_run_check_verdict(util_buf *out, const plan *p, const struct exec_result *res);
/* Model (compute only, on the scenario's system) against the measured per-op times, per op class. */
typedef struct report_run_cmp {
    bool have;
    char system[64];
    char note[320];
    double measured_ms[PLAN_CLASS_COUNT + 1], modelled_ms[PLAN_CLASS_COUNT + 1]; /* verify; [COUNT] = total */
    double measured_cycle_ms[PLAN_CLASS_COUNT + 1], modelled_cycle_ms[PLAN_CLASS_COUNT + 1];
    /* The whole cycle with the run's backend, as the replay runs it (graph or eager; the model's
     * host.cycle_overhead_us, which a replay has no serving stack to pay, left out). */
    bool have_cycle;
    char backend[64];
    bool graph;
    double cycle_measured_ms, cycle_modelled_ms, host_excluded_ms;
    double allreduce_measured_us, allreduce_modelled_us; /* mean per verify allreduce */
    char allreduce_method[96];
    /* What both sides were taken under (the model uses the run's plan, so TP, batch, context and launch
     * mode agree by construction; the device may not), and the caveats when they do not agree. */
    int tp, batch, context;
    bool model_graph;
    char run_gpu[160];
    char model_gpu[96];
    int n_warnings;
    char warnings[2][320];
} report_run_cmp;
/* `backend`: the run's cfg_backend, or -1 (a per-size policy: no whole-cycle comparison). */
int report_run_compare(report_run_cmp *cmp, const cfg_scenario *sc, const plan *p, const struct exec_result *res,
                       int backend, const struct results_cycle *measured);
void report_run_compare_table(util_buf *out, const report_run_cmp *cmp);
void report_run_json(struct util_json *j, const struct report_results_meta *m, const struct results_cycle *r,
                     const plan *p, const struct exec_result *res, const report_run_cmp *cmp, int argc, char **argv);

#endif

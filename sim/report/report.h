/* report: turning plans and results into tables, CSV and JSON. */
#ifndef VPSIM_REPORT_H
#define VPSIM_REPORT_H

#include "../config/cfg.h"
#include "../plan/plan.h"
#include "../plan/plan_memory.h"
#include "../util/util.h"

/* One row per phase: op counts by kind, GFLOP, weight bytes, collectives. `sc` may be NULL. */
void report_plan_table(util_buf *out, const plan *p, const cfg_scenario *sc);
/* The per-rank memory account: one line per item with its formula, the total against the GPU. */
void report_plan_memory(util_buf *out, const plan_memory *m);
/* One row per op with every shape field and derived cost. */
void report_plan_csv(util_buf *out, const plan *p);

/* Chrome trace of one pass: start/dur are [ranks][n_ops] in flat plan order (us). */
void report_trace_json(util_buf *out, const plan *p, int ranks, const double *start_us, const double *dur_us);

#endif

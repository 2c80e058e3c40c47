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
/* The pieces it is made of, for other timelines laid out the same way: begin, a process (rank) with its
 * threads (streams), its events, end (the document into `out`). */
typedef struct report_trace_ev {
    const char *name, *cat;
    double ts, dur;
    int pid, tid;
    const char *phase;
    int layer; /* below -1: not written */
    int index;
} report_trace_ev;
void report_trace_begin(util_json *j);
void report_trace_process(util_json *j, int pid, const char *name, const char *const *threads, int n_threads);
void report_trace_event(util_json *j, const report_trace_ev *e);
void report_trace_end(util_json *j, util_buf *out);

#endif

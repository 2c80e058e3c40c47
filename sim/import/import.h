/* import: a server's traces as measured input, what `vpsim import-trace` (sim/cli/cmd_import_trace.c)
 * hands to its report (import_report.c) and its system file (import_system.c). */
#ifndef VPSIM_IMPORT_H
#define VPSIM_IMPORT_H

#include "../config/cfg.h"
#include "../plan/plan.h"
#include "../report/report_results.h"
#include "../results/results.h"
#include "../trace/trace.h"

typedef struct import_ctx {
    /* What the command line asked for: the scenario (as named), its --set overrides, --out. */
    const char *scenario_path, *out_path;
    const char *const *sets;
    int n_sets;
    const cfg_scenario *sc;
    const plan *plan;
    trace_rank *ranks;
    int n_ranks; /* read (in rank order) */
    int n_alloc; /* ranks allocated (one per file) */
    trace_summary *sum;
    trace_map *map;
    char files[400]; /* the trace files, comma-separated */
    char tag[600];     /* "measured: server trace, FILE, DATE" */
    bool custom_ar;    /* the allreduce kernels are a custom allreduce's, not NCCL's */
} import_ctx;

/* How the system file fits the trace: the per-op gap it had to give, and the model's answer with it. */
typedef struct import_fit {
    double gap_us, lead_us, host_us, unplaced_us, negative_gap;
    int main_ops;
    bool checked;
    bool pooled[PLAN_OP_KIND_COUNT]; /* measured.ops.<kind> spread with its class's other kinds (import_system.c) */
    double model_cycle_ms, model_verify_ms, model_allreduce_us;
} import_fit;

/* Read one trace per rank (import_read.c) with the kernel patterns of `shipped` and `extra` (NULL: none)
 * into x (ranks, sum, map, files, tag, custom_ar): VP_EXIT_OK, or VP_EXIT_USAGE after naming the file
 * and what is wrong with it. import_free frees what was read, after a failure too. */
int import_read(import_ctx *x, const char *shipped, const char *extra, const char *const *files, int n_files);
void import_free(import_ctx *x);
/* The measured.allreduce key the trace's allreduce goes to: nccl, or oneshot for a custom allreduce. */
const char *import_backend_key(const import_ctx *x);
/* The whole system file (base + the trace's figures). 0, or an exit status after saying why. */
int import_system_text(const import_ctx *x, util_buf *out, import_fit *fit);
/* Model the scenario on `system_path` in the trace's launch mode: the cycle into `fit`. */
int import_round_trip(const import_ctx *x, const char *system_path, import_fit *fit);

/* The trace as a results row (vpsim.results/1), as `vpsim run` fills one. */
void import_fill_results(const import_ctx *x, results_cycle *r);
/* The table and the import's own sections (phases, collectives, unmapped kernels, the fit). */
void import_report_table(util_buf *out, const import_ctx *x, const results_cycle *r, const import_fit *fit);
/* The results JSON with an "import" block. */
void import_report_json(util_buf *out, const import_ctx *x, const results_cycle *r, const import_fit *fit);
/* One matched cycle of every rank as a Chrome trace, laid out as `vpsim run --trace` lays out ops. */
void import_report_chrome(util_buf *out, const import_ctx *x);

#endif

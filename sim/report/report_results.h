/* report_results: the result of one cycle per backend, modelled (`vpsim model`) or measured (`vpsim run`),
 * and its three renderings: a table for people, JSON ("vpsim.results/1") and CSV for tools.
 *
 * Both modes fill the same struct so measured and modelled runs compare key by key, and (with the
 * optional per-op array, in plan order) op by op. */
#ifndef VPSIM_REPORT_RESULTS_H
#define VPSIM_REPORT_RESULTS_H

#include "../plan/plan.h"
#include "../util/util.h"

#include <stdbool.h>

#define REPORT_RESULTS_SCHEMA "vpsim.results/1"
#define REPORT_MAX_PHASES 40

typedef struct report_phase_result {
    char name[PLAN_NAME_MAX];
    plan_phase_kind kind;
    double ms;
    double class_ms[PLAN_CLASS_COUNT]; /* sums to ms: each op's share of the critical path */
    int collectives;
    double collective_us_mean; /* mean duration of this phase's allreduces (0 when none) */
} report_phase_result;

typedef struct report_result {
    char backend[64]; /* a backend name, or a per-size policy for runs */
    bool available;
    char reason[256]; /* why not, when !available */

    double allreduce_us;         /* mean per allreduce in the verify (or decode) pass */
    char allreduce_method[96];   /* e.g. "formula: ring/LL over P2P" or "measured table (1 point)" */
    double allgather_us;         /* mean per all-gather in the verify pass */

    double verify_ms;                       /* the target pass (decode phase without speculation) */
    double verify_class_ms[PLAN_CLASS_COUNT];
    double draft_ms;        /* every draft-model phase: draft steps plus draft-extend */
    double draft_steps_ms;  /* the draft steps alone */
    double draft_extend_ms; /* the draft-extend alone */
    double host_ms;         /* host overhead per cycle */
    double cycle_ms;        /* sum of the phases plus host overhead */
    double tokens_per_cycle;
    double tok_per_s; /* tokens_per_cycle / cycle seconds */

    int n_phases;
    report_phase_result phases[REPORT_MAX_PHASES];

    /* Optional: each op's own duration in microseconds, in plan order (phase by phase), NULL if absent.
     * Owned by the result (report_result_free). */
    double *op_us;
    int n_op_us;
} report_result;

/* Context shared by every row of one results document. Strings may be NULL. */
typedef struct report_results_meta {
    const char *mode;        /* "model" or "run" */
    const char *scenario;    /* scenario name */
    const char *scenario_path;
    const char *system;      /* system name */
    const char *model;       /* target model name */
    int tp, batch, context;
    bool graph;
    double expected_tokens;
    const char *tokens_formula;
    const char *provenance; /* e.g. "modelled (analytic, docs/model.md)" */
    /* Optional: writes further "key": value pairs at the top level (a run adds its timing spread,
     * environment and command line) before the document closes. */
    void (*write_extra)(util_json *j, const void *ctx);
    const void *extra_ctx;
} report_results_meta;

void report_result_free(report_result *r);

/* Fill the verify / draft / cycle totals and tok/s from the phases, host_ms and tokens_per_cycle. */
void report_result_finish(report_result *r);

/* The whole document: {"schema", "mode", ..., "backends": [...]}. `p` (may be NULL) names the ops when
 * a result carries op_us. */
void report_results_json(util_json *j, const report_results_meta *m, const report_result *rs, int n,
                         const plan *p);
/* One row per backend, plus a note for each unavailable backend. */
void report_results_table(util_buf *out, const report_results_meta *m, const report_result *rs, int n);

/* CSV: header and one row per backend. `extra_keys` / `extra_vals` prefix each row (sweep parameters). */
void report_results_csv_header(util_buf *out, const char *const *extra_keys, int n_extra);
void report_results_csv_row(util_buf *out, const char *const *extra_vals, int n_extra, const report_result *r);
/* Append `s` to out as one CSV field (quoted when needed). */
void report_csv_field(util_buf *out, const char *s);

#endif

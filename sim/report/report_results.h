/* report_results: the three renderings of results (sim/results/results.h): a table for people, JSON
 * ("vpsim.results/1") and CSV for tools. */
#ifndef VPSIM_REPORT_RESULTS_H
#define VPSIM_REPORT_RESULTS_H

#include "../plan/plan.h"
#include "../results/results.h"
#include "../util/util.h"

#include <stdbool.h>

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

/* The whole document: {"schema", "mode", ..., "backends": [...]}. `p` (may be NULL) names the ops when
 * a result carries op_us. */
void report_results_json(util_json *j, const report_results_meta *m, const results_cycle *rs, int n,
                         const plan *p);
/* "warnings": [{"code", "text"}, ...] of one result, as every vpsim JSON writes them. */
void report_results_json_warnings(util_json *j, const results_cycle *r);
/* One row per backend, plus a note for each unavailable backend. */
void report_results_table(util_buf *out, const report_results_meta *m, const results_cycle *rs, int n);

/* CSV: header and one row per backend. `extra_keys` / `extra_vals` prefix each row (sweep parameters). */
void report_results_csv_header(util_buf *out, const char *const *extra_keys, int n_extra);
void report_results_csv_row(util_buf *out, const char *const *extra_vals, int n_extra, const results_cycle *r);
/* Index of column `name` among the results columns (after any extra keys), -1 when there is none. */
int report_results_csv_column(const char *name);

#endif

/* results_doc: the "vpsim.results/1" record as one struct — the context of a results document, its rows
 * (results_cycle, one per backend) and the blocks only a run or an import writes — so that one schema
 * table (results_json.c) writes it, reads it back and gives its JSON Schema (docs/schemas/).
 *
 * A producer fills a results_doc that points at its own data (report_results_json does, from
 * report_results_meta) and never frees it; results_json_load fills one that owns everything, freed with
 * results_doc_free. */
#ifndef VPSIM_RESULTS_DOC_H
#define VPSIM_RESULTS_DOC_H

#include "../config/cfg_tree.h"
#include "../util/util.h"
#include "../util/util_env.h"
#include "results.h"

#include <stdbool.h>

typedef enum { RESULTS_MODE_MODEL, RESULTS_MODE_RUN, RESULTS_MODE_IMPORT, RESULTS_MODE_COUNT } results_mode;
extern const char *const results_mode_names[]; /* "model", "run", "import-trace" */

/* ---- what a run adds (sim/cli/run_report.c writes it) ---- */

typedef struct results_check {
    bool run;
    bool passed; /* null (not run) reads false */
    int collectives, failures;
    char *message; /* NULL: none */
} results_check;

typedef struct results_measured {
    int ranks, iters;
    bool graph;
    double cycle_median_ms, cycle_p10_ms, cycle_p90_ms, cycle_min_ms, cycle_max_ms;
    int instrumented_passes;
    double instrumented_pass_median_ms;
    bool instrumented_as_graph;
    double timer_overhead_us, timer_empty_pair_us;
    int check_failures;
    results_check check;
    double class_cost_ms[PLAN_CLASS_COUNT]; /* --class-cost (the comm class has none) */
    double class_alone_ms[PLAN_CLASS_COUNT], class_none_ms; /* --class-cost: each class alone */
    bool has_class_cost, has_class_alone;
} results_measured;

/* Model against measurement of one op class (or the total): ms, error in percent. */
typedef struct results_class_cmp {
    double measured_ms, modelled_ms, error_pct;
} results_class_cmp;

typedef struct results_comparison {
    char *system;
    int tp, batch, context;
    bool graph;
    char *run_gpu, *model_gpu;
    char **warnings;
    int n_warnings;
    results_class_cmp verify[PLAN_CLASS_COUNT + 1], cycle[PLAN_CLASS_COUNT + 1]; /* [COUNT]: the total */
    bool has_backend_cycle;
    char *cycle_backend;
    bool cycle_graph;
    double cycle_measured_ms, cycle_modelled_ms, cycle_error_pct, host_overhead_excluded_ms;
    double allreduce_measured_us, allreduce_modelled_us;
    char *allreduce_method;
} results_comparison;

typedef struct results_run {
    results_measured measured;
    util_env_item env[UTIL_ENV_MAX];
    int n_env;
    bool has_comparison; /* model_comparison is not null */
    results_comparison comparison;
    char **command_line;
    int n_command_line;
} results_run;

/* ---- what an import adds (sim/cli/import_report.c writes it) ---- */

typedef struct results_import_coll {
    plan_op_kind kind;
    int calls_per_cycle;
    double call_us, wire_us, wait_us;
    double skew_mean_us, skew_p10_us, skew_p50_us, skew_p90_us, skew_max_us;
    double clock_skew_p50_us; /* NaN: not measured */
    int skew_samples;
} results_import_coll;

typedef struct results_import_phase {
    char name[PLAN_NAME_MAX];
    double ms;
    double kernel_us[PLAN_OP_KIND_COUNT]; /* 0 for a kind with no kernel */
    double unmapped_us, gap_us, lead_us, tail_us;
    results_import_coll *colls;
    int n_colls;
} results_import_phase;

typedef struct results_import_name {
    char *name;
    double us;
    int count;
} results_import_name;

typedef struct results_import {
    char *source;
    char **files;
    int n_files;
    int ranks, cycles, draft_steps;
    int phases_by; /* results_phases_by_names */
    bool graph;
    double cycle_ms, host_ms, cycle_p50_ms, kernel_us, named_fraction;
    results_import_phase *phases;
    int n_phases;
    results_import_name *unmapped;
    int n_unmapped;
    bool has_model_check;
    double model_cycle_ms, trace_cycle_ms, model_error_pct, gap_per_op_us;
} results_import;
extern const char *const results_phases_by_names[]; /* "markers", "collective pattern" */

/* ---- the document ---- */

typedef struct results_doc {
    results_mode mode;
    char *scenario, *scenario_path, *system, *model; /* NULL: null */
    int tp, batch, context;
    bool graph;
    double expected_tokens;
    char *tokens_formula, *provenance;
    results_cycle *backends;
    int n_backends;
    /* Writing: the plan whose ops a row's op_us times, in plan order (NULL: rows carry no ops). */
    const plan *plan;
    results_run run;       /* mode run */
    results_import import; /* mode import-trace */
} results_doc;

/* The fields of the document up to and including "backends", from the table; the run's and the import's
 * blocks follow from their producers (report_results_meta.write_extra). */
void results_json_write_fields(util_json *j, const results_doc *d);
/* "warnings": [{"code", "text"}, ...] of one row, as every vpsim JSON writes them. */
void results_json_write_warnings(util_json *j, const results_cycle *r);
/* The record's JSON Schema (draft 2020-12): `vpsim schema results`. */
void results_json_schema(util_json *j);
/* Bind a parsed results document (`root`): its "schema" first ("not a vpsim results file" otherwise),
 * then every key by the table: unknown keys, wrong types, missing keys and a block of another mode are
 * refused with file:line:col. 0, or -1 with err set; free `d` with results_doc_free either way. */
int results_json_bind(const cfg_node *root, results_doc *d, cfg_error *err);
/* results_json_bind of a file. */
int results_json_load(const char *path, results_doc *d, cfg_error *err);
void results_doc_free(results_doc *d);

#endif

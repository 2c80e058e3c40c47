/* compare: `vpsim compare` — a list of named variants of one scenario (each a set of --set overrides),
 * modelled per backend and ranked by tok/s against a baseline. */
#ifndef VPSIM_COMPARE_H
#define VPSIM_COMPARE_H

#include "../config/cfg.h"
#include "../results/results.h"
#include "../util/util.h"

#include <stdbool.h>

#define COMPARE_SCHEMA "vpsim.compare/1"
#define COMPARE_MAX_VARIANTS 256
#define COMPARE_MAX_SETS 64
#define COMPARE_NAME_MAX 64

typedef struct compare_sets {
    int n;
    char *v[COMPARE_MAX_SETS]; /* "dotted.key=value", each checked by cfg_check_set_key on load */
} compare_sets;

typedef struct compare_variant {
    char name[COMPARE_NAME_MAX];
    compare_sets set;
    char *note;    /* may be NULL */
    bool baseline;
    bool added;    /* not from the file: the automatic speculation-off row */
} compare_variant;

typedef struct compare_file {
    compare_variant *v;
    int n;
    int baseline; /* index of the baseline variant */
} compare_file;

/* Load a variants file: a YAML list of {name, set: [KEY=VALUE, ...], note, baseline}. Unknown fields,
 * unknown keys in `set`, duplicate names and more than one baseline are errors at file:line:col. */
int compare_load(const char *path, compare_file *out, cfg_error *err);
void compare_file_free(compare_file *f);

/* One ranked row: a variant with one backend. */
typedef struct compare_row {
    const compare_variant *variant;
    results_cycle r;       /* r.available false: r.reason says why (load error, backend, memory) */
    bool loaded;           /* the variant's scenario loaded (else r.reason is the load error) */
    bool baseline;         /* the row gains are measured against */
    double gain_pct;       /* tok/s over the baseline's, in percent; valid when have_gain */
    bool have_gain;
    /* Ranked apart: its allreduce figure is the formula because the system file's measurement for that
     * backend does not apply here (results warning `table-not-applied`): its gain over a baseline that
     * uses the measurement compares a formula with a measurement. */
    bool apart;
    char source[128];      /* "probed", "measured", "formula" or "mixed: ..." */
    char engine[300];      /* what SGLang / vLLM would need */
    const struct plan *plan; /* the variant's plan (in compare_doc.plans), NULL when it did not build */
    char rests[640];       /* what the gain's sign rests on (model_rest_line), "" when it holds */
} compare_row;

typedef struct compare_plan compare_plan; /* a plan shared by variants (compare_run.c) */

typedef struct compare_doc {
    const char *scenario_path, *variants_path, *scenario, *system, *model;
    compare_row *rows;
    int n_rows;
    compare_plan *plans; /* what rows[].plan point into */
    int n_plans;
    const char *auto_nospec; /* why a speculation-off row was added, or NULL */
    char rests_tried[512];   /* the unmeasured inputs whose other values were tried, "" when none applied */
} compare_doc;

/* What the variants are modelled against (compare_run.c): the scenario as the command line gave it (its
 * --set overrides come before each variant's), and the backends (n_bes 0: each variant's own
 * run.backend). */
typedef struct compare_in {
    const char *scenario_path, *system_path;
    const char *const *sets;
    int n_sets;
    const cfg_backend *bes;
    int n_bes;
} compare_in;
/* Model every variant of f (and a "speculation off" row, added to f, when `base` speculates and no
 * variant sets speculative.algorithm=none), rank the rows best first against the baseline and say what
 * each gain's sign rests on: into d (its scenario_path and variants_path are the caller's); free with
 * compare_doc_free. A variant that does not load or fit is a row with the reason, not a failure. */
void compare_rank(const compare_in *in, const cfg_scenario *base, compare_file *f, compare_doc *d);
void compare_doc_free(compare_doc *d);

/* compare_format.c */
void compare_table(util_buf *out, const compare_doc *d);
void compare_markdown(util_buf *out, const compare_doc *d);
void compare_json(util_buf *out, const compare_doc *d);

#endif

/* sweep: the state of one `vpsim sweep` (sim/cli/cmd_sweep.c fills it from the options): its varied
 * keys and values (sweep_vary.c), the engine (sweep_run.c, its workers sweep_jobs.c), the partial file it
 * resumes from (sweep_resume.c) and the summary (sweep_summary.c). */
#ifndef VPSIM_SWEEP_H
#define VPSIM_SWEEP_H

#include "../config/cfg.h"
#include "../util/util.h"

#include <signal.h>
#include <stdio.h>

#define SWEEP_MAX_VARY 16
#define SWEEP_MAX_VALUES 4096
#define SWEEP_MAX_SCENARIOS 10000000LL
#define SWEEP_MAX_JOBS 256

typedef struct vary {
    char *key;
    char **values;
    int n;
} vary;

/* A key derived from a varied one at each point: with topk=1 SGLang verifies steps + 1 tokens, so
 * varying speculative.steps alone sets num_draft_tokens = steps + 1 (and varying num_draft_tokens alone
 * sets steps = num_draft_tokens - 1). Points with topk > 1 keep the scenario's value. */
typedef struct sweep_tie {
    int from;        /* index of the varied key it follows, -1 when no tie */
    const char *key; /* the derived key (a CSV column after the varied ones) */
    int offset;      /* derived = varied + offset */
    int topk_vary;   /* index of a varied speculative.topk, -1 when fixed */
    int base_topk;   /* the scenario's topk when not varied */
} sweep_tie;

typedef struct sweep {
    /* The scenario every point starts from, as the command line gave it, and the CSV to write. */
    const char *scenario_path, *system_path, *out_path;
    const char *const *sets;
    int n_sets;
    vary v[SWEEP_MAX_VARY];
    int n_vary;
    sweep_tie tie;
    int n_cols; /* leading CSV columns: the varied keys, then the tied key if any */
    int top;    /* summary: at most this many point lines */
    cfg_backend bes[CFG_BACKEND_COUNT];
    int n_bes;
    long long total, limit;
    int jobs; /* worker processes (--jobs; 0: sweep_default_jobs) */
    bool restart;
    char **rows; /* per scenario: its CSV rows, NULL until done */
    char *partial_path;
    char *header; /* what identifies this sweep in the partial file (sweep_make_header) */
    double t0;     /* when sweep_run started (the closing line's duration) */
    int jobs_used; /* the processes that modelled the points */
} sweep;

/* Model every point not in FILE.partial yet (sweep_run.c), appending each to it, then the whole CSV into
 * `csv`: VP_EXIT_OK; VP_EXIT_FAIL when stopped (Ctrl-C, --limit, a failed worker or write: said, and
 * the same command resumes); VP_EXIT_USAGE when the partial file belongs to another sweep. */
int sweep_run(sweep *sw, util_buf *csv);
/* After the CSV is written: the partial file removed, the closing line on stderr, the summary on stdout. */
void sweep_done(sweep *sw);
/* Everything sw holds (the values, the rows, the partial path and header). */
void sweep_free(sweep *sw);

/* ---- sweep_vary.c: values, ties, checks ---- */

/* Parse "--vary KEY=V1,V2,A..B" into sw->v (integer ranges expanded). 0, or VP_EXIT_USAGE after
 * printing why. */
int sweep_add_vary(sweep *sw, const char *arg);
/* Decide the tie (sweep_tie) from the varied keys and the scenario; says so once on stderr. */
void sweep_setup_tie(sweep *sw);
/* The --set list of scenario `idx` (mixed radix, last --vary fastest): the fixed --set ones, then one
 * per varied key, then the tied key. `vals` receives each varied value (n_vary of them) and `owned` the
 * strings to free (sweep_free_sets). Returns the count. */
int sweep_scenario_sets(const sweep *sw, long long idx, const char **sets, char **owned, const char **vals);
/* The same from explicit values (one per varied key). */
int sweep_sets_from_vals(const sweep *sw, const char **vals, const char **sets, char **owned);
void sweep_free_sets(const sweep *sw, char **owned);
/* Check every value loads with some choice of the others before anything runs. 0 or -1 (printed). */
int sweep_check_values(const sweep *sw);

/* ---- sweep_summary.c ---- */

/* Print the summary of the finished sweep (sw->rows) to `out`: best backend per point with the gap to
 * the runner-up, the best point per backend against no speculation, skipped combinations counted per
 * reason, and the warnings with the points they hit. */
void sweep_print_summary(const sweep *sw, FILE *out);

/* Refuse an --out the sweep could not write at the end (empty, a directory or other non-regular file,
 * a missing directory), before any scenario runs. 0, or VP_EXIT_USAGE after printing why. */
int sweep_check_out(const char *out_path);

/* The partial file's header: a format line, then one digest line per input that decides the rows (the
 * scenario file, each model and system file it or a --vary value names, the --set, --vary and
 * --backend lists), so a resume notices any of them changing and can say which. */
void sweep_make_header(sweep *sw);

/* Load the rows of the scenarios committed in the partial file into sw->rows and the bytes worth
 * keeping (header, committed records) into `valid`. Returns how many scenarios were done (0 without a
 * file), or -1 with `why` saying what differs when the file belongs to another sweep. */
long long sweep_load_partial(sweep *sw, util_buf *valid, char *why, size_t len);

/* Append scenario `idx`'s rows and its commit line. Each row line is prefixed so that no CSV value
 * can read as a commit line. */
void sweep_append_record(FILE *part, const char *rows, long long idx);

/* ---- sweep_jobs.c: modelling the pending points, in this process or in --jobs workers ---- */

typedef struct sweep_runner {
    /* One point's CSV rows into `out`; false when the combination could not be modelled (its rows say
     * why). `state` is the function's own (a plan cache): each worker has its copy. */
    bool (*point)(const sweep *sw, long long idx, void *state, util_buf *out);
    void *state;
    volatile sig_atomic_t *stop; /* set by SIGINT: every process stops after its current point */
    void (*progress)(long long done, long long total, double elapsed); /* NULL: none */
} sweep_runner;

typedef struct sweep_tally {
    long long done;   /* points with rows (the partial file's included) */
    long long failed; /* of the points this run modelled, combinations that could not be */
    int jobs;         /* processes that modelled them */
    double t0;        /* when the run started (progress) */
} sweep_tally;

/* Model the points sw->rows lacks (at most sw->limit when >= 0) on `jobs` processes, appending each
 * point's record to `part` and its rows to sw->rows as it is done. 0, or -1 when a worker could not start
 * or died (said on stderr; the points it sent are kept). */
int sweep_run_points(sweep *sw, FILE *part, int jobs, const sweep_runner *run, sweep_tally *t);
/* --jobs' default: the cores this process may use (at most SWEEP_MAX_JOBS). */
int sweep_default_jobs(void);

#endif

/* sweep: the state of one `vpsim sweep`, shared by cmd_sweep.c (options, running) and sweep_resume.c
 * (the partial file it resumes from). Private to those two files. */
#ifndef VPSIM_SWEEP_H
#define VPSIM_SWEEP_H

#include "cli.h"

#include <stdio.h>

#define SWEEP_MAX_VARY 16
#define SWEEP_MAX_VALUES 4096
#define SWEEP_MAX_SCENARIOS 10000000LL

typedef struct vary {
    char *key;
    char **values;
    int n;
} vary;

typedef struct sweep {
    cli_common c;
    vary v[SWEEP_MAX_VARY];
    int n_vary;
    cfg_backend bes[CFG_BACKEND_COUNT];
    int n_bes;
    long long total, limit;
    bool restart;
    char **rows; /* per scenario: its CSV rows, NULL until done */
    char *partial_path;
    char *header; /* what identifies this sweep in the partial file (sweep_make_header) */
} sweep;

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

#endif

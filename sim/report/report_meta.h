/* report_meta: the results headers of model mode and of measurements (report_meta.c). */
#ifndef VPSIM_REPORT_META_H
#define VPSIM_REPORT_META_H

#include "report_results.h"

#include "../config/cfg.h"
#include "../plan/plan.h"

#include <stdbool.h>
#include <stddef.h>

/* The header of a modelled scenario (`path` as the command line named it, NULL for the default);
 * `tok_buf` holds the tokens formula it points at. */
void report_meta_modelled(const cfg_scenario *sc, const plan *p, const char *path, char *tok_buf, size_t tok_len,
                          report_results_meta *m);
/* The header of a measurement of mode `mode` ("run", "import-trace") of plan p (sc may be NULL: a saved
 * plan alone). */
report_results_meta report_meta_measured(const char *scenario_path, const cfg_scenario *sc, const plan *p,
                                         const char *mode, bool graph);

#endif

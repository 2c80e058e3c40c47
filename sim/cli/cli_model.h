/* cli_model: what `vpsim model`, `compare` and `sweep` share (cli_model.c). */
#ifndef VPSIM_CLI_MODEL_H
#define VPSIM_CLI_MODEL_H

#include "../config/cfg.h"
#include "../plan/plan.h"
#include "../report/report_results.h"

#include <stddef.h>

/* Parse "nccl,oneshot" into backends; NULL = every backend but the replay-only 'model'. Returns the count,
 * or -1 after printing a usage error naming `cmd`. */
int cli_parse_backends(const char *list, cfg_backend *out, int max, const char *cmd);
/* The backends model mode takes, comma-separated, from the list (for --help). */
const char *cli_model_backend_names(void);

/* Fill the results header for a modelled scenario; `tok_buf` holds the tokens formula it points at. */
void cli_model_meta(const cfg_scenario *sc, const plan *p, const char *path, char *tok_buf, size_t tok_len,
                      report_results_meta *m);

#endif

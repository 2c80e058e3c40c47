/* model_replay: what `vpsim run --backend model` replays (model_replay.c). */
#ifndef VPSIM_MODEL_REPLAY_H
#define VPSIM_MODEL_REPLAY_H

#include "../config/cfg.h"
#include "../plan/plan.h"

#include <stdbool.h>

/* Per flat op of p, the modelled microseconds of each collective with backend `model_backend` on the
 * system `target` (loaded with the scenario's path and `sets`, strictly like any system file), 0 for the
 * other ops: *out (free it). VP_EXIT_OK, or VP_EXIT_USAGE after saying why (unless `quiet`: another
 * rank says it): no target, no scenario (sc NULL), a target that does not load, a backend the model
 * cannot price there. */
int model_replay_delays(const cfg_scenario *sc, const char *const *sets, int n_sets, const plan *p, const char *target,
                        int model_backend, bool quiet, double **out);

#endif

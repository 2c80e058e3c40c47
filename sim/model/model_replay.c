/* model_replay: the modelled duration of every collective of a plan on a target system, which `vpsim
 * run --backend model` replays as GPU delays (model_replay.h). */
#include "model_replay.h"

#include "model.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>

int model_replay_delays(const cfg_scenario *sc, const char *const *sets, int n_sets, const plan *p, const char *target,
                        int model_backend, bool quiet, double **out)
{
    *out = NULL;
    if (!target) {
        if (!quiet)
            fprintf(stderr, "vpsim run: backend model needs --target-system FILE (the system whose collectives "
                            "are replayed as delays), e.g. configs/systems/rtx-pro-6000-8x-pcie.yaml\n");
        return VP_EXIT_USAGE;
    }
    if (!sc) {
        if (!quiet)
            fprintf(stderr, "vpsim run: backend model needs a scenario file (not only --plan)\n");
        return VP_EXIT_USAGE;
    }
    /* The target system goes through the same strict loading as any system file. */
    cfg_scenario tsc;
    cfg_error err;
    if (cfg_scenario_load(sc->path, sets, n_sets, target, &tsc, &err)) {
        if (!quiet)
            fprintf(stderr, "%s\n", err.msg);
        return VP_EXIT_USAGE;
    }
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    double *us = util_xcalloc((size_t)n_ops + 1, sizeof(double));
    int flat = 0, rc = VP_EXIT_OK;
    for (int ph = 0; ph < p->n_phases && rc == VP_EXIT_OK; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            if (!plan_op_is_collective(op->kind))
                continue;
            model_coll mc;
            model_collective(&tsc.system, (cfg_backend)model_backend, op->kind, (double)op->payload_bytes, op->ranks,
                             NULL, &mc);
            if (!mc.available) {
                if (!quiet)
                    fprintf(stderr, "vpsim run: backend %s cannot be modelled on %s: %s\n",
                            cfg_backend_names[model_backend], tsc.system.name, mc.reason);
                rc = VP_EXIT_USAGE;
                break;
            }
            us[flat] = mc.us;
            /* The delay stands in for the whole op: a fused epilogue or the separate norm kernel's time. */
            if (op->kind == PLAN_OP_ALLREDUCE_NORM)
                us[flat] += model_norm_part_us(&tsc.system, model_backend_fuses_norm((cfg_backend)model_backend), op,
                                               false, NULL);
        }
    cfg_scenario_free(&tsc);
    if (rc) {
        free(us);
        return rc;
    }
    *out = us;
    return VP_EXIT_OK;
}

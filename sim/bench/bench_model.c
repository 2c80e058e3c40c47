/* `vpsim bench-allreduce --model` and `--from`: every row of a result priced by the model of the
 * scenario's system, with a note where the measurement and the system file describe different paths
 * (NCCL_P2P_DISABLE, the custom backends' --p2p). */
#include "bench_model.h"

#include "../comm/comm_p2p.h"
#include "../model/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Model every row of `r` on the scenario's system: the per-call time of back-to-back calls at the
 * result's rank count, graph or eager as each backend was timed. */
void bench_attach_model(exec_bench_result *r, const cfg_scenario *sc)
{
    const cfg_system *sys = &sc->system;
    char custom[96] = ""; /* the custom backends that ran */
    snprintf(r->model_system, sizeof(r->model_system), "%s", sys->name);
    snprintf(r->model_note, sizeof(r->model_note), "%s; topology.p2p %s; measured tables %s; %d ranks",
             sc->system_path ? sc->system_path : "?", cfg_p2p_names[sys->topology.p2p],
             sys->measured.use ? "used where they apply" : "off (formulas only)", r->ranks);
    for (int k = 0; k < r->n_backends; k++) {
        exec_bench_backend *b = &r->backends[k];
        b->model_method[0] = '\0';
        if (!b->ran || b->backend < 0) {
            snprintf(b->model_method, sizeof(b->model_method), "%s", b->ran ? "a per-size policy: not modelled" : "");
            continue;
        }
        for (int i = 0; i < b->n_rows; i++) {
            model_coll c;
            model_bench_call(sys, (cfg_backend)b->backend, (plan_op_kind)exec_bench_kind(r), (double)b->rows[i].bytes,
                             r->ranks, b->graph, &c);
            b->rows[i].model_us = c.available ? c.us : NAN;
            if (!b->model_method[0] || b->rows[i].verify_size)
                snprintf(b->model_method, sizeof(b->model_method), "%s", c.available ? c.method : c.reason);
        }
        /* NCCL's transport follows its environment, the model the system file: say when they differ. */
        const char *nccl_env = util_env_get(b->env, b->n_env, "nccl_env");
        if (nccl_env && strstr(nccl_env, "NCCL_P2P_DISABLE=1") && sys->topology.p2p != CFG_P2P_OFF)
            fprintf(stderr, "vpsim bench-allreduce: note: backend %s ran with NCCL_P2P_DISABLE=1 but the model's "
                            "system has topology.p2p=%s; add --set system.topology.p2p=off to compare like with "
                            "like\n",
                    b->name, cfg_p2p_names[sys->topology.p2p]);
        if (comm_backend_is_custom(b->backend))
            snprintf(custom + strlen(custom), sizeof(custom) - strlen(custom), "%s%s", custom[0] ? ", " : "",
                     cfg_backend_names[b->backend]);
    }
    /* Likewise the custom backends' --p2p: one line for all of them. */
    if (custom[0] && comm_p2p_model_differs(r->p2p, sys->topology.p2p)) {
        char who[128], hint[400];
        snprintf(who, sizeof(who), "%s %s", strchr(custom, ',') ? "backends" : "backend", custom);
        comm_p2p_model_hint(hint, sizeof(hint), who, r->p2p, sys->topology.p2p);
        fprintf(stderr, "vpsim bench-allreduce: note: %s\n", hint);
    }
}

/* The backend list's traits (sim/config/cfg_lists.h) against what each backend does: every backend is
 * walked, so a new list line with the wrong traits fails here instead of being missed silently. */
#include "../../sim/model/model.h"
#include "../../sim/plan/plan_memory.h"
#include "test_helpers.h"
#include "th_model.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <string.h>

static double cycle_ms(const char *fusion, cfg_backend be)
{
    cfg_scenario sc;
    plan p;
    const char *sets[] = {"parallel.tp=2", "system.gpus=2", "system.topology.p2p=direct", fusion};
    th_plan_build("configs/tiny.yaml", sets, 4, &sc, &p);
    char why[256];
    model_ctx *ctx = model_prepare(&sc, &p, why, sizeof(why));
    cr_assert_not_null(ctx, "%s", why);
    results_cycle r;
    model_eval(ctx, be, false, &r);
    const double v = r.available ? r.cycle_ms : -1.0;
    results_cycle_free(&r);
    model_free(ctx);
    th_plan_done(&sc, &p);
    return v;
}

static bool has_item(const plan_memory *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->items[i].name, name))
            return true;
    return false;
}

Test(backend_traits, every_backend_behaves_as_its_list_line_says)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", (const char *[]){"parallel.tp=2", "system.gpus=2"}, 2, &sc, &p);
    int fusion_checked = 0;
    for (int be = 0; be < CFG_BACKEND_COUNT; be++) {
        const char *name = cfg_backend_names[be];
        /* probe: a curve the probe times lands in the system file's measured.allreduce.<key> table, so a
         * probed backend must have one, and be a real allreduce */
        if (cfg_backend_probed(be))
            cr_assert(cfg_backend_has_table(be) && cfg_backend_reduces(be), "%s: probed without a table", name);
        /* inplace: a backend that moves no data has no send/recv to alias, so it is trivially in place; the
         * host-staged one is not (bench-allreduce --check leaves the in-place pass out for it) */
        cr_assert_eq(cfg_backend_in_place(be), cfg_backend_launch(be) != CFG_LAUNCH_HOST, "%s: in place", name);
        /* workspace: the memory account charges the custom allreduce's buffers exactly to these */
        plan_memory m;
        plan_memory_account(&sc, &p, be, &m);
        cr_assert_eq(has_item(&m, "custom allreduce"), cfg_backend_workspace(be), "%s: workspace", name);
        /* fuse: the model prices the norm inside the collective's epilogue exactly for these (NCCL's
         * allreduce_norm member is the unfused sequence) */
        cr_assert_eq(model_backend_fuses_norm((cfg_backend)be), cfg_backend_fuses_norm(be), "%s: fuse", name);
        if (cfg_backend_reduces(be)) {
            const double off = cycle_ms("fusion.allreduce_residual_norm=false", (cfg_backend)be),
                         on = cycle_ms("fusion.allreduce_residual_norm=true", (cfg_backend)be);
            if (off > 0 && on > 0) { /* a fused epilogue saves the norm's launch; the unfused sequence is the same */
                cr_assert_eq(on < off - 1e-9, cfg_backend_fuses_norm(be), "%s: fusion %f -> %f ms", name, off, on);
                fusion_checked++;
            }
        }
        /* launch: a planned collective's eager launch is NCCL's; a host-staged one is run by the host */
        cfg_system s = th_pcie_system(4, 1, 0);
        s.launch.eager_us = 6.0;
        s.launch.eager_collective_us = 12.0;
        cr_assert_float_eq(model_collective_launch_us(&s, (cfg_backend)be),
                           cfg_backend_launch(be) == CFG_LAUNCH_PLANNED ? 12.0 : 6.0, 1e-12, "%s: launch", name);
        cr_assert_eq(model_backend_host_staged((cfg_backend)be), cfg_backend_launch(be) == CFG_LAUNCH_HOST,
                     "%s: host-staged", name);
        /* peer: a platform without peer loads refuses the loading kernels, without peer stores every kernel
         * that touches a peer itself (its flags are stores); a library's transport goes on */
        if (!cfg_backend_reduces(be))
            continue;
        model_coll c;
        s.topology.peer_loads = CFG_PEER_OFF;
        model_collective(&s, (cfg_backend)be, PLAN_OP_ALLREDUCE, 4096, 4, NULL, &c);
        const cfg_peer_use use = cfg_backend_peer_use(be);
        if (be != CFG_BACKEND_NCCL_SYMM) /* symm needs NVLink whatever the peer modes */
            cr_assert_eq(c.available, use != CFG_PEER_USE_LOADS, "%s: peer loads off: %s", name, c.reason);
        s.topology.peer_loads = CFG_PEER_NATIVE;
        s.topology.peer_stores = CFG_PEER_OFF;
        model_collective(&s, (cfg_backend)be, PLAN_OP_ALLREDUCE, 4096, 4, NULL, &c);
        if (be != CFG_BACKEND_NCCL_SYMM)
            cr_assert_eq(c.available, use == CFG_PEER_USE_NONE, "%s: peer stores off: %s", name, c.reason);
    }
    cr_assert_geq(fusion_checked, 5, "nccl, oneshot, twoshot, push and mpi model on two PCIe GPUs");
    th_plan_done(&sc, &p);
}

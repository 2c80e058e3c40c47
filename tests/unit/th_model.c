/* Model fixture shared by the model tests (th_model.h). */
#include "th_model.h"

#include "../../sim/model/model.h"
#include "th_plan.h"

#include <criterion/criterion.h>

results_cycle th_model_cycle(const char *const *sets, int n_sets, cfg_backend be, cfg_scenario *sc, plan *p)
{
    cfg_scenario own_sc;
    plan own_p;
    const bool keep = sc && p;
    if (!keep) {
        sc = &own_sc;
        p = &own_p;
    }
    th_plan_build("configs/default.yaml", sets, n_sets, sc, p);
    char why[256];
    model_ctx *ctx = model_prepare(sc, p, why, sizeof(why));
    cr_assert_not_null(ctx, "%s", why);
    results_cycle r;
    model_eval(ctx, be, false, &r);
    cr_assert(r.available, "%s", r.reason);
    results_cycle_free(&r);
    model_free(ctx);
    if (!keep)
        th_plan_done(sc, p);
    return r;
}

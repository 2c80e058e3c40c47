/* Plan fixtures shared by the plan tests (th_plan.h). */
#include "th_plan.h"

#include "test_helpers.h"

#include <criterion/criterion.h>
#include <string.h>

void th_plan_build(const char *rel, const char *const *sets, int n_sets, cfg_scenario *sc, plan *p)
{
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(th_path(rel), sets, n_sets, NULL, sc, &err), 0, "loading %s: %s", rel, err.msg);
    char why[256] = "";
    cr_assert_eq(plan_build(sc, p, why, sizeof(why)), 0, "plan_build: %s", why);
}

void th_plan_done(cfg_scenario *sc, plan *p)
{
    plan_free(p);
    cfg_scenario_free(sc);
}

const plan_phase *th_phase(const plan *p, const char *name)
{
    const plan_phase *ph = plan_find_phase(p, name);
    cr_assert_not_null(ph, "no phase '%s'", name);
    return ph;
}

/* The op called `name` in `layer` (the first one when it occurs more than once). */
const plan_op *th_find_op(const plan_phase *ph, const char *name, int layer)
{
    for (int i = 0; i < ph->n_ops; i++)
        if (ph->ops[i].layer == layer && strcmp(ph->ops[i].name, name) == 0)
            return &ph->ops[i];
    cr_assert_fail("phase %s has no op '%s' in layer %d", ph->name, name, layer);
    return NULL;
}

int th_count_kind(const plan_phase *ph, plan_op_kind kind)
{
    int n = 0;
    for (int i = 0; i < ph->n_ops; i++)
        n += ph->ops[i].kind == kind;
    return n;
}


/* Every allreduce of the phase carries `bytes`, and the summary agrees with the op list. */
void th_assert_allreduces(const plan_phase *ph, int count, long long bytes, int ranks)
{
    cr_assert_eq(ph->summary.allreduce_count, count, "%s: %d allreduces, want %d", ph->name,
                 ph->summary.allreduce_count, count);
    cr_assert_eq(th_count_kind(ph, PLAN_OP_ALLREDUCE), count, "%s: op list", ph->name);
    for (int i = 0; i < count; i++)
        cr_assert_eq(ph->summary.allreduce_bytes[i], bytes, "%s: allreduce %d carries %lld B, want %lld", ph->name, i,
                     ph->summary.allreduce_bytes[i], bytes);
    for (int i = 0; i < ph->n_ops; i++) {
        const plan_op *op = &ph->ops[i];
        if (op->kind != PLAN_OP_ALLREDUCE && op->kind != PLAN_OP_ALLGATHER)
            continue;
        cr_assert_eq(op->ranks, ranks, "%s: %s spans %d ranks", ph->name, op->name, op->ranks);
        cr_assert_eq(op->payload_bytes, op->count * 2, "%s: %s: bf16 payload = 2 B x count", ph->name, op->name);
    }
}

void th_assert_gemm(const plan_op *op, long long m, long long k, long long n, int batch)
{
    cr_assert(op->kind == PLAN_OP_GEMM || op->kind == PLAN_OP_GROUPED_GEMM, "%s is not a GEMM", op->name);
    cr_assert_eq(op->k, k, "%s layer %d: k=%lld, want %lld", op->name, op->layer, op->k, k);
    cr_assert_eq(op->n, n, "%s layer %d: n=%lld, want %lld", op->name, op->layer, op->n, n);
    cr_assert_eq(op->m, m, "%s layer %d: m=%lld, want %lld", op->name, op->layer, op->m, m);
    cr_assert_eq(op->batch, batch, "%s layer %d: batch=%d, want %d", op->name, op->layer, op->batch, batch);
}

cfg_scenario th_chain_scenario(int steps, const double *rates, int n)
{
    cfg_scenario sc;
    memset(&sc, 0, sizeof(sc));
    sc.speculative.algorithm = CFG_SPEC_EAGLE3;
    sc.speculative.steps = steps;
    sc.speculative.topk = 1;
    sc.speculative.num_draft_tokens = steps + 1;
    memcpy(sc.speculative.acceptance, rates, (size_t)n * sizeof(double));
    sc.speculative.n_acceptance = n;
    return sc;
}

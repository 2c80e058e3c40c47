/* Plan fixtures for the plan tests: build a repo scenario's plan and find its phases and ops, asserting
 * (Criterion) on the way. */
#ifndef VPSIM_TH_PLAN_H
#define VPSIM_TH_PLAN_H

#include "../../sim/config/cfg.h"
#include "../../sim/plan/plan.h"

/* Load a repo scenario with --set strings and build its plan. */
void th_plan_build(const char *rel, const char *const *sets, int n_sets, cfg_scenario *sc, plan *p);
void th_plan_done(cfg_scenario *sc, plan *p);
const plan_phase *th_phase(const plan *p, const char *name);
/* The op called `name` in `layer` (the first one when it occurs more than once). */
const plan_op *th_find_op(const plan_phase *ph, const char *name, int layer);
int th_count_kind(const plan_phase *ph, plan_op_kind kind);

/* Every allreduce of the phase carries `bytes`, spans `ranks`, and the summary agrees with the op list. */
void th_assert_allreduces(const plan_phase *ph, int count, long long bytes, int ranks);
/* A GEMM or grouped GEMM of shape m x k -> n over `batch` weights. */
void th_assert_gemm(const plan_op *op, long long m, long long k, long long n, int batch);

/* A bare scenario (no files) with a topk=1 chain of `steps` draft positions and the given rates: for the
 * acceptance model's unit tests. */
cfg_scenario th_chain_scenario(int steps, const double *rates, int n);

#endif

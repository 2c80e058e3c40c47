/* Model fixture for the model tests: one scenario's modelled cycle, asserting (Criterion) on the way. */
#ifndef VPSIM_TH_MODEL_H
#define VPSIM_TH_MODEL_H

#include "../../sim/config/cfg.h"
#include "../../sim/plan/plan.h"
#include "../../sim/results/results.h"
#include "../../sim/model/model.h"

/* configs/default.yaml with --set strings `sets`, planned and evaluated by the model on `be` (asserting
 * that it is available). The result's per-op times are already freed (op_us NULL): read its scalars.
 * With sc and p given, the scenario and plan are left there for the caller (th_plan_done them); with
 * both NULL they are freed here. */
results_cycle th_model_cycle(const char *const *sets, int n_sets, cfg_backend be, cfg_scenario *sc, plan *p);

/* A PCIe system with every figure the formulas read set explicitly (not from a file): the links of
 * docs/model.md's worked examples, `gpus` GPUs on `sockets` sockets, `gpus_per_switch` (0 = direct attach),
 * AMD, no measured tables, no paths. */
cfg_system th_pcie_system(int gpus, int sockets, int gpus_per_switch);

/* model_collective's time for `be` (asserting that it is available), terms into t when not NULL. */
double th_coll(const cfg_system *s, cfg_backend be, plan_op_kind kind, double bytes, int n, model_terms *t);

#endif

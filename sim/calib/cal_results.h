/* cal_results: what `vpsim calibrate --results` accepts. A results file becomes a
 * GPU's measured op tables only when it is a `vpsim run --out` of this very plan on a GPU: its own
 * schema, mode run, a CUDA device, and the plan's TP, batch, context, phases, op kinds, indices, names,
 * layers and (where the run recorded them) per-op sizes. Each refusal names the first mismatch with the
 * file:line:col of the value that differs. */
#ifndef VPSIM_CAL_RESULTS_H
#define VPSIM_CAL_RESULTS_H

#include "../config/cfg_tree.h"
#include "../exec/exec.h"
#include "../plan/plan.h"
#include "../results/results.h"

#include <stdbool.h>
#include <stddef.h>

/* The results' schema: the one `vpsim run --out` writes (sim/results/results_json.c). */
#define CAL_RESULTS_SCHEMA RESULTS_SCHEMA

/* 0 when `root` (the results document) is a run of plan `p` on a GPU, with `sized` saying whether its
 * ops carried their sizes (a run before they were recorded has names only: its shapes are then checked
 * by TP, batch and context); -1 with the first mismatch in `why` (file:line:col first). */
int cal_results_check(const plan *p, const cfg_node *root, bool *sized, char *why, size_t len);

/* The device a results file names (environment.gpu, "NAME (sm_XY, N SMs, M GiB)") as exec_facts, for
 * the same check calibrate --measure makes against the base. */
void cal_results_facts(const cfg_node *root, exec_facts *f);

/* The ops' times after cal_results_check passed: us of flat op i (plan order). */
double cal_results_us(const cfg_node *root, int flat);

#endif

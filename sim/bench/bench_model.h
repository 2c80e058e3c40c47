/* bench_model: `vpsim bench-allreduce --model` (bench_model.c). */
#ifndef VPSIM_BENCH_MODEL_H
#define VPSIM_BENCH_MODEL_H

#include "../config/cfg.h"
#include "../exec/exec_bench.h"

/* Model every row of `r` on the scenario's system: the per-call time of back-to-back calls at the
 * result's rank count, graph or eager as each backend was timed; notes on stderr where the run and
 * the system file differ in how peers are reached. */
void bench_attach_model(exec_bench_result *r, const cfg_scenario *sc);

#endif

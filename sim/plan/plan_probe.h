/* plan_probe: the synthetic plan that `vpsim calibrate --measure` replays to measure the probed compute
 * laws (measured.compute.<class>, cfg_system.h) of one GPU.
 *
 * One phase "probe", every op on the main stream, finalised as real plans finalise theirs (bytes and
 * flops by plan_op_finalize, bf16 weights private to each op as the devices allocate them). First
 * PLAN_PROBE_EMPTY tiny elementwise ops "probe.empty" (m = 1, n = 8) whose time is the graph gap, then
 * every grid point of every class PLAN_PROBE_REPEAT times in a row as distinct ops named
 * "probe.<class>.r<rows>.<size>.<i>" (silu_mul: "probe.r<rows>.<size>.<i>.silu_mul", because the
 * replay picks the SiLU kernel by that suffix). <rows> is the law's rows coordinate, <size> what varies
 * within a rows value (a GEMM's NxK, a batch "b<n>", experts "e<n>", wider experts "x<times>e<n>", a KV
 * length, a row width), numbers
 * of whole kibi-units written with a "k" (65536 -> 64k). The grid is the table in plan_probe.c. Last,
 * one "probe.flush" op (below). Every class, the row-wise ops and attention too, is timed as like ops back
 * to back: timing those after the op the scenario's plan runs before them was tried and measured worse
 * against the replay (bench/NOTES.md 2026-12-02, session 17). */
#ifndef VPSIM_PLAN_PROBE_H
#define VPSIM_PLAN_PROBE_H

#include "plan.h"

#include <stdbool.h>
#include <stddef.h>

#define PLAN_PROBE_EMPTY 16 /* probe.empty ops: the time one more adds to a graph is launch.graph_node_us */
#define PLAN_PROBE_REPEAT 4 /* ops per grid point: (t(4) - t(1)) / 3 is the point's time (exec_time_groups) */
/* The last op, "probe.flush": an element-wise pass over 2 x 128 MiB (2 x 2 MiB quick) run before every
 * timed launch, so that each point's weights come from DRAM as in a replayed cycle (H200 L2: 50 MiB). */
#define PLAN_PROBE_FLUSH_ELEMS (64ll << 20)
#define PLAN_PROBE_FLUSH_ELEMS_QUICK (1ll << 20)

/* Build the whole probe grid for the scenario's models at its tensor-parallel degree (attention heads and
 * the vocab shard as the real plan has them per rank), in the layout above: every class's points, then the
 * grouped GEMMs at wider experts (the law's width coordinate). `quick`: the small grid the CPU device runs
 * in seconds (CI). 0, or -1 with a reason in `why`. */
int plan_probe_build(const cfg_scenario *sc, bool quick, plan *out, char *why, size_t len);

/* The probe runs as one or more plans, one after the other, each laid out as above (its own empty ops,
 * points and flush), so that no one plan's private weights outgrow the GPU: the grid's points in order,
 * cut into parts of at most `budget` bytes of private weights and KV caches each (plan_probe_arena_bytes;
 * 0: one part). plan_probe_parts: how many, >= 1, or -1 with a reason (a point alone over the budget). */
#define PLAN_PROBE_MAX_PARTS 64
int plan_probe_parts(const plan *grid, double budget, char *why, size_t len);
/* Part `part` (0-based) of the grid as a plan of its own. 0, or -1 with a reason. */
int plan_probe_part(const plan *grid, double budget, int part, plan *out, char *why, size_t len);

/* Bytes the CUDA device allocates for the plan's private weights and KV caches (its arena: each op's
 * bf16 weights or cache, rounded up to 256 B), so a user sees what the probe needs before it runs. */
double plan_probe_arena_bytes(const plan *p);

#endif

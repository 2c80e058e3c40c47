/* plan_ep: the target's MoE layers under expert parallelism (parallel.ep > 1), and its whole pass under
 * DP attention (parallel.dp_attention). Internal to sim/plan: plan_build.c calls it in place of its
 * tensor-parallel routed experts. The layout follows SGLang with --ep-size = --tp-size and the
 * all-to-all MoE backend (--moe-a2a-backend deepep; python/sglang/srt/models/deepseek_v2.py):
 *
 *  - each of the ep ranks stores experts / ep whole experts (weights not TP-sharded);
 *  - shared experts are replicated (DeepseekV2MoE builds them with tp_size=1 under an all-to-all
 *    backend) and run on the rank's own rows, on the side stream as in the TP plan;
 *  - attention at TP (dp_attention false): every rank holds all M rows after allreduce.attn, takes
 *    its shard of ceil(M / ep) rows, routes them, dispatches them by all-to-all, runs its experts,
 *    combines by all-to-all, and an all-gather of rows_shard x H makes the rows whole on every rank
 *    again (it replaces allreduce.moe);
 *  - dp_attention: each rank runs batch / ep requests end to end with whole attention weights (no
 *    attention allreduce); the MoE exchanges its own rows by all-to-all, no all-gather after it. */
#ifndef VPSIM_PLAN_EP_H
#define VPSIM_PLAN_EP_H

#include "plan.h"

/* Rows of `rows` that one of `ep` ranks routes: ceil(rows / ep) (the busiest rank when they do not
 * divide evenly; the others pad, as the replay's uniform blocks do). */
long long plan_ep_rows_shard(long long rows, int ep);
/* Elements one rank sends in a dispatch or combine all-to-all: rows_shard x top_k x hidden, rounded up
 * to a multiple of ep so that the ep blocks are equal (the padding is the rounding). */
long long plan_ep_alltoall_count(long long rows_shard, int top_k, int hidden, int ep);
/* Distinct experts of one rank's experts / ep touched per layer: the plan's expected distinct experts
 * over all ranks (uniform routing) / ep, at least 1 and at most experts / ep. */
int plan_ep_active_experts(int active_all, int experts, int ep);

/* The MoE part of target layer `layer` after post_attention_layernorm: `rows` rows on every rank
 * (TP attention: all M; DP attention: the rank's own). `gather`: all-gather the rows afterwards. */
void plan_ep_moe(plan_phase *ph, const cfg_scenario *sc, int layer, long long rows, int ranks, int active_all,
                 bool gather);
/* The target pass under DP attention (embedding, layers, final norm, lm_head), `rows` = batch x tokens
 * over all ranks. */
void plan_ep_dp_target_pass(plan_phase *ph, const cfg_scenario *sc, long long rows, int ranks, int active_all);

#endif

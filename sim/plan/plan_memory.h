/* plan_memory: what one rank holds in GPU memory for a scenario, line by line, against the GPU's memory.
 *
 * Stored, not read: a pass reads the experts its tokens route to, but every rank stores all of them
 * (SGLang's TP layout shards each expert's intermediate dimension, it does not place experts). The
 * weights follow the same sharding as plan_build (python/sglang/srt/models/deepseek_v2.py and
 * llama_eagle3.py); the KV cache holds the scenario's batch x (context + verified tokens); the rest
 * are the runtime's own buffers, from the system file with their provenance. */
#ifndef VPSIM_PLAN_MEMORY_H
#define VPSIM_PLAN_MEMORY_H

#include "plan.h"

#define PLAN_MEM_MAX_ITEMS 16

typedef struct plan_mem_item {
    char name[32];
    double bytes;
    char how[160]; /* the formula or the key it comes from, with provenance */
} plan_mem_item;

typedef struct plan_memory {
    plan_mem_item items[PLAN_MEM_MAX_ITEMS];
    int n;
    int ranks;
    double total_bytes;
    double capacity_bytes; /* system.gpu.memory_gib */
    bool fits;
    char verdict[96]; /* "fits: 71.3 of 95.6 GiB" or "does not fit: needs 590.2 GiB of 95.6" */
    bool sums_only;   /* the items' `how` and the verdict left empty (plan_memory_sums) */
} plan_memory;

/* Account one rank of `p` (built from `sc`); `backend` (cfg_backend) adds its own workspace (the custom
 * IPC kernels' buffers; NCCL's buffers are always there: SGLang creates the communicator regardless). */
void plan_memory_account(const cfg_scenario *sc, const plan *p, int backend, plan_memory *out);
/* The same account without the items' words or the verdict: what the model needs (sums, fit) at every
 * evaluation, where formatting each line's formula was a tenth of the work. */
void plan_memory_sums(const cfg_scenario *sc, const plan *p, int backend, plan_memory *out);
/* The account of `base` (made with backend -1) for `backend`: its own workspace added, the verdict
 * redone. Lets the model account a plan once and each backend in a few instructions. */
void plan_memory_for_backend(const cfg_scenario *sc, const plan_memory *base, int backend, plan_memory *out);
/* What the model asks at every evaluation, without copying or formatting the account: the total with
 * `backend`'s workspace in *total_bytes, and whether it fits the GPU. */
bool plan_memory_total_for_backend(const cfg_scenario *sc, const plan_memory *base, int backend, double *total_bytes);
/* The verdict line for a total ("fits: 71.3 of 95.6 GiB" or "does not fit: needs ..."). */
void plan_memory_verdict(const cfg_scenario *sc, double total_bytes, char *buf, size_t len);

#endif

/* The decode attention kernel's launch structure, computed on the host without a GPU: the same
 * arithmetic as kernels/vp_attention_plan.cu make_plan (row and value chunks, keys per tile, pipeline
 * depth, shared-memory size, KV splits) from the device's SM count and shared-memory limits. The probed
 * attention law prices an op by what this says each SM runs (docs/model.md "Probed compute laws"). */
#pragma once

#include "plan.h"

#include <stdbool.h>

/* The device facts make_plan reads (system file gpu.sms, gpu.smem_sm_kib, gpu.smem_block_kib, gpu.cc). */
typedef struct plan_attn_device {
    int sms;
    long long smem_sm;    /* shared memory per SM, bytes */
    long long smem_block; /* shared memory one block may opt in to, bytes */
    int cc;               /* compute capability x 10: 90 takes the wgmma MLA kernel where it applies (the
                           * default build carries its sm_90a code); 0 or any other: the general plan */
} plan_attn_device;

typedef struct plan_attn_launch {
    int rows;          /* query rows that read one KV head: q_len x heads / kv_heads */
    int rows_blk;      /* rows per block (8 x row tiles) */
    int row_chunks;    /* blocks along the rows */
    int dv_chunks;     /* blocks along the value columns */
    int mt;            /* value tiles per warp (the kernel's template argument) */
    int tn, stages;    /* keys per tile, tile buffers */
    long long smem;    /* dynamic shared memory per block, bytes */
    int blocks_per_sm; /* resident blocks per SM */
    int splits;        /* KV splits per (sequence, KV head, row chunk, value chunk) */
    long long keys_per_split;
    long long blocks;  /* the split kernel's grid */
    long long slots;   /* sms x blocks_per_sm: blocks resident at once */
    bool slot_limited; /* the splits were set by the slots (the grid fills the GPU), not by the keys */
    int kernel;        /* vp_attention_set_kernel's number of the kernel planned: 1 (the general kernel's
                        * plan, which the mma.sync MLA kernel shares) or 3 (the wgmma MLA kernel) */
} plan_attn_launch;

/* The launch of `op` (an attention op) on `dev`. Returns 0, or -1 when the op is not attention, the
 * device facts are missing (smem 0: not known) or no tile fits its shared memory (the kernel refuses
 * such a shape too). */
int plan_attention_launch(const plan_op *op, const plan_attn_device *dev, plan_attn_launch *out);

/* The keys the busiest SM reads for `op`: ceil(blocks / sms) blocks of keys_per_split. The split kernel's
 * time is set per SM (docs/model.md): a grid of more blocks than the SMs hold runs a second round. */
double plan_attention_sm_keys(const plan_attn_launch *l, int sms);

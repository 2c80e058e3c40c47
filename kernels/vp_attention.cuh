// Internal interface of the decode attention (not part of the C interface in vp_kernels.h):
//   vp_attention.cu          the split kernel (design notes there), its launch and occupancy
//   vp_attention_plan.cu     the host planner (tiles, shared-memory layout, splits) and the C API
//   vp_attention_combine.cu  the merge of the splits
#pragma once

#include "vp_cuda.cuh"

#include <cuda.h> // CUtensorMap (the type only: the encoder is reached through the runtime)

constexpr int VP_ATTN_WARPS = 8;
constexpr int VP_ATTN_THREADS = VP_ATTN_WARPS * 32;
constexpr int VP_ATTN_MAX_NT = 4;        // n8 row tiles per block: 32 rows
constexpr int VP_ATTN_MAX_SPLITS = 1024; // bounds the combine kernel's shared memory (one weight per split)

// A launch configuration (vp_attention_plan.cu chooses it; the kernel reads it from its parameters).
struct AttnPlan {
    int kernel;                 // 1: the general kernel (vp_attention.cu), 2: the MLA kernel (_mla.cu),
                                // 3: the wgmma MLA kernel (_wgmma.cu, sm_90a)
    int nt, mt;                 // n8 row tiles per block (kernel 3: per warpgroup), m16 value tiles per warp
    int wgs;                    // kernel 3: warpgroups per block (1 or 2); the others run VP_ATTN_THREADS
    int tn, stages;             // keys per tile (16, 32 or 64), tile buffers (2..4)
    int rows_blk, row_chunks;   // rows per block (8 * nt), blocks along R
    int dv_w, dv_chunks;        // value columns per block (multiple of 16), blocks along v_dim
    int dkp;                    // qk_dim rounded up to 16
    int ldk, ldv, ldp, lds, ldo; // shared row strides in elements: sQ/sK, sV, sP, sS, sO
    int splits, keys_per_split; // the split of kv_len
    int blocks_per_sm;          // resident blocks per SM at this shared-memory size
    size_t smem, workspace;
    size_t off_k, off_v, off_s, off_p, off_a; // byte offsets into dynamic shared memory
    size_t off_r;               // kernel 2: per-key-tile row maxima and sums [2][4][32] fp32
};

// Kernel parameters: the arguments of vp_attn_args in kernel form, and the plan.
struct AttnParams {
    const bf16 *q, *k, *v;
    bf16 *out;
    float *part_o;  // [splits][batch * q_len * heads][v_dim]
    float *part_ml; // [splits][batch * q_len * heads][2] = (m, l), m in log2 units
    int q_len, kv_len, heads, kv_heads, qk_dim, v_dim, v_in_k, group, rows, total_rows;
    float scale_log2; // scale * log2(e): the softmax runs on exp2
    int vec;          // 16-byte copies are legal (dims multiple of 8, pointers aligned)
    int vec_out;      // 16-byte epilogue stores are legal (out and workspace 16-byte aligned)
    AttnPlan pl;
    unsigned long long *trace; // probe timeline (vp_attention_set_trace); nullptr in normal use
};

// Probe timeline, per split-kernel block (VP_ATTN_TRACE_SLOTS values at block index * slots):
//   0 globaltimer at entry, 1 clock64 at entry, 2 loads issued and padding zeroed, 3 first tile landed,
//   4 / 5 / 6 after the scores / softmax / P.V of tile 0, 7 .. 12 end of tiles 1 .. 6, 13 end of the
//   epilogue, 14 globaltimer at the end, 15 tiles. The combine's blocks follow (3 values each:
//   globaltimer at entry, after the grid dependency wait, at the end).
constexpr int VP_ATTN_TRACE_SLOTS = 16;
extern unsigned long long *g_vp_attn_trace;

// Opt plan pl's kernel in to its dynamic shared memory and return how many of its blocks fit on one SM
// (cached per device: after the first call a launch makes no runtime queries).
int vp_attention_kernel_setup(int dev, const AttnPlan *pl, int *blocks_per_sm);
// Threads per block of plan pl's kernel.
int vp_attention_threads(const AttnPlan *pl);

typedef void (*AttnKernel)(AttnParams);
// The MLA kernel for nt row tiles (1..3; vp_attention_mla.cu): latent rows of VP_ATTN_MLA_DIM, three
// 64-key stages, the query fragments in registers.
AttnKernel vp_attention_mla_kernel(int nt);
constexpr int VP_ATTN_MLA_DIM = 576;  // kv_lora_rank 512 + qk_rope_head_dim 64 (DeepSeek-V3, Kimi-K2.5)
constexpr int VP_ATTN_MLA_STAGES = 3;
// The wgmma MLA kernel for nt row tiles per warpgroup (1..3) and wgs warpgroups (1, 2;
// vp_attention_wgmma.cu): two 64-key stages of 128B-swizzled panels that the tensor memory
// accelerator fills, operands read by wgmma from shared memory. Built only where the build includes
// sm_90a code (the Makefile defines VP_ATTN_SM90A then); the planner offers it only on a compute
// capability 9.0 device. Its second parameter holds the tensor maps of the keys and the query rows.
struct AttnTma {
    CUtensorMap k, q;
};
typedef void (*AttnWgKernel)(AttnParams, AttnTma);
AttnWgKernel vp_attention_wgmma_kernel(int nt, int wgs);
// Launch it: the tensor maps encoded for p (cuTensorMapEncodeTiled), then the split kernel.
int vp_attention_wgmma_launch(const AttnParams &p, int batch, cudaStream_t stream);
constexpr int VP_ATTN_WG_STAGE_BYTES = 9 * 64 * 128;
constexpr int VP_ATTN_WG_VDIM = 512; // the value columns it computes (8 panels of 64)
#if defined(VP_ATTN_SM90A)
constexpr bool VP_ATTN_HAVE_WGMMA = true;
#else
constexpr bool VP_ATTN_HAVE_WGMMA = false;
#endif

// Launch the split kernel: grid = (row_chunks * dv_chunks, splits, batch * kv_heads).
int vp_attention_launch(const AttnParams &p, int batch, cudaStream_t stream);

// Merge the splits' unnormalised partial outputs into out [total_rows][v_dim] (bf16):
//   out[r][d] = sum_s w_s O_s[r][d] / sum_s w_s l_s,   w_s = 2^(m_s - max_s m_s)
// part_o [splits][total_rows][v_dim] fp32; part_ml [splits][total_rows][2] = (m in log2 units, l).
// Launched as a programmatic dependent of the kernel before it in the stream (the attention kernel),
// so its launch latency overlaps that kernel's tail; pdl = false launches it in stream order (the
// probe's comparison). trace: where its blocks write their timeline, or nullptr.
int vp_attention_combine(bf16 *out, const float *part_o, const float *part_ml, int splits, int total_rows,
                         int v_dim, bool pdl, unsigned long long *trace, cudaStream_t stream);

__device__ __forceinline__ unsigned long long vp_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Probe timeline (layout above): thread 0 records; one predictable branch when tracing is off.
__device__ __forceinline__ void vp_attn_trace_mark(const AttnParams &p, int slot, unsigned long long v)
{
    if (p.trace && threadIdx.x == 0)
        p.trace[((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * VP_ATTN_TRACE_SLOTS + slot] = v;
}

// vp_attention_set_probe()'s stage (vp_attention_probe.cu): 0 in normal use.
extern int g_vp_attn_probe_stage;

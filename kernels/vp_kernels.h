/* C interface of the compute kernels in the kernels/ .cu files (everything but the allreduce backends).
 *
 * All tensors are bf16 unless named otherwise, row-major, device pointers. `stream` is a
 * cudaStream_t passed as void* so that host C files need no CUDA headers. Every launcher returns a
 * cudaError_t as int (0 = success) and never synchronises, so it can be captured in a CUDA graph. */
#ifndef VPSIM_VP_KERNELS_H
#define VPSIM_VP_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Spin for `ns` nanoseconds of GPU time (globaltimer): stands in for a collective whose duration
 * comes from the analytic model (backend `model`). */
int vp_launch_delay(unsigned long long ns, void *stream);

/* Decode attention over a KV cache (flash-decoding: the KV length is split across blocks, then the
 * partial results are combined).
 *   q   [batch][q_len][heads][qk_dim]
 *   k   [batch][kv_len][kv_heads][qk_dim]
 *   v   [batch][kv_len][kv_heads][v_dim]; when v_in_k != 0, v is ignored and the values are the first
 *       v_dim elements of each key row (MLA: the latent is both key and value; kv_heads = 1)
 *   out [batch][q_len][heads][v_dim]
 * Heads map to KV heads in groups of heads / kv_heads. Every query attends to all kv_len keys (the
 * draft tokens' causal mask inside the last q_len positions is a negligible difference for timing).
 * softmax scale = `scale`. `workspace` is fp32 scratch of vp_attention_workspace_bytes(). */
typedef struct vp_attn_args {
    const void *q, *k, *v;
    void *out;
    void *workspace;
    int batch, q_len, kv_len, heads, kv_heads, qk_dim, v_dim;
    int v_in_k;
    float scale;
} vp_attn_args;
size_t vp_attention_workspace_bytes(const vp_attn_args *a);
int vp_attention_decode(const vp_attn_args *a, void *stream);
/* Additions (kernels/vp_attention.cu):
 * Call vp_attention_workspace_bytes() before capturing a graph: it also opts the kernel in to the
 * shared memory it needs (a non-stream call). It returns 0 for invalid arguments and when no workspace
 * is needed (a single KV split); vp_attention_decode() then returns cudaErrorInvalidValue resp. ignores
 * the workspace. Limits: the tiles must fit shared memory: qk_dim up to ~1000 with v_in_k (~800 with a
 * separate V as wide) in sm_120's 99 KB per block, about twice that on an H200; batch * kv_heads <= 65535.
 * kv_len = 0 gives a zero output.
 * vp_attention_set_smem_budget: cap the dynamic shared memory per block below the device's limit
 * (0 = the device's limit), e.g. 101376 to run the sm_120 configuration on an H200. Process-wide;
 * size workspaces after changing it.
 * vp_attention_set_tuning: force the pipeline depth (2..4 tiles in flight) and/or the number of KV
 * splits (1..1024); 0 = automatic. For benchmarking; process-wide; size workspaces after changing it.
 * vp_attention_set_tile: force the number of keys per shared-memory tile (16, 32 or 64; 0 = automatic),
 * like vp_attention_set_tuning.
 * vp_attention_describe: the launch configuration chosen for `a`, as "key=value,..." text.
 * vp_attention_kernel_of: the split kernel a launch of `a` runs (vp_attention_set_kernel's number, 1..3,
 * with the general kernel where the pointers rule out 16-byte copies), or 0 for invalid arguments. */
void vp_attention_set_smem_budget(size_t bytes);
int vp_attention_set_tuning(int stages, int splits);
int vp_attention_set_tile(int keys);
/* vp_attention_set_kernel: which split kernel the launches use: 1 the general one, 2 the MLA kernel
 * where it applies (latent MLA at qk_dim 576 with row chunks of up to 24 rows and its three stages in
 * shared memory; the general one elsewhere), 3 the wgmma MLA kernel where it applies (sm_90a code
 * built, a compute capability 9 device, qk_dim 576 and v_dim 512; else as 2), 0 the default.
 * Returns 0, or cudaErrorInvalidValue. */
int vp_attention_set_kernel(int kernel);
/* vp_wgmma_layout_check: one warpgroup MMA (m64n24k16 x 4 k-steps) on each operand layout the wgmma
 * kernel reads -- A and B K-major (the scores), A MN-major (the values, transposed) -- from small
 * integers, whose products fp32 holds exactly. mismatches[0..1]: elements of D that differ from the
 * host's product, per layout. Returns cudaErrorNotSupported where no sm_90a code was built or the
 * device is not compute capability 9 (kernels/vp_wgmma_check.cu). */
int vp_wgmma_layout_check(int mismatches[2], void *stream);

int vp_attention_describe(const vp_attn_args *a, char *buf, size_t len);
int vp_attention_kernel_of(const vp_attn_args *a);
/* Benchmark probes (kernels/vp_attention_probe.cu; vpsim-kernel-tests --kernel probe):
 * vp_empty_launch: one empty kernel (1 block of 32 threads), the floor of any launch timed the same way.
 * vp_attention_set_probe: which launches vp_attention_decode makes when it splits the keys: 0 both (the
 * default), 1 the split kernel only (out is not written), 2 the combine only (over whatever partials the
 * workspace holds), 3 both, the combine launched in stream order (no programmatic dependent launch).
 * Process-wide; timing only. */
int vp_empty_launch(void *stream);
int vp_attention_set_probe(int stage);
/* vp_load_probe (kernels/vp_load_probe.cu): `blocks` blocks of `threads` threads, one per SM, each
 * bringing its `rows` rows of `row_bytes` (a multiple of 16) of src into shared memory by mechanism
 * `mode` (0 cp.async 16 B, 1 ld.global 16 B into registers, 2 a bulk copy per row, 3 one bulk copy per
 * block); `sink` is a device word it may write. */
int vp_load_probe(int mode, const void *src, int blocks, int rows, int row_bytes, int threads, void *sink,
                  void *stream);
/* vp_store_probe: `blocks` blocks, one per SM, each writing `bytes` (a multiple of 16) from shared
 * memory to dst + block * bytes (mode 0 every thread 16 B at a time, 1 one bulk copy a block).
 * vp_combine_probe: the split merge alone (vp_attention_combine, stream order) over part_o
 * [splits][rows][v_dim] fp32 and part_ml [splits][rows][2], into out [rows][v_dim] bf16. */
int vp_store_probe(int mode, void *dst, int blocks, int bytes, int threads, void *stream);
int vp_combine_probe(void *out, const void *part_o, const void *part_ml, int splits, int rows, int v_dim,
                     void *stream);
/* vp_attention_set_trace: a device buffer (NULL: off) into which the next launches write their
 * timeline, 16 uint64 per split-kernel block, then 3 per combine block (layout in vp_attention.cuh). */
void vp_attention_set_trace(void *buf);

/* out[r][c] = in[r][c] * rsqrt(mean_c(in[r][c]^2) + eps) * weight[c]; rows x cols. */
int vp_rmsnorm(void *out, const void *in, const void *weight, int rows, int cols, float eps, void *stream);

/* allreduce_norm's unfused epilogue: residual[r][c] += x[r][c] (stored bf16), then
 * x[r][c] = residual[r][c] * rsqrt(mean_c(residual[r][c]^2) + eps) * weight[c]; rows x cols. */
int vp_residual_rmsnorm(void *x, void *residual, const void *weight, int rows, int cols, float eps, void *stream);

/* out[r][c] = silu(x[r][c]) * x[r][cols + c]  for x [rows][2 * cols] (gate and up halves). */
int vp_silu_mul(void *out, const void *x, int rows, int cols, void *stream);

/* A memory-bound stand-in for small fused element-wise ops (rope, top-k, combine, sampling):
 * out[i] = in[i] * alpha + out[i] * beta over n elements (beta == 0: out is not read, BLAS-style). */
int vp_axpby(void *out, const void *in, long long n, float alpha, float beta, void *stream);

/* Vocab-parallel embedding: out[r] = table[ids[r] - vocab_lo] if vocab_lo <= ids[r] < vocab_lo + rows_in_shard,
 * else zeros. table [rows_in_shard][cols]; ids int32 [rows]. */
int vp_embedding(void *out, const void *table, const int *ids, int rows, int cols, int vocab_lo, int rows_in_shard,
                 void *stream);

/* Deterministic test data for collective checks. Element i of rank r, with salt s:
 * vp_pattern_value(r, i, s) = (float)(((i * 7 + s * 13 + r * 5) % 17) - 8) — small integers, so
 * sums over up to 16 ranks are exact in bf16 and fp32. */
int vp_fill_pattern(void *buf, long long n, int rank, int salt, void *stream);
/* Fill with a poison value (NaN bit pattern 0x7fc1) before a collective writes the buffer. */
int vp_fill_poison(void *buf, long long n, void *stream);
/* Fill with pseudo-random values in [-1, 1) (weights, activations); deterministic in `seed`. */
int vp_fill_random(void *buf, long long n, unsigned long long seed, void *stream);
/* Read `bytes` of buf (16-byte aligned, a multiple of 16) once; `sink` is a device word it may write.
 * The kernel benchmarks' clean L2 flush: afterwards the L2 holds clean lines of buf only. */
int vp_read_sweep(const void *buf, size_t bytes, void *sink, void *stream);

/* Compare buf with the expected allreduce sum over `ranks` ranks (salt s), or with the all-gather of
 * `ranks` segments of n / ranks elements each (gather != 0). Writes the first bad index or -1 to
 * *first_bad_dev (a device int64), so it can run inside a graph; read it back after synchronising. */
int vp_check_collective(const void *buf, long long n, int ranks, int salt, int gather, long long *first_bad_dev,
                        void *stream);

#ifdef __cplusplus
}
#endif

#endif

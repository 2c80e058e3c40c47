/* C interface of the fused allreduce + residual add + RMSNorm kernels (kernels/vp_allreduce_norm.cu),
 * fusion.allreduce_residual_norm on the custom backends oneshot and push:
 *     residual += sum over ranks of in[r];  out = RMSNorm(residual) x weight  (rows of `width`, eps)
 * One kernel per call, over the same IPC buffers, barriers and epochs as vp_allreduce.h's kernels (a
 * call can be captured in a CUDA graph). A thread-block cluster of k = vp_ar_norm_cluster blocks owns a
 * row (its columns split over the k blocks, one unit per thread as the plain kernels' grids), and the
 * row's sum of squares meets in the cluster's distributed shared memory: grid = k x min(rows,
 * VP_AR_MAX_BLOCKS / k) on every rank (3 x 7168: one-shot 2 x 3 = 6 blocks, push 4 x 3 = 12). Needs
 * sm_90 or newer (clusters). The residual is stored in bf16 and the norm reads the stored (rounded)
 * values, as the unfused sequence would. */
#ifndef VPSIM_VP_ALLREDUCE_NORM_H
#define VPSIM_VP_ALLREDUCE_NORM_H

#include "vp_allreduce.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vp_ar_norm {
    void *residual;     /* [rows][width] bf16, this rank's copy (replicated under TP), updated in place */
    const void *weight; /* [width] bf16 */
    int rows, width;    /* rows x width == vp_ar_args.count */
    float eps;
} vp_ar_norm;

/* Blocks per cluster (per row): ceil(units of a row / VP_AR_THREADS), units = 8 elements (one-shot,
 * push = 0) or 4-element lines (push = 1), clamped to [1, VP_AR_NORM_MAX_CLUSTER] (the portable cluster
 * size). The grid (k x clusters) for rows x width; the same on every rank. */
#define VP_AR_NORM_MAX_CLUSTER 8
int vp_ar_norm_cluster(int width, int push);
int vp_ar_blocks_norm(int rows, int width, int push);
/* Return a cudaError_t as int; cudaErrorInvalidValue when rows x width != count, or (push) width is not
 * a multiple of 4 (a push line of 4 elements must not straddle rows). */
int vp_allreduce_norm_oneshot(const vp_ar_args *a, const vp_ar_norm *nm, void *stream);
int vp_allreduce_norm_push(const vp_ar_args *a, const vp_ar_norm *nm, void *stream);

#ifdef __cplusplus
}
#endif

#endif

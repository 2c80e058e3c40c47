/* C interface of the fused allreduce + residual add + RMSNorm kernels (kernels/vp_allreduce_norm.cu),
 * fusion.allreduce_residual_norm on the custom backends oneshot and push:
 *     residual += sum over ranks of in[r];  out = RMSNorm(residual) x weight  (rows of `width`, eps)
 * One kernel per call, over the same IPC buffers, barriers and epochs as vp_allreduce.h's kernels (a
 * call can be captured in a CUDA graph). A block owns whole rows, since the norm needs a row's sum of
 * squares: grid = min(rows, VP_AR_MAX_BLOCKS) on every rank. The residual is stored in bf16 and the
 * norm reads the stored (rounded) values, as the unfused sequence would. */
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

int vp_ar_blocks_norm(int rows);
/* Return a cudaError_t as int; cudaErrorInvalidValue when rows x width != count, or (push) width is not
 * a multiple of 4 (a push line of 4 elements must not straddle rows). */
int vp_allreduce_norm_oneshot(const vp_ar_args *a, const vp_ar_norm *nm, void *stream);
int vp_allreduce_norm_push(const vp_ar_args *a, const vp_ar_norm *nm, void *stream);

#ifdef __cplusplus
}
#endif

#endif

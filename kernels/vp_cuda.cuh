// Device-side helpers shared by the kernels in kernels/*.cu (not part of the C interface).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

// Launchers return the error instead of aborting: the caller (the executor) owns the error policy
// (report rank and host, then MPI_Abort), and a return keeps the launchers usable inside graph capture.
#define VP_TRY(call)                                                                                            \
    do {                                                                                                        \
        cudaError_t vp_try_err_ = (call);                                                                       \
        if (vp_try_err_ != cudaSuccess)                                                                         \
            return (int)vp_try_err_;                                                                            \
    } while (0)

// Eight bf16 = 16 bytes: the widest single load/store, which is what keeps these kernels at DRAM speed.
struct alignas(16) bf16x8 {
    __nv_bfloat162 h[4];
};

static inline bool vp_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

// Grid for a grid-stride loop over n items: enough blocks to fill any current GPU several times over,
// few enough that the per-block setup stays negligible.
static inline unsigned vp_grid_for(long long n, int threads)
{
    long long blocks = (n + threads - 1) / threads;
    if (blocks > 8192)
        blocks = 8192;
    return (unsigned)(blocks < 1 ? 1 : blocks);
}

__device__ __forceinline__ float vp_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float vp_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the whole block, returned to every thread. blockDim.x must be a multiple of 32 (all callers
// launch 128 or 256 threads). `scratch` holds 32 floats; safe to call repeatedly with the same scratch.
__device__ __forceinline__ float vp_block_sum(float v, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = vp_warp_sum(v);
    __syncthreads(); // scratch may still be read by a previous call
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : 0.0f;
    return vp_warp_sum(v);
}

__device__ __forceinline__ float vp_block_max(float v, float *scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = vp_warp_max(v);
    __syncthreads();
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : -INFINITY;
    return vp_warp_max(v);
}

// Reductions over aligned groups of W lanes (W a power of two <= 32), e.g. the lanes holding one row.
template <int W>
__device__ __forceinline__ float vp_seg_max(float v)
{
    for (int o = W / 2; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <int W>
__device__ __forceinline__ float vp_seg_sum(float v)
{
    for (int o = W / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

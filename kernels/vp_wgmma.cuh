// PTX wrappers for the warpgroup MMA of sm_90a (wgmma.mma_async) and the shared-memory matrix
// descriptors it reads (PTX ISA, "Asynchronous Warpgroup Level Matrix Shared Memory Layout").
// Only code compiled for sm_90a may call them: the caller guards its body with VP_WGMMA_ARCH.
//
// Descriptor (64 bits): start address >> 4 (bits 0-13), leading-dimension byte offset >> 4 (16-29),
// stride-dimension byte offset >> 4 (32-45), swizzle mode (62-63; 1 = 128-byte swizzle).
// Every operand here is a 128B-swizzled panel: rows of 128 bytes (64 bf16), 16-byte chunk c of row r
// stored at chunk c ^ (r % 8), 8-row atoms of 1,024 bytes, the panel 1,024-byte aligned.
//   K-major (the reduction dimension runs along the row): SBO = 1,024 (from one 8-row atom to the
//     next along M or N); LBO is unused (16). A k16 step inside the panel adds 32 bytes to the start.
//   MN-major (M runs along the row; transposed A): SBO = 1,024 (from 8 K-rows to the next 8), LBO =
//     from one 64-wide M atom to the next (unused at M = 64).
// Accumulator fragment of m64nNk16 (f32), warp w of the warpgroup, g = lane / 4, t = lane % 4:
//   d[4j + e] = D[16w + g + 8 (e / 2)][8j + 2t + e % 2],  j < N / 8, e < 4 (mma.sync's C layout per n8).
#pragma once

#include "vp_cuda.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define VP_WGMMA_ARCH 1
#else
#define VP_WGMMA_ARCH 0
#endif

__device__ __forceinline__ uint64_t vp_wg_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((smem_addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}

#if VP_WGMMA_ARCH
__device__ __forceinline__ void vp_wg_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void vp_wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void vp_wg_wait0()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Generic-proxy writes to shared memory (st.shared, cp.async) made visible to the async proxy that
// wgmma reads through; followed by a barrier.
__device__ __forceinline__ void vp_fence_async_smem()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#else
__device__ __forceinline__ void vp_wg_fence() {}
__device__ __forceinline__ void vp_wg_commit() {}
__device__ __forceinline__ void vp_wg_wait0() {}
__device__ __forceinline__ void vp_fence_async_smem() {}
#endif

// Keeps the compiler from moving reads of an accumulator across the wgmma wait (the asm that wrote it
// returned before the hardware did).
template <int R>
__device__ __forceinline__ void vp_wg_hold(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

// Named barrier of one warpgroup (ids 1.. ; 0 is __syncthreads).
__device__ __forceinline__ void vp_wg_bar(int id)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

// D (+)= A B, m64nNk16, bf16 in, f32 accumulate, both operands in shared memory. TA = 1: A MN-major.
// scale_d = 0: D = A B (the accumulator's old value ignored).
template <int N, int TA>
struct VpWgmma;

#if VP_WGMMA_ARCH
#define VP_WG_HEAD(NN) "{\n.reg .pred p;\nsetp.ne.b32 p, %" NN ", 0;\nwgmma.mma_async.sync.aligned.m64n"
template <int TA>
struct VpWgmma<8, TA> {
    static __device__ __forceinline__ void run(float (&d)[4], uint64_t a, uint64_t b, int scale_d)
    {
        asm volatile(VP_WG_HEAD("6") "8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, %7, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "l"(a), "l"(b), "r"(scale_d), "n"(TA));
    }
};
template <int TA>
struct VpWgmma<16, TA> {
    static __device__ __forceinline__ void run(float (&d)[8], uint64_t a, uint64_t b, int scale_d)
    {
        asm volatile(VP_WG_HEAD("10") "16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, "
                                      "%11, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                       "+f"(d[7])
                     : "l"(a), "l"(b), "r"(scale_d), "n"(TA));
    }
};
template <int TA>
struct VpWgmma<24, TA> {
    static __device__ __forceinline__ void run(float (&d)[12], uint64_t a, uint64_t b, int scale_d)
    {
        asm volatile(VP_WG_HEAD("14") "24k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                                      "%11}, %12, %13, p, 1, 1, %15, 0;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                       "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
                     : "l"(a), "l"(b), "r"(scale_d), "n"(TA));
    }
};
#undef VP_WG_HEAD
#else
template <int N, int TA>
struct VpWgmma {
    static __device__ __forceinline__ void run(float (&)[N / 2], uint64_t, uint64_t, int) {}
};
#endif

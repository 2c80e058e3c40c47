// PTX wrappers for tensor-core tiles and asynchronous copies (sm_80 and newer: sm_90, sm_120).
//
// mma.sync / ldmatrix rather than WMMA: the register layout of mma.sync fragments is documented (PTX
// ISA, "Matrix fragments for mma.m16n8k16 with floating point type"), and flash attention has to
// rescale rows of the accumulator in place, which WMMA's opaque fragments do not allow.
// With g = lane / 4 and t = lane % 4 (each register holds two consecutive bf16, lower index low):
//   A 16x16 row-major: a0 (row g, k 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
//   B 16x8 "col":      b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)      i.e. B stored n-major (as K rows are)
//   C 16x8 fp32:       c0, c1 (row g, n 2t, 2t+1), c2, c3 (row g+8, n 2t, 2t+1)
// ldmatrix.x4 loads four 8x8 bf16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, and
// lane l receives row l / 4, elements 2(l % 4) and +1 of each (transposed with .trans).
#pragma once

#include "vp_cuda.cuh"

__device__ __forceinline__ uint32_t vp_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// The plain and .trans forms differ only in that qualifier; asm templates must be string literals, so
// the qualifier is pasted in by the preprocessor. TRANS is "" or ".trans".
#define VP_LDMATRIX_X4(TRANS, r, p)                                                                            \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4" TRANS ".shared.b16 {%0,%1,%2,%3}, [%4];\n"                   \
                 : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])                                      \
                 : "r"(vp_smem_addr(p))                                                                        \
                 : "memory")
#define VP_LDMATRIX_X2(TRANS, r, p)                                                                            \
    asm volatile("ldmatrix.sync.aligned.m8n8.x2" TRANS ".shared.b16 {%0,%1}, [%2];\n"                         \
                 : "=r"((r)[0]), "=r"((r)[1])                                                                  \
                 : "r"(vp_smem_addr(p))                                                                        \
                 : "memory")

__device__ __forceinline__ void vp_ldmatrix_x4(uint32_t r[4], const bf16 *p) { VP_LDMATRIX_X4("", r, p); }
__device__ __forceinline__ void vp_ldmatrix_x2(uint32_t r[2], const bf16 *p) { VP_LDMATRIX_X2("", r, p); }
__device__ __forceinline__ void vp_ldmatrix_x4_trans(uint32_t r[4], const bf16 *p) { VP_LDMATRIX_X4(".trans", r, p); }
__device__ __forceinline__ void vp_ldmatrix_x2_trans(uint32_t r[2], const bf16 *p) { VP_LDMATRIX_X2(".trans", r, p); }

#undef VP_LDMATRIX_X4
#undef VP_LDMATRIX_X2

// c += a * b for one 16x8x16 tile: bf16 inputs, fp32 accumulation.
__device__ __forceinline__ void vp_mma_16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16-byte copy global -> shared that does not block the thread; src_bytes = 0 writes 16 zero bytes
// (the source is then not read, but must still be a valid address).
__device__ __forceinline__ void vp_cp_async16(bf16 *dst, const bf16 *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(vp_smem_addr(dst)), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void vp_cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void vp_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// The same for a run-time N in 0..3 (wait_group takes an immediate).
__device__ __forceinline__ void vp_cp_async_wait_dyn(int n)
{
    if (n <= 0)
        vp_cp_async_wait<0>();
    else if (n == 1)
        vp_cp_async_wait<1>();
    else if (n == 2)
        vp_cp_async_wait<2>();
    else
        vp_cp_async_wait<3>();
}

// Programmatic dependent launch (sm_90+). A kernel launched with the programmatic-serialization
// attribute may start while the previous kernel in the stream still runs; vp_grid_dep_wait() blocks
// until that kernel has completed and its writes are visible (a no-op without the attribute).
// vp_grid_dep_launch_dependents() lets the dependent grid start launching before this one ends.
__device__ __forceinline__ void vp_grid_dep_wait()
{
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

__device__ __forceinline__ void vp_grid_dep_launch_dependents()
{
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// ----------------------------------------------------------------- bulk copies on an mbarrier (sm_90+)
// cp.async.bulk: the copy engine moves a whole block of bytes for one thread's instruction; completion
// is counted in bytes on an mbarrier in shared memory (PTX ISA, "mbarrier" and "cp.async.bulk").
__device__ __forceinline__ void vp_mbar_init(uint64_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(vp_smem_addr(bar)), "r"(count) : "memory");
}

// Makes the barriers' initialisation visible to the copy engine (the async proxy).
__device__ __forceinline__ void vp_mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// This thread's arrival, announcing `bytes` that copies will complete on the barrier.
__device__ __forceinline__ void vp_mbar_arrive_expect_tx(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(vp_smem_addr(bar)), "r"(bytes)
                 : "memory");
}

// Wait until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void vp_mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "VP_MBAR_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra VP_MBAR_WAIT;\n"
                 "}\n" ::"r"(vp_smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}

// Global -> shared bulk copy of `bytes` (a multiple of 16; both addresses 16-byte aligned), completing
// `bytes` on the barrier.
__device__ __forceinline__ void vp_bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     vp_smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(vp_smem_addr(bar))
                 : "memory");
}

// vp_sys_ops: the system-scope memory operations every cross-GPU kernel of vpsim uses (the custom
// allreduce kernels, vp_ar_device.cuh, and the link probe, vp_links.cu), in one place so that the
// probe measures exactly the flag protocol the kernels run.
#ifndef VPSIM_VP_SYS_OPS_CUH
#define VPSIM_VP_SYS_OPS_CUH

namespace {

typedef unsigned long long u64;

__device__ __forceinline__ u64 now_ns()
{
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Flag store. A preceding bar.sync makes the whole block's earlier accesses visible to this thread
// (CTA scope); release at system scope is cumulative, so a peer that acquires the flag on another GPU
// (or another process on this GPU, or through host memory) sees them.
__device__ __forceinline__ void st_release_sys(unsigned *p, unsigned v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned ld_acquire_sys(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

} // namespace

#endif

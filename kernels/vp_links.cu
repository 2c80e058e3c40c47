// The link probe's kernels (C interface and contracts in vp_links.h).
//
// Flags follow the custom allreduce's protocol (vp_ar_device.cuh): a flag is stored with
// st.release.sys and polled with ld.acquire.sys, so a store becomes visible to a poller on another GPU,
// in another process on this GPU, or through host memory, with nothing cached in between. Each wait is
// bounded: a peer that never answers costs timeout_ns, never a hang. Pointer-chase loads are volatile
// (never served from L1) and each repetition walks other cache lines than the last (the caller picks the
// line), so every hop is a trip to the memory that holds the chain, or at least to its owner's L2.
// Whether the issuing GPU's L2 would keep a peer's or the host's lines (NVIDIA documents L2 as the point
// of coherence for the GPU's own memory; peer loads are served by the owner) does not matter here: no
// line is read twice in one walk, nor by two repetitions. The owner's L2 may hold the chain (it was
// just written, and 2 MiB fits), which is the case that matters for flags and freshly written data.
#include "vp_cuda.cuh"
#include "vp_links.h"
#include "vp_sys_ops.cuh"

namespace {

__device__ __forceinline__ unsigned ld_volatile_u32(const void *p)
{
    unsigned v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Wait until *f reaches want (wrap-safe: flags only move forward); false after timeout_ns.
__device__ bool wait_for(const unsigned *f, unsigned want, u64 timeout_ns, unsigned *seen)
{
    u64 t0 = 0;
    for (unsigned spin = 0;; spin++) {
        *seen = ld_acquire_sys(f);
        if ((int)(*seen - want) >= 0)
            return true;
        if ((spin & 255u) == 0u) {
            const u64 t = now_ns();
            if (spin == 0u)
                t0 = t;
            else if (t - t0 > timeout_ns)
                return false;
        }
    }
}

__global__ void pingpong_kernel(unsigned *send, const unsigned *recv, int initiator, unsigned base, int rounds,
                                u64 timeout_ns, vp_links_res *res)
{
    u64 t0 = 0;
    unsigned seen = 0, status = 0;
    for (int i = 1; i <= rounds + 1 && status == 0; i++) {
        const unsigned v = base + (unsigned)i;
        if (initiator) {
            if (i == 2)
                t0 = now_ns();
            st_release_sys(send, v);
            status = wait_for(recv, v, timeout_ns, &seen) ? 0u : 1u;
        } else {
            status = wait_for(recv, v, timeout_ns, &seen) ? 0u : 1u;
            if (status == 0)
                st_release_sys(send, v);
        }
    }
    const u64 t1 = now_ns();
    res->ns = initiator && t0 ? t1 - t0 : 0;
    res->aux = seen;
    res->status = status;
    __threadfence_system();
}

__global__ void chase_kernel(const char *chain, int hops, long long node_bytes, long long line_off, vp_links_res *res)
{
    unsigned idx = 0;
    const u64 t0 = now_ns();
    for (int h = 0; h < hops; h++)
        idx = ld_volatile_u32(chain + (long long)idx * node_bytes + line_off);
    const u64 t1 = now_ns();
    res->ns = t1 - t0;
    res->aux = idx;
    res->status = 0;
    __threadfence_system();
}

__global__ void store_kernel(vp_links_targets t, long long vecs, unsigned seed)
{
    const int per = gridDim.x / t.n, which = blockIdx.x % t.n;
    uint4 *dst = (uint4 *)t.p[which];
    const long long stride = (long long)per * blockDim.x;
    for (long long i = (long long)(blockIdx.x / t.n) * blockDim.x + threadIdx.x; i < vecs; i += stride) {
        const unsigned w = (unsigned)(i * 4);
        dst[i] = make_uint4(w ^ seed, (w + 1u) ^ seed, (w + 2u) ^ seed, (w + 3u) ^ seed);
    }
}

__global__ void load_kernel(vp_links_targets t, long long vecs, unsigned *sink)
{
    const int per = gridDim.x / t.n, which = blockIdx.x % t.n;
    const uint4 *src = (const uint4 *)t.p[which];
    const long long stride = (long long)per * blockDim.x;
    long long i = (long long)(blockIdx.x / t.n) * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    // Four independent loads in flight per thread: a far link needs many outstanding requests.
    for (; i + 3 * stride < vecs; i += 4 * stride) {
        const uint4 a = __ldcv(src + i), b = __ldcv(src + i + stride), c = __ldcv(src + i + 2 * stride),
                    d = __ldcv(src + i + 3 * stride);
        acc += a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
    }
    for (; i < vecs; i += stride) {
        const uint4 a = __ldcv(src + i);
        acc += a.x + a.y + a.z + a.w;
    }
    acc = __reduce_add_sync(0xffffffffu, acc);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(sink, acc);
}

__global__ void empty_kernel() {}

__global__ void stamp_kernel(u64 *stamps, int i) { stamps[i] = now_ns(); }

__global__ void spin_kernel(u64 ns)
{
    const u64 t0 = now_ns();
    while (now_ns() - t0 < ns) {
    }
}

int grid_for(const vp_links_targets &t, int blocks)
{
    if (blocks < t.n)
        blocks = t.n;
    return (blocks + t.n - 1) / t.n * t.n;
}

bool targets_ok(const vp_links_targets &t, long long bytes)
{
    if (t.n < 1 || t.n > VP_LINKS_MAX_TARGETS || bytes < 16 || bytes % 16 != 0)
        return false;
    for (int i = 0; i < t.n; i++)
        if (!t.p[i] || !vp_aligned16(t.p[i]))
            return false;
    return true;
}

} // namespace

extern "C" int vp_links_pingpong(unsigned int *send, const unsigned int *recv, int initiator, unsigned int base,
                                 int rounds, unsigned long long timeout_ns, vp_links_res *res, void *stream)
{
    if (!send || !recv || !res || rounds < 1)
        return (int)cudaErrorInvalidValue;
    pingpong_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(send, recv, initiator, base, rounds, timeout_ns, res);
    return (int)cudaGetLastError();
}

extern "C" int vp_links_chase(const void *chain, int hops, long long node_bytes, long long line_off,
                              vp_links_res *res, void *stream)
{
    if (!chain || !res || hops < 1 || node_bytes < 4 || line_off < 0 || line_off + 4 > node_bytes)
        return (int)cudaErrorInvalidValue;
    chase_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((const char *)chain, hops, node_bytes, line_off, res);
    return (int)cudaGetLastError();
}

extern "C" int vp_links_store(vp_links_targets t, long long bytes, unsigned int seed, int blocks, void *stream)
{
    if (!targets_ok(t, bytes))
        return (int)cudaErrorInvalidValue;
    store_kernel<<<grid_for(t, blocks), VP_LINKS_THREADS, 0, (cudaStream_t)stream>>>(t, bytes / 16, seed);
    return (int)cudaGetLastError();
}

extern "C" int vp_links_load(vp_links_targets t, long long bytes, int blocks, unsigned int *sink, void *stream)
{
    if (!targets_ok(t, bytes) || !sink)
        return (int)cudaErrorInvalidValue;
    load_kernel<<<grid_for(t, blocks), VP_LINKS_THREADS, 0, (cudaStream_t)stream>>>(t, bytes / 16, sink);
    return (int)cudaGetLastError();
}

extern "C" int vp_links_empty(void *stream)
{
    empty_kernel<<<1, 1, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

extern "C" int vp_links_stamp(unsigned long long *stamps, int i, void *stream)
{
    stamp_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(stamps, i);
    return (int)cudaGetLastError();
}

extern "C" int vp_links_spin(unsigned long long ns, void *stream)
{
    spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
    return (int)cudaGetLastError();
}

// How fast can one block per SM bring a tile of the KV cache into shared memory? The attention
// kernel's first tile (MLA at 8K: 128 blocks x 64 keys x 1,152 bytes) lands ~4.8 us after its launch
// on an H200, about 2 TB/s, while a plain copy of the same bytes runs at ~4 TB/s (bench/NOTES.md,
// 2026-12-02). These kernels move the same bytes the same way but for one mechanism each, so the
// difference names what limits the load (vpsim-kernel-tests --kernel probe, case loads):
//   0 cp.async.cg 16 bytes per thread into padded rows (what the attention kernel does)
//   1 ld.global 16 bytes per thread into registers (no shared memory; a copy kernel's reads)
//   2 one cp.async.bulk per row into padded rows, on an mbarrier (tried in the kernel: slower)
//   3 one cp.async.bulk of the whole contiguous tile into unpadded shared memory
// Block b reads rows [b * rows, (b + 1) * rows) of `row_bytes` each; grid = blocks, one block per SM
// (the dynamic shared memory asked for keeps a second one out). Not used by the executor.
//
// The split merge's two halves (vp_store_probe, vp_combine_probe; case merge): the split kernels'
// epilogue writes 48-96 KB of fp32 partials a block and the combine reads them back, ~5-8 us in all at
// every context (docs/attention-kernel.md). Timed over bytes and mechanism, they say whether that cost
// follows the bytes (then fewer bytes pay) or the launch and latency (then only fewer steps do).
#include "vp_attention.cuh"
#include "vp_kernels.h"
#include "vp_mma.cuh"

namespace {

__global__ void load_probe_kernel(int mode, const unsigned char *src, int rows, int row_bytes, unsigned *sink)
{
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ uint64_t bar;
    const int pitch = row_bytes + 16; // the attention kernel's padded row
    const unsigned char *g = src + (size_t)blockIdx.x * rows * row_bytes;
    const int chunks = row_bytes / 16;
    unsigned x = 0;
    if (mode == 0) {
        for (int i = threadIdx.x; i < rows * chunks; i += blockDim.x) {
            const int r = i / chunks, c = i % chunks;
            vp_cp_async16(reinterpret_cast<bf16 *>(smem + r * pitch + c * 16),
                          reinterpret_cast<const bf16 *>(g + (size_t)r * row_bytes + c * 16), 16);
        }
        vp_cp_async_commit();
        vp_cp_async_wait<0>();
        __syncthreads();
        x = reinterpret_cast<const unsigned *>(smem)[threadIdx.x];
    } else if (mode == 1) {
        const uint4 *s = reinterpret_cast<const uint4 *>(g);
        for (int i = threadIdx.x; i < rows * chunks; i += blockDim.x) {
            const uint4 v = s[i];
            x ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    } else {
        if (threadIdx.x == 0) {
            vp_mbar_init(&bar, 1);
            vp_mbar_init_fence();
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            if (threadIdx.x == 0)
                vp_mbar_arrive_expect_tx(&bar, (unsigned)(rows * row_bytes));
            __syncwarp();
            if (mode == 2) {
                for (int r = threadIdx.x; r < rows; r += 32)
                    vp_bulk_copy(smem + r * pitch, g + (size_t)r * row_bytes, (unsigned)row_bytes, &bar);
            } else if (threadIdx.x == 0) {
                vp_bulk_copy(smem, g, (unsigned)(rows * row_bytes), &bar);
            }
        }
        vp_mbar_wait(&bar, 0);
        x = reinterpret_cast<const unsigned *>(smem)[threadIdx.x];
    }
    if (x == 0x9e3779b9u) // never for the probe's data; keeps the loads
        *sink = x;
}

// Block b writes `bytes` (a multiple of 16) from its shared memory to dst + b * bytes: mode 0 all
// threads 16 bytes at a time (the epilogues' row stores), mode 1 one bulk copy by one thread (TMA).
__global__ void store_probe_kernel(int mode, unsigned char *dst, int bytes)
{
    extern __shared__ __align__(16) unsigned char smem[];
    uint4 *const s = reinterpret_cast<uint4 *>(smem);
    const int n = bytes / 16;
    for (int i = threadIdx.x; i < n; i += blockDim.x) // staged as the epilogue stages its rows
        s[i] = make_uint4(i, blockIdx.x, i ^ blockIdx.x, 7u);
    unsigned char *const g = dst + (size_t)blockIdx.x * bytes;
    if (mode == 0) {
        __syncthreads();
        uint4 *const d = reinterpret_cast<uint4 *>(g);
        for (int i = threadIdx.x; i < n; i += blockDim.x)
            d[i] = s[i];
        return;
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); // the generic writes, to the async proxy
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(g),
                     "r"(vp_smem_addr(smem)), "r"((unsigned)bytes)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
}

// Dynamic shared memory for a probe block that needs `need` bytes beside `reserved` static ones: at
// least 60 % of the opt-in, so that one block runs per SM, as the attention kernels' do. 0: it does not fit.
int one_block_per_sm_smem(size_t need, size_t reserved, size_t *smem)
{
    int dev, optin;
    VP_TRY(cudaGetDevice(&dev));
    VP_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const size_t floor = (size_t)optin * 6 / 10;
    *smem = need > floor ? need : floor;
    return *smem + reserved > (size_t)optin ? (int)cudaErrorInvalidValue : 0;
}

bool probe_threads_ok(int threads) { return threads >= 32 && threads <= 1024 && threads % 32 == 0; }

} // namespace

extern "C" int vp_store_probe(int mode, void *dst, int blocks, int bytes, int threads, void *stream)
{
    if (mode < 0 || mode > 1 || !dst || blocks < 1 || bytes < 16 || bytes % 16 || !probe_threads_ok(threads))
        return (int)cudaErrorInvalidValue;
    size_t smem;
    VP_TRY((cudaError_t)one_block_per_sm_smem((size_t)bytes, 0, &smem));
    VP_TRY(cudaFuncSetAttribute(store_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    store_probe_kernel<<<blocks, threads, smem, (cudaStream_t)stream>>>(mode, (unsigned char *)dst, bytes);
    return (int)cudaGetLastError();
}

extern "C" int vp_combine_probe(void *out, const void *part_o, const void *part_ml, int splits, int rows, int v_dim,
                                void *stream)
{
    return vp_attention_combine((bf16 *)out, (const float *)part_o, (const float *)part_ml, splits, rows, v_dim,
                                false, nullptr, (cudaStream_t)stream);
}

extern "C" int vp_load_probe(int mode, const void *src, int blocks, int rows, int row_bytes, int threads,
                             void *sink, void *stream)
{
    if (mode < 0 || mode > 3 || !src || !sink || blocks < 1 || rows < 1 || row_bytes < 16 || row_bytes % 16 ||
        !probe_threads_ok(threads))
        return (int)cudaErrorInvalidValue;
    size_t smem;
    VP_TRY((cudaError_t)one_block_per_sm_smem((size_t)rows * (row_bytes + 16), 64, &smem)); // 64: the static barrier
    VP_TRY(cudaFuncSetAttribute(load_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    load_probe_kernel<<<blocks, threads, smem, (cudaStream_t)stream>>>(mode, (const unsigned char *)src, rows,
                                                                      row_bytes, (unsigned *)sink);
    return (int)cudaGetLastError();
}

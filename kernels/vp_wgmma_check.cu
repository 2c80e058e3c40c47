// vp_wgmma_layout_check (vp_kernels.h): the operand layouts of the wgmma attention kernel, checked on
// one warpgroup MMA each against the host's product, so that a wrong descriptor shows apart from the
// kernel's softmax and epilogue (vp_wgmma.cuh describes the layouts).
#include "vp_attention.cuh"
#include "vp_kernels.h"
#include "vp_mma.cuh"
#include "vp_wgmma.cuh"

#include <stdlib.h>

namespace {

constexpr int M = 64, N = 24, K = 64; // one 128-byte panel of K; four k16 steps

// x [rows][64] bf16 row-major -> a 128B-swizzled panel at dst (1,024-byte aligned).
__device__ void to_panel(unsigned char *dst, const bf16 *x, int rows)
{
    for (int i = threadIdx.x; i < rows * 64; i += blockDim.x) {
        const int r = i / 64, c = i % 64;
        *reinterpret_cast<bf16 *>(dst + r * 128 + ((((c >> 3) ^ (r & 7))) << 4) + (c & 7) * 2) = x[i];
    }
}

// a [64][64], b [24][64] row-major. d0 [64][24] = a b^T (A K-major = a's rows, B K-major = b's rows);
// d1 [64][24] = a^T b^T (A MN-major: a's rows are K, its columns M).
__global__ void __launch_bounds__(128) wgmma_check_kernel(const bf16 *a, const bf16 *b, float *d0, float *d1)
{
    __shared__ __align__(1024) unsigned char sa[M * 128];
    __shared__ __align__(1024) unsigned char sb[1024 * ((N + 7) / 8)];
    to_panel(sa, a, M);
    to_panel(sb, b, N);
    vp_fence_async_smem();
    __syncthreads();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    float acc0[N / 2], acc1[N / 2];
    const uint32_t pa = vp_smem_addr(sa), pb = vp_smem_addr(sb);
    vp_wg_fence();
    for (int ks = 0; ks < K / 16; ks++) {
        VpWgmma<N, 0>::run(acc0, vp_wg_desc(pa + ks * 32, 16, 1024), vp_wg_desc(pb + ks * 32, 16, 1024), ks > 0);
        VpWgmma<N, 1>::run(acc1, vp_wg_desc(pa + ks * 16 * 128, M * 128, 1024), vp_wg_desc(pb + ks * 32, 16, 1024),
                           ks > 0);
    }
    vp_wg_commit();
    vp_wg_wait0();
    vp_wg_hold(acc0);
    vp_wg_hold(acc1);
    for (int j = 0; j < N / 8; j++)
        for (int e = 0; e < 4; e++) {
            const int row = 16 * warp + g + 8 * (e >> 1), col = 8 * j + 2 * t + (e & 1);
            d0[row * N + col] = acc0[4 * j + e];
            d1[row * N + col] = acc1[4 * j + e];
        }
}

} // namespace

extern "C" int vp_wgmma_layout_check(int mismatches[2], void *stream)
{
    int dev = 0, major = 0;
    VP_TRY(cudaGetDevice(&dev));
    VP_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (!VP_ATTN_HAVE_WGMMA || major != 9)
        return (int)cudaErrorNotSupported;
    cudaStream_t s = (cudaStream_t)stream;
    bf16 ha[M * K], hb[N * K];
    float fa[M * K], fb[N * K];
    unsigned x = 12345;
    for (int i = 0; i < M * K + N * K; i++) {
        x = x * 1103515245u + 12345u;
        const float v = (float)((int)((x >> 16) % 9) - 4); // -4..4: every product and sum exact in fp32
        if (i < M * K)
            fa[i] = v, ha[i] = __float2bfloat16(v);
        else
            fb[i - M * K] = v, hb[i - M * K] = __float2bfloat16(v);
    }
    bf16 *da = nullptr, *db = nullptr;
    float *dd = nullptr;
    int rc = (int)cudaMalloc(&da, sizeof ha);
    rc = rc ? rc : (int)cudaMalloc(&db, sizeof hb);
    rc = rc ? rc : (int)cudaMalloc(&dd, 2 * M * N * sizeof(float));
    rc = rc ? rc : (int)cudaMemcpyAsync(da, ha, sizeof ha, cudaMemcpyHostToDevice, s);
    rc = rc ? rc : (int)cudaMemcpyAsync(db, hb, sizeof hb, cudaMemcpyHostToDevice, s);
    if (!rc) {
        wgmma_check_kernel<<<1, 128, 0, s>>>(da, db, dd, dd + M * N);
        rc = (int)cudaGetLastError();
    }
    float got[2 * M * N];
    rc = rc ? rc : (int)cudaMemcpyAsync(got, dd, sizeof got, cudaMemcpyDeviceToHost, s);
    rc = rc ? rc : (int)cudaStreamSynchronize(s);
    if (!rc) {
        mismatches[0] = mismatches[1] = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float w0 = 0.0f, w1 = 0.0f;
                for (int k = 0; k < K; k++) {
                    w0 += fa[m * K + k] * fb[n * K + k]; // a b^T
                    w1 += fa[k * K + m] * fb[n * K + k]; // a^T b^T: a's row k, column m
                }
                mismatches[0] += got[m * N + n] != w0;
                mismatches[1] += got[M * N + m * N + n] != w1;
            }
    }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    return rc;
}

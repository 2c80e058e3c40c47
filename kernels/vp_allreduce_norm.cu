// Fused allreduce + residual add + RMSNorm (vp_allreduce_norm.h): the one-shot and push allreduces with
// the norm as their epilogue, so the reduced rows never go back to memory before being normalised.
// The cross-rank protocol (barriers, epochs, push lines, timeouts) is vp_allreduce.cu's, from
// vp_ar_device.cuh; only the walk over the data differs: a block owns rows, a thread units of a row.
#include "vp_allreduce_norm.h"
#include "vp_ar_device.cuh"

namespace {

// Load `n` (<= 8) bf16 of local memory at e0 as floats (VEC: one 16-byte load; pointer aligned).
template <bool VEC>
__device__ __forceinline__ void load_local(float v[8], const void *buf, long long e0, int n)
{
    const bf16 *p = (const bf16 *)buf + e0;
    if (VEC && n == 8) {
        const bf16x8 x = *reinterpret_cast<const bf16x8 *>(p);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float2 f = __bfloat1622float2(x.h[j]);
            v[2 * j] = f.x;
            v[2 * j + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = j < n ? __bfloat162float(p[j]) : 0.f;
    }
}

// acc (this unit's sum over ranks) + residual -> residual (bf16); returns the unit's sum of squares of
// the stored values.
template <bool VEC>
__device__ __forceinline__ float add_residual(float acc[8], const vp_ar_norm &nm, long long e0, int n)
{
    float r[8];
    load_local<VEC>(r, nm.residual, e0, n);
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        acc[j] = __bfloat162float(__float2bfloat16(acc[j] + r[j]));
        ss += j < n ? acc[j] * acc[j] : 0.f;
    }
    store_unit<VEC>(nm.residual, e0, n, acc);
    return ss;
}

// out = residual x rstd x weight for one unit (the thread re-reads what it stored in the first pass).
template <bool VEC>
__device__ __forceinline__ void normalise(const vp_ar_norm &nm, void *out, long long e0, int c, int n, float rstd)
{
    float r[8], w[8];
    load_local<VEC>(r, nm.residual, e0, n);
    load_local<VEC>(w, nm.weight, c, n);
#pragma unroll
    for (int j = 0; j < 8; j++)
        r[j] *= rstd * w[j];
    store_unit<VEC>(out, e0, n, r);
}

template <bool VEC>
__global__ void __launch_bounds__(VP_AR_THREADS) oneshot_norm_kernel(const vp_ar_args a, const vp_ar_norm nm)
{
    __shared__ float scratch[32];
    unsigned epoch;
    if (!call_start(a, &epoch))
        return;
    const int unit = VEC ? 8 : 1;
    for (int row = blockIdx.x; row < nm.rows; row += gridDim.x) {
        const long long base = (long long)row * nm.width;
        float ss = 0.f;
        for (int c = threadIdx.x * unit; c < nm.width; c += blockDim.x * unit) {
            const int n = nm.width - c < unit ? nm.width - c : unit;
            float acc[8];
            sum_inputs<VEC>(acc, a, base + c, n);
            ss += add_residual<VEC>(acc, nm, base + c, n);
        }
        const float rstd = rsqrtf(vp_block_sum(ss, scratch) / (float)nm.width + nm.eps);
        for (int c = threadIdx.x * unit; c < nm.width; c += blockDim.x * unit)
            normalise<VEC>(nm, a.out, base + c, c, nm.width - c < unit ? nm.width - c : unit, rstd);
    }
    call_finish(a, epoch);
}

// Push with rows: line j of the call is elements [4j, 4j + 4), as in push_kernel, so the landing
// buffers and parities are shared with the plain push; a row holds width / 4 whole lines.
__global__ void __launch_bounds__(VP_AR_THREADS) push_norm_kernel(const vp_ar_args a, const vp_ar_norm nm)
{
    __shared__ float scratch[32];
    unsigned epoch;
    if (!call_begin(a, &epoch))
        return;
    const int parity = (int)(epoch & 1u);
    const u64 tag = (u64)epoch << 32;
    const int per_row = nm.width / 4;
    bool ok = true;
    for (int row = blockIdx.x; row < nm.rows; row += gridDim.x) {
        float ss = 0.f;
        for (int q = threadIdx.x; ok && q < per_row; q += blockDim.x) {
            const long long j = (long long)row * per_row + q, e0 = 4 * j;
            const unsigned short *src = (const unsigned short *)a.in[a.rank] + e0;
            const unsigned d0 = (unsigned)src[0] | (unsigned)src[1] << 16;
            const unsigned d1 = (unsigned)src[2] | (unsigned)src[3] << 16;
            const u64 w0 = tag | d0, w1 = tag | d1;
            for (int k = 1; k < a.world; k++)
                st_volatile_v2u64(landing(a, (a.rank + k) % a.world, parity, a.rank, j), w0, w1);
            float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
            for (int r = 0; r < a.world && ok; r++) { // fixed order: bit-identical on every rank
                u64 g0 = w0, g1 = w1;
                if (r != a.rank)
                    ok = wait_line(a, landing(a, a.rank, parity, r, j), epoch, r, j, &g0, &g1);
                add_word(acc, (unsigned)g0);
                add_word(acc + 2, (unsigned)g1);
            }
            if (ok)
                ss += add_residual<false>(acc, nm, e0, 4);
        }
        // Every thread reaches the block sum (it synchronises); a failed wait ends the call after it.
        const float rstd = rsqrtf(vp_block_sum(ss, scratch) / (float)nm.width + nm.eps);
        if (__syncthreads_or(!ok))
            break;
        for (int q = threadIdx.x; q < per_row; q += blockDim.x) {
            const long long e0 = 4 * ((long long)row * per_row + q);
            normalise<false>(nm, a.out, e0, 4 * q, 4, rstd);
        }
    }
    call_end(a, epoch);
}

bool norm_valid(const vp_ar_args *a, const vp_ar_norm *nm)
{
    if (!a || !nm || a->world < 1 || a->world > VP_AR_MAX_RANKS || a->rank < 0 || a->rank >= a->world ||
        !a->error || !a->out || !nm->residual || !nm->weight || nm->rows < 1 || nm->width < 1 ||
        (long long)nm->rows * nm->width != a->count)
        return false;
    for (int r = 0; r < a->world; r++)
        if (!a->signal[r])
            return false;
    return a->in[a->rank] != NULL;
}

} // namespace

extern "C" int vp_ar_blocks_norm(int rows) { return rows < 1 ? 1 : rows > VP_AR_MAX_BLOCKS ? VP_AR_MAX_BLOCKS : rows; }

extern "C" int vp_allreduce_norm_oneshot(const vp_ar_args *a, const vp_ar_norm *nm, void *stream)
{
    if (!norm_valid(a, nm))
        return (int)cudaErrorInvalidValue;
    // The vector path needs 8-element units inside a row and every 16-byte load aligned; the inputs are
    // the same registered buffers on every rank, so every rank takes the same path.
    bool vec = nm->width % 8 == 0 && vp_aligned16(nm->residual) && vp_aligned16(nm->weight);
    for (int r = 0; r < a->world; r++) {
        if (!a->in[r])
            return (int)cudaErrorInvalidValue;
        vec = vec && vp_aligned16(a->in[r]);
    }
    const dim3 grid(vp_ar_blocks_norm(nm->rows));
    cudaStream_t s = (cudaStream_t)stream;
    if (vec)
        oneshot_norm_kernel<true><<<grid, VP_AR_THREADS, 0, s>>>(*a, *nm);
    else
        oneshot_norm_kernel<false><<<grid, VP_AR_THREADS, 0, s>>>(*a, *nm);
    return (int)cudaGetLastError();
}

extern "C" int vp_allreduce_norm_push(const vp_ar_args *a, const vp_ar_norm *nm, void *stream)
{
    if (!norm_valid(a, nm) || nm->width % 4 != 0 || a->push_lines < (a->count + 3) / 4)
        return (int)cudaErrorInvalidValue;
    push_norm_kernel<<<vp_ar_blocks_norm(nm->rows), VP_AR_THREADS, 0, (cudaStream_t)stream>>>(*a, *nm);
    return (int)cudaGetLastError();
}

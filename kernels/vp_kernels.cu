// Small memory-bound kernels of the replay: delay, rmsnorm, silu_mul, axpby, embedding.
// bf16 storage, fp32 arithmetic. Every kernel has a 16-byte vectorised path (the one the default shapes
// take) and a scalar path for odd sizes or misaligned pointers, so any shape is correct.
#include "vp_kernels.h"
#include "vp_cuda.cuh"

// ------------------------------------------------------------------------------------------ delay

// Spin for `ns` nanoseconds of GPU time: stands in for a collective whose duration comes from the
// analytic model (backend `model`). Bounded by construction: it ends after `ns` of globaltimer.
__global__ void vp_delay_kernel(unsigned long long ns)
{
    unsigned long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (;;) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start >= ns)
            break;
    }
}

extern "C" int vp_launch_delay(unsigned long long ns, void *stream)
{
    vp_delay_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
    return (int)cudaGetLastError();
}

// ---------------------------------------------------------------------------------------- rmsnorm

namespace {

// in, out [rows][cols], weight [cols]. grid = rows (one block per row), block = 256.
// The row is read twice: the second pass hits L1/L2 (a 7168-wide bf16 row is 14 KB), so DRAM sees
// one read of in and weight and one write of out.
template <bool VEC>
__global__ void rmsnorm_kernel(bf16 *__restrict__ out, const bf16 *__restrict__ in, const bf16 *__restrict__ weight,
                               int cols, float eps)
{
    __shared__ float scratch[32];
    const bf16 *x = in + (size_t)blockIdx.x * cols;
    bf16 *y = out + (size_t)blockIdx.x * cols;

    float ss = 0.0f;
    if (VEC) {
        for (int c = threadIdx.x * 8; c < cols; c += blockDim.x * 8) {
            bf16x8 v = *reinterpret_cast<const bf16x8 *>(x + c);
            for (int j = 0; j < 4; j++) {
                float2 f = __bfloat1622float2(v.h[j]);
                ss += f.x * f.x + f.y * f.y;
            }
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            float f = __bfloat162float(x[c]);
            ss += f * f;
        }
    }
    const float rstd = rsqrtf(vp_block_sum(ss, scratch) / (float)cols + eps);

    if (VEC) {
        for (int c = threadIdx.x * 8; c < cols; c += blockDim.x * 8) {
            bf16x8 v = *reinterpret_cast<const bf16x8 *>(x + c);
            bf16x8 w = *reinterpret_cast<const bf16x8 *>(weight + c);
            bf16x8 o;
            for (int j = 0; j < 4; j++) {
                float2 f = __bfloat1622float2(v.h[j]), g = __bfloat1622float2(w.h[j]);
                o.h[j] = __floats2bfloat162_rn(f.x * rstd * g.x, f.y * rstd * g.y);
            }
            *reinterpret_cast<bf16x8 *>(y + c) = o;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            y[c] = __float2bfloat16(__bfloat162float(x[c]) * rstd * __bfloat162float(weight[c]));
    }
}

} // namespace

extern "C" int vp_rmsnorm(void *out, const void *in, const void *weight, int rows, int cols, float eps, void *stream)
{
    if (rows < 0 || cols < 0 || (rows > 0 && cols > 0 && (!out || !in || !weight)))
        return (int)cudaErrorInvalidValue;
    if (rows == 0 || cols == 0)
        return 0;
    const bool vec = cols % 8 == 0 && vp_aligned16(out) && vp_aligned16(in) && vp_aligned16(weight);
    cudaStream_t s = (cudaStream_t)stream;
    if (vec)
        rmsnorm_kernel<true><<<rows, 256, 0, s>>>((bf16 *)out, (const bf16 *)in, (const bf16 *)weight, cols, eps);
    else
        rmsnorm_kernel<false><<<rows, 256, 0, s>>>((bf16 *)out, (const bf16 *)in, (const bf16 *)weight, cols, eps);
    return (int)cudaGetLastError();
}

// ------------------------------------------------------------------------------- residual rmsnorm

namespace {

// allreduce_norm without a fused kernel: residual += x, then x = RMSNorm(residual) x weight. grid = rows,
// block = 256. The residual is rounded to bf16 when stored and the norm uses the stored values, as the
// fused kernels (vp_allreduce_norm.cu) do; each thread re-reads only what it stored itself.
template <bool VEC>
__global__ void residual_rmsnorm_kernel(bf16 *__restrict__ x, bf16 *__restrict__ residual,
                                        const bf16 *__restrict__ weight, int cols, float eps)
{
    __shared__ float scratch[32];
    bf16 *v = x + (size_t)blockIdx.x * cols, *h = residual + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    if (VEC) {
        for (int c = threadIdx.x * 8; c < cols; c += blockDim.x * 8) {
            bf16x8 a = *reinterpret_cast<const bf16x8 *>(v + c), b = *reinterpret_cast<const bf16x8 *>(h + c);
            for (int j = 0; j < 4; j++) {
                const float2 f = __bfloat1622float2(a.h[j]), g = __bfloat1622float2(b.h[j]);
                b.h[j] = __floats2bfloat162_rn(f.x + g.x, f.y + g.y);
                const float2 r = __bfloat1622float2(b.h[j]);
                ss += r.x * r.x + r.y * r.y;
            }
            *reinterpret_cast<bf16x8 *>(h + c) = b;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            const bf16 r = __float2bfloat16(__bfloat162float(v[c]) + __bfloat162float(h[c]));
            h[c] = r;
            ss += __bfloat162float(r) * __bfloat162float(r);
        }
    }
    const float rstd = rsqrtf(vp_block_sum(ss, scratch) / (float)cols + eps);
    if (VEC) {
        for (int c = threadIdx.x * 8; c < cols; c += blockDim.x * 8) {
            const bf16x8 b = *reinterpret_cast<const bf16x8 *>(h + c);
            const bf16x8 w = *reinterpret_cast<const bf16x8 *>(weight + c);
            bf16x8 o;
            for (int j = 0; j < 4; j++) {
                const float2 f = __bfloat1622float2(b.h[j]), g = __bfloat1622float2(w.h[j]);
                o.h[j] = __floats2bfloat162_rn(f.x * rstd * g.x, f.y * rstd * g.y);
            }
            *reinterpret_cast<bf16x8 *>(v + c) = o;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            v[c] = __float2bfloat16(__bfloat162float(h[c]) * rstd * __bfloat162float(weight[c]));
    }
}

} // namespace

extern "C" int vp_residual_rmsnorm(void *x, void *residual, const void *weight, int rows, int cols, float eps,
                                   void *stream)
{
    if (rows < 0 || cols < 0 || (rows > 0 && cols > 0 && (!x || !residual || !weight)))
        return (int)cudaErrorInvalidValue;
    if (rows == 0 || cols == 0)
        return 0;
    const bool vec = cols % 8 == 0 && vp_aligned16(x) && vp_aligned16(residual) && vp_aligned16(weight);
    cudaStream_t s = (cudaStream_t)stream;
    bf16 *xs = (bf16 *)x, *res = (bf16 *)residual;
    const bf16 *w = (const bf16 *)weight;
    if (vec)
        residual_rmsnorm_kernel<true><<<rows, 256, 0, s>>>(xs, res, w, cols, eps);
    else
        residual_rmsnorm_kernel<false><<<rows, 256, 0, s>>>(xs, res, w, cols, eps);
    return (int)cudaGetLastError();
}

// --------------------------------------------------------------------------------------- silu_mul

namespace {

__device__ __forceinline__ float silu(float g)
{
    return g / (1.0f + expf(-g));
}

// x [rows][2 * cols] (gate | up), out [rows][cols]. Grid-stride over output elements (VEC: groups of 8).
template <bool VEC>
__global__ void silu_mul_kernel(bf16 *__restrict__ out, const bf16 *__restrict__ x, int rows, int cols)
{
    const int per_row = VEC ? cols / 8 : cols;
    const long long n = (long long)rows * per_row;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const long long r = i / per_row;
        const int c = (int)(i % per_row) * (VEC ? 8 : 1);
        const bf16 *gate = x + r * 2 * cols + c, *up = gate + cols;
        if (VEC) {
            bf16x8 g = *reinterpret_cast<const bf16x8 *>(gate), u = *reinterpret_cast<const bf16x8 *>(up), o;
            for (int j = 0; j < 4; j++) {
                float2 gf = __bfloat1622float2(g.h[j]), uf = __bfloat1622float2(u.h[j]);
                o.h[j] = __floats2bfloat162_rn(silu(gf.x) * uf.x, silu(gf.y) * uf.y);
            }
            *reinterpret_cast<bf16x8 *>(out + r * cols + c) = o;
        } else {
            out[r * cols + c] = __float2bfloat16(silu(__bfloat162float(*gate)) * __bfloat162float(*up));
        }
    }
}

} // namespace

extern "C" int vp_silu_mul(void *out, const void *x, int rows, int cols, void *stream)
{
    if (rows < 0 || cols < 0 || (rows > 0 && cols > 0 && (!out || !x)))
        return (int)cudaErrorInvalidValue;
    if (rows == 0 || cols == 0)
        return 0;
    const bool vec = cols % 8 == 0 && vp_aligned16(out) && vp_aligned16(x);
    const long long items = (long long)rows * (vec ? cols / 8 : cols);
    cudaStream_t s = (cudaStream_t)stream;
    if (vec)
        silu_mul_kernel<true><<<vp_grid_for(items, 256), 256, 0, s>>>((bf16 *)out, (const bf16 *)x, rows, cols);
    else
        silu_mul_kernel<false><<<vp_grid_for(items, 256), 256, 0, s>>>((bf16 *)out, (const bf16 *)x, rows, cols);
    return (int)cudaGetLastError();
}

// ------------------------------------------------------------------------------------------ axpby

namespace {

// out[i] = alpha * in[i] + beta * out[i]. With beta == 0, out is not read (BLAS convention), so a
// poisoned or uninitialised out cannot leak NaN into the result and the op moves 2 bytes/element less.
template <bool VEC, bool READ_OUT>
__global__ void axpby_kernel(bf16 *__restrict__ out, const bf16 *__restrict__ in, long long n, float alpha, float beta)
{
    const long long items = VEC ? n / 8 : n;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < items; i += (long long)gridDim.x * blockDim.x) {
        if (VEC) {
            bf16x8 a = reinterpret_cast<const bf16x8 *>(in)[i], b, o;
            if (READ_OUT)
                b = reinterpret_cast<const bf16x8 *>(out)[i];
            for (int j = 0; j < 4; j++) {
                float2 af = __bfloat1622float2(a.h[j]);
                float2 bf = READ_OUT ? __bfloat1622float2(b.h[j]) : make_float2(0.0f, 0.0f);
                o.h[j] = __floats2bfloat162_rn(af.x * alpha + bf.x * beta, af.y * alpha + bf.y * beta);
            }
            reinterpret_cast<bf16x8 *>(out)[i] = o;
        } else {
            float o = __bfloat162float(in[i]) * alpha;
            if (READ_OUT)
                o += __bfloat162float(out[i]) * beta;
            out[i] = __float2bfloat16(o);
        }
    }
}

} // namespace

extern "C" int vp_axpby(void *out, const void *in, long long n, float alpha, float beta, void *stream)
{
    if (n < 0 || (n > 0 && (!out || !in)))
        return (int)cudaErrorInvalidValue;
    if (n == 0)
        return 0;
    const bool vec = n % 8 == 0 && vp_aligned16(out) && vp_aligned16(in);
    const bool read_out = beta != 0.0f;
    const unsigned grid = vp_grid_for(vec ? n / 8 : n, 256);
    cudaStream_t s = (cudaStream_t)stream;
    bf16 *o = (bf16 *)out;
    const bf16 *x = (const bf16 *)in;
    if (vec && read_out)
        axpby_kernel<true, true><<<grid, 256, 0, s>>>(o, x, n, alpha, beta);
    else if (vec)
        axpby_kernel<true, false><<<grid, 256, 0, s>>>(o, x, n, alpha, beta);
    else if (read_out)
        axpby_kernel<false, true><<<grid, 256, 0, s>>>(o, x, n, alpha, beta);
    else
        axpby_kernel<false, false><<<grid, 256, 0, s>>>(o, x, n, alpha, beta);
    return (int)cudaGetLastError();
}

// -------------------------------------------------------------------------------------- embedding

namespace {

// table [rows_in_shard][cols], ids [rows], out [rows][cols]. grid = rows, block = 128.
// Ids outside this rank's shard give a zero row: the vocab-parallel allreduce then sums the one rank
// that owns the id with zeros from the others.
template <bool VEC>
__global__ void embedding_kernel(bf16 *__restrict__ out, const bf16 *__restrict__ table, const int *__restrict__ ids,
                                 int cols, int vocab_lo, int rows_in_shard)
{
    const long long local = (long long)ids[blockIdx.x] - vocab_lo;
    const bool hit = local >= 0 && local < rows_in_shard;
    const bf16 *src = table + (hit ? local : 0) * cols;
    bf16 *dst = out + (size_t)blockIdx.x * cols;
    if (VEC) {
        for (int c = threadIdx.x * 8; c < cols; c += blockDim.x * 8) {
            bf16x8 v;
            if (hit) {
                v = *reinterpret_cast<const bf16x8 *>(src + c);
            } else {
                for (int j = 0; j < 4; j++)
                    v.h[j] = __floats2bfloat162_rn(0.0f, 0.0f);
            }
            *reinterpret_cast<bf16x8 *>(dst + c) = v;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            dst[c] = hit ? src[c] : __float2bfloat16(0.0f);
    }
}

} // namespace

extern "C" int vp_embedding(void *out, const void *table, const int *ids, int rows, int cols, int vocab_lo,
                            int rows_in_shard, void *stream)
{
    if (rows < 0 || cols < 0 || rows_in_shard < 0 || (rows > 0 && cols > 0 && (!out || !ids)) ||
        (rows_in_shard > 0 && !table))
        return (int)cudaErrorInvalidValue;
    if (rows == 0 || cols == 0)
        return 0;
    const bool vec = cols % 8 == 0 && vp_aligned16(out) && vp_aligned16(table);
    cudaStream_t s = (cudaStream_t)stream;
    if (vec)
        embedding_kernel<true><<<rows, 128, 0, s>>>((bf16 *)out, (const bf16 *)table, ids, cols, vocab_lo, rows_in_shard);
    else
        embedding_kernel<false><<<rows, 128, 0, s>>>((bf16 *)out, (const bf16 *)table, ids, cols, vocab_lo, rows_in_shard);
    return (int)cudaGetLastError();
}

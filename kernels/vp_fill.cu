// Test data and collective checks: fill_pattern / fill_poison / fill_random and check_collective.
// All grid-stride over 64-bit indices, since buffers above 2^31 elements are plausible for weights.
#include "vp_kernels.h"
#include "vp_cuda.cuh"
#include "vp_pattern.h"

namespace {

// Bit pattern of the poison: a quiet NaN with a non-default payload, so it is recognisable in a dump
// and never equal to any value (NaN != NaN), which is what makes unwritten elements fail the check.
#define VP_POISON_BITS 0x7fc1

// "No bad element yet": memset byte 0x7f gives 0x7f7f7f7f7f7f7f7f, larger than any index, so
// atomicMin keeps the smallest bad index; the finish kernel turns the sentinel into -1.
#define VP_NO_BAD 0x7f7f7f7f7f7f7f7fLL

__global__ void fill_pattern_kernel(bf16 *buf, long long n, int rank, int salt)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        buf[i] = __float2bfloat16(vp_pattern_value(rank, i, salt));
}

__global__ void fill_poison_kernel(bf16 *buf, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        buf[i] = __ushort_as_bfloat16((unsigned short)VP_POISON_BITS);
}

// splitmix64 (Steele, Lea, Flood 2014): a counter-based hash, so element i depends only on (seed, i)
// and the result is independent of the launch configuration.
__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

__global__ void fill_random_kernel(bf16 *buf, long long n, unsigned long long seed)
{
    const unsigned long long key = splitmix64(seed);
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const unsigned long long h = splitmix64(key ^ (unsigned long long)i);
        const float u = (float)(h >> 40) * (1.0f / 16777216.0f); // 24 bits: exact in fp32, in [0, 1)
        // Round toward zero so that values just below 1 cannot round up to 1.0 in bf16: keeps [-1, 1).
        buf[i] = __float2bfloat16_rz(2.0f * u - 1.0f);
    }
}

} // namespace

extern "C" int vp_fill_pattern(void *buf, long long n, int rank, int salt, void *stream)
{
    if (n < 0 || (n > 0 && !buf))
        return (int)cudaErrorInvalidValue;
    if (n == 0)
        return 0;
    fill_pattern_kernel<<<vp_grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>((bf16 *)buf, n, rank, salt);
    return (int)cudaGetLastError();
}

extern "C" int vp_fill_poison(void *buf, long long n, void *stream)
{
    if (n < 0 || (n > 0 && !buf))
        return (int)cudaErrorInvalidValue;
    if (n == 0)
        return 0;
    fill_poison_kernel<<<vp_grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>((bf16 *)buf, n);
    return (int)cudaGetLastError();
}

extern "C" int vp_fill_random(void *buf, long long n, unsigned long long seed, void *stream)
{
    if (n < 0 || (n > 0 && !buf))
        return (int)cudaErrorInvalidValue;
    if (n == 0)
        return 0;
    fill_random_kernel<<<vp_grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>((bf16 *)buf, n, seed);
    return (int)cudaGetLastError();
}

namespace {

// Reads every 16 bytes of buf once and writes nothing unless the XOR of all of them is a value no
// buffer of random fills produces (so the compiler cannot drop the loads).
__global__ void read_sweep_kernel(const uint4 *buf, long long n16, unsigned *sink)
{
    unsigned x = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x) {
        const uint4 v = buf[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u)
        *sink = x;
}

} // namespace

extern "C" int vp_read_sweep(const void *buf, size_t bytes, void *sink, void *stream)
{
    if (!buf || !sink || bytes % 16 || (reinterpret_cast<uintptr_t>(buf) & 15))
        return (int)cudaErrorInvalidValue;
    int dev, sms;
    VP_TRY(cudaGetDevice(&dev));
    VP_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    read_sweep_kernel<<<sms * 8, 256, 0, (cudaStream_t)stream>>>((const uint4 *)buf, (long long)(bytes / 16),
                                                                  (unsigned *)sink);
    return (int)cudaGetLastError();
}

namespace {

// Expected value of element i after the collective: the sum over ranks of their patterns (allreduce),
// or segment i / seg of rank i / seg's pattern at i % seg (all-gather of seg elements per rank).
// Exact in fp32 and bf16 (|sum| <= 8 * ranks), so the comparison is equality, not a tolerance.
__global__ void check_collective_kernel(const bf16 *buf, long long n, int ranks, int salt, long long seg,
                                        long long *first_bad)
{
    long long bad = VP_NO_BAD;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float want;
        if (seg > 0) {
            want = vp_pattern_value((int)(i / seg), i % seg, salt);
        } else {
            want = 0.0f;
            for (int r = 0; r < ranks; r++)
                want += vp_pattern_value(r, i, salt);
        }
        const float got = __bfloat162float(buf[i]);
        if (!(got == want)) { // NaN (poison) compares unequal
            bad = i;
            break; // later i of this thread are larger
        }
    }
    // One atomic per warp rather than per bad element: a fully wrong buffer stays cheap to check.
    for (int o = 16; o > 0; o >>= 1) {
        long long other = __shfl_xor_sync(0xffffffffu, bad, o);
        bad = other < bad ? other : bad;
    }
    if ((threadIdx.x & 31) == 0 && bad != VP_NO_BAD)
        atomicMin((long long *)first_bad, bad);
}

__global__ void check_finish_kernel(long long *first_bad)
{
    if (*first_bad == VP_NO_BAD)
        *first_bad = -1;
}

} // namespace

extern "C" int vp_check_collective(const void *buf, long long n, int ranks, int salt, int gather,
                                   long long *first_bad_dev, void *stream)
{
    if (n < 0 || ranks < 1 || !first_bad_dev || (n > 0 && !buf) || (gather && n % ranks != 0))
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    // Three graph-capturable steps: reset, compare, sentinel -> -1.
    VP_TRY(cudaMemsetAsync(first_bad_dev, 0x7f, sizeof(long long), s));
    if (n > 0) {
        const long long seg = gather ? n / ranks : 0;
        check_collective_kernel<<<vp_grid_for(n, 256), 256, 0, s>>>((const bf16 *)buf, n, ranks, salt, seg,
                                                                    first_bad_dev);
        VP_TRY(cudaGetLastError());
    }
    check_finish_kernel<<<1, 1, 0, s>>>(first_bad_dev);
    return (int)cudaGetLastError();
}

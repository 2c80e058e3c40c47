/* The deterministic test pattern shared by the CUDA kernels, the CPU device and the checks. */
#ifndef VPSIM_VP_PATTERN_H
#define VPSIM_VP_PATTERN_H

#ifdef __CUDACC__
#define VP_HD __host__ __device__
#else
#define VP_HD
#endif

/* Small integers in [-8, 8]: sums over up to 16 ranks stay exact in bf16 (|sum| <= 128). */
static inline VP_HD float vp_pattern_value(int rank, long long i, int salt)
{
    return (float)((int)((i * 7 + (long long)salt * 13 + (long long)rank * 5) % 17) - 8);
}

#endif

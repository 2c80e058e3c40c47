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

/* allreduce_norm's other operands (the --check reference and both devices use these). The residual is
 * replicated under TP, so its fill is the same on every rank; both stay exact in bf16. */
static inline VP_HD float vp_residual_value(long long i, int salt)
{
    return (float)((int)((i * 5 + (long long)salt * 3) % 9) - 4);
}
static inline VP_HD float vp_norm_weight_value(long long j) { return 0.5f + (float)(j % 8) * 0.125f; }

#endif

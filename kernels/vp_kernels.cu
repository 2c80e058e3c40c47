// Small CUDA kernels shared by the executors. Placeholder until the replay issue fills kernels/.
#include "vp_kernels.h"

#include <cuda_runtime.h>

// Spin for `ns` nanoseconds of GPU time: stands in for a collective whose duration comes from the
// analytic model (backend `model`).
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

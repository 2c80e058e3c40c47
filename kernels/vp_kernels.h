/* C interface of kernels/vp_kernels.cu. */
#ifndef VPSIM_VP_KERNELS_H
#define VPSIM_VP_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueue a kernel that spins for `ns` nanoseconds on `stream` (a cudaStream_t). Returns a cudaError_t. */
int vp_launch_delay(unsigned long long ns, void *stream);

#ifdef __cplusplus
}
#endif

#endif

/* Checked CUDA calls for the host files that use the CUDA runtime (dev_cuda.c, comm_*.c): on error,
 * report file:line, rank and host, then abort every rank (dist_fail). Included only by files in
 * the Makefile's CUDA_HOST_SRCS. */
#ifndef VPSIM_DIST_CUDA_H
#define VPSIM_DIST_CUDA_H

#include "dist.h"

#include <cuda_runtime_api.h>

#define VP_CUDA(call)                                                                                                   \
    do {                                                                                                                \
        cudaError_t vp_e_ = (call);                                                                                     \
        if (vp_e_ != cudaSuccess)                                                                                       \
            dist_fail(__FILE__, __LINE__, #call, cudaGetErrorString(vp_e_));                                       \
    } while (0)

/* The kernels' C launchers return a cudaError_t as int. */
#define VP_KERNEL(call)                                                                                                 \
    do {                                                                                                                \
        int vp_e_ = (call);                                                                                             \
        if (vp_e_ != 0)                                                                                                 \
            dist_fail(__FILE__, __LINE__, #call, cudaGetErrorString((cudaError_t)vp_e_));                          \
    } while (0)

#endif

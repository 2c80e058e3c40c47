/* Which devices this build has: the one place that knows whether the CUDA device was built in. */
#include "exec.h"

#include <stdio.h>

extern const exec_device exec_device_cpu;
#if VPSIM_HAVE_CUDA
extern const exec_device exec_device_cuda;
#endif

const exec_device *exec_find_device(int device, char *why, size_t len)
{
    switch (device) {
    case CFG_DEVICE_CPU: return &exec_device_cpu;
    case CFG_DEVICE_CUDA:
#if VPSIM_HAVE_CUDA
        return &exec_device_cuda;
#else
        snprintf(why, len, "device cuda: this build has no CUDA (built with CUDA=0); use --device cpu");
        return NULL;
#endif
    default: snprintf(why, len, "unknown device %d", device); return NULL;
    }
}

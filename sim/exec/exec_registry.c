/* Which devices and comm backends this build has: the one place that knows whether CUDA was built in. */
#include "exec.h"

#include <stdio.h>

extern const exec_device exec_device_cpu;
extern const comm_backend comm_backend_mpi, comm_backend_none, comm_backend_model;
#if VPSIM_HAVE_CUDA
extern const exec_device exec_device_cuda;
extern const comm_backend comm_backend_nccl;
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

const comm_backend *exec_find_backend(int backend, char *why, size_t len)
{
    switch (backend) {
    case CFG_BACKEND_MPI: return &comm_backend_mpi;
    case CFG_BACKEND_NONE: return &comm_backend_none;
    case CFG_BACKEND_MODEL: return &comm_backend_model;
    case CFG_BACKEND_NCCL:
#if VPSIM_HAVE_CUDA
        return &comm_backend_nccl;
#else
        snprintf(why, len, "backend nccl: this build has no CUDA/NCCL (built with CUDA=0)");
        return NULL;
#endif
    default:
        snprintf(why, len, "backend %s is modelled (vpsim model) but has no replay implementation yet; "
                           "replay backends: nccl, mpi, none, model",
                 backend >= 0 && backend < CFG_BACKEND_COUNT ? cfg_backend_names[backend] : "?");
        return NULL;
    }
}

/* Which comm backends this build has: the one place that knows whether CUDA and NCCL were built in. */
#include "comm.h"

#include <stdarg.h>
#include <stdio.h>

extern const comm_backend comm_backend_mpi, comm_backend_none, comm_backend_model;
#if VPSIM_HAVE_CUDA
extern const comm_backend comm_backend_nccl, comm_backend_nccl_symm;
extern const comm_backend comm_backend_oneshot, comm_backend_twoshot, comm_backend_push;
#endif
const comm_backend *comm_find_backend(int backend, char *why, size_t len)
{
    switch (backend) {
    case CFG_BACKEND_MPI: return &comm_backend_mpi;
    case CFG_BACKEND_NONE: return &comm_backend_none;
    case CFG_BACKEND_MODEL: return &comm_backend_model;
#if VPSIM_HAVE_CUDA
    case CFG_BACKEND_NCCL: return &comm_backend_nccl;
    case CFG_BACKEND_NCCL_SYMM: return &comm_backend_nccl_symm;
    case CFG_BACKEND_ONESHOT: return &comm_backend_oneshot;
    case CFG_BACKEND_TWOSHOT: return &comm_backend_twoshot;
    case CFG_BACKEND_PUSH: return &comm_backend_push;
#else
    case CFG_BACKEND_NCCL:
    case CFG_BACKEND_NCCL_SYMM:
    case CFG_BACKEND_ONESHOT:
    case CFG_BACKEND_TWOSHOT:
    case CFG_BACKEND_PUSH:
        snprintf(why, len, "backend %s: this build has no CUDA/NCCL (built with CUDA=0); use --backend mpi",
                 cfg_backend_names[backend]);
        return NULL;
#endif
    default:
        snprintf(why, len, "backend %s has no replay implementation; replay backends: nccl, nccl-symm, oneshot, "
                           "twoshot, push, mpi, none, model",
                 backend >= 0 && backend < CFG_BACKEND_COUNT ? cfg_backend_names[backend] : "?");
        return NULL;
    }
}

void comm_env_set(comm_ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    util_env_vset(c->env, c->n_env, key, fmt, ap);
    va_end(ap);
}

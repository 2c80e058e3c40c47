/* Shared by the NCCL backends (comm_nccl.c, comm_nccl_symm.c). */
#ifndef VPSIM_EXEC_NCCL_H
#define VPSIM_EXEC_NCCL_H

#include "exec.h"

#include <nccl.h>

#define VP_NCCL(call)                                                                                                   \
    do {                                                                                                                \
        ncclResult_t vp_r_ = (call);                                                                                    \
        if (vp_r_ != ncclSuccess)                                                                                       \
            exec_dist_fail(__FILE__, __LINE__, #call, ncclGetErrorString(vp_r_));                                       \
    } while (0)

/* Record the NCCL version and every NCCL_* variable (they pick protocol, algorithm and transport). */
void comm_nccl_describe_env(exec_ctx *x);

#endif

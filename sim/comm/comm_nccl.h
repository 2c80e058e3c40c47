/* Shared by the NCCL backends (comm_nccl.c, comm_nccl_symm.c). */
#ifndef VPSIM_COMM_NCCL_H
#define VPSIM_COMM_NCCL_H

#include "comm.h"

#include <nccl.h>

#define VP_NCCL(call)                                                                                                   \
    do {                                                                                                                \
        ncclResult_t vp_r_ = (call);                                                                                    \
        if (vp_r_ != ncclSuccess)                                                                                       \
            dist_fail(__FILE__, __LINE__, #call, ncclGetErrorString(vp_r_));                                       \
    } while (0)

/* Record the NCCL version and every NCCL_* variable (they pick protocol, algorithm and transport). */
void comm_nccl_describe_env(comm_ctx *x);

#endif

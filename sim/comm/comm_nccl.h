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

/* Record the NCCL version, every NCCL_* variable (they pick protocol, algorithm and transport) and what
 * the scenario's NCCL tuning set. */
void comm_nccl_describe_env(comm_ctx *x, const char *tuning_note);

/* Whether this NCCL can take the scenario's tuning (x->nccl_tuning): 0, or -1 with a reason. Local. */
int comm_nccl_tuning_check(comm_ctx *x, char *why, size_t len);

/* Set the tuning's NCCL_* variables (cfg_nccl_env) in this process; call before ncclCommInitRank, which
 * is when NCCL reads them. A value already in the environment is replaced (the scenario is explicit),
 * and a note on rank 0's stderr says so; `note` gets what was set, for the results' nccl_tuning entry
 * (the backend keeps it in its own state: no file global). */
void comm_nccl_tuning_apply(comm_ctx *x, char *note, size_t note_len);

#endif

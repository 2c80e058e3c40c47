/* Which comm backends this build has, generated from CFG_BACKEND_LIST (cfg_lists.h): the one place that
 * knows whether the CUDA backends were built in. */
#include "comm.h"

#include <stdio.h>

/* A backend's table is comm_backend_<key>; those marked CUDA exist only in CUDA builds. */
#define DECLARE(ID, name, key, ...) extern const comm_backend comm_backend_##key;
CFG_BACKEND_LIST(DECLARE)
#undef DECLARE

#define IN_BUILD_HOST(key) &comm_backend_##key
#if VPSIM_HAVE_CUDA
#define IN_BUILD_CUDA(key) &comm_backend_##key
#else
#define IN_BUILD_CUDA(key) NULL
#endif
#define ENTRY(ID, name, key, where, ...) [CFG_BACKEND_##ID] = IN_BUILD_##where(key),
static const comm_backend *const backends[CFG_BACKEND_COUNT] = {CFG_BACKEND_LIST(ENTRY)};
#undef ENTRY

const char *const comm_p2p_names[] = {"direct", "sysmem", NULL};

const comm_backend *comm_find_backend(int backend, char *why, size_t len)
{
    if (backend < 0 || backend >= CFG_BACKEND_COUNT) {
        snprintf(why, len, "unknown backend %d", backend);
        return NULL;
    }
    if (!backends[backend])
        snprintf(why, len, "backend %s: this build has no CUDA/NCCL (built with CUDA=0); use --backend mpi",
                 cfg_backend_names[backend]);
    return backends[backend];
}

bool comm_backend_has(const comm_backend *b, plan_op_kind k)
{
    switch (k) {
    case PLAN_OP_ALLREDUCE: return b->allreduce != NULL;
    case PLAN_OP_ALLGATHER: return b->allgather != NULL;
    case PLAN_OP_REDUCE_SCATTER: return b->reduce_scatter != NULL;
    case PLAN_OP_ALLTOALL: return b->alltoall != NULL;
    case PLAN_OP_ALLREDUCE_NORM: return b->allreduce_norm != NULL;
    default: return plan_op_is_compute(k);
    }
}

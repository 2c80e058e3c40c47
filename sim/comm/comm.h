/* comm: the collective backends behind one table (nccl, nccl-symm, oneshot, twoshot, push, mpi, none,
 * model), and what a backend may use of the process it runs in (comm_ctx).
 *
 * A backend sees the MPI job (dist), the device's collective services through comm_device (its
 * streams, collective buffers, host staging, delays) and its own state; it never sees the executor.
 * The executor (sim/exec) fills a comm_ctx and calls the table; benchmarks go through the same door.
 * Which backends exist in this build is decided in comm_backends.c alone. Adding one: docs/extending.md. */
#ifndef VPSIM_COMM_H
#define VPSIM_COMM_H

#include "../dist/dist.h"
#include "../plan/plan.h"
#include "../util/util_env.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct comm_ctx comm_ctx;

/* How the custom backends (oneshot, twoshot, push) reach their peers' buffers (--p2p): through CUDA IPC
 * mappings of peer GPU memory (direct), or with every buffer a peer touches in pinned host memory mapped
 * into every rank (sysmem: the path of boxes whose "peer access" goes through system memory). Values
 * agree with cfg_p2p's first two (cfg_system.h). Other backends ignore it. */
typedef enum { COMM_P2P_DIRECT, COMM_P2P_SYSMEM, COMM_P2P_COUNT } comm_p2p;
extern const char *const comm_p2p_names[]; /* "direct", "sysmem" */

/* What the device a backend runs on provides to it. Every function takes the backend's comm_ctx. */
typedef struct comm_device {
    const char *name;  /* "cuda", "cpu" */
    size_t elem_bytes; /* activation element size (bf16 = 2, CPU fp32 = 4) */
    void *(*stream)(comm_ctx *c, int which); /* cudaStream_t: 0 main, 1 side */
    /* The device's collective buffers (fixed addresses, registered once by IPC backends). */
    void *(*comm_send)(comm_ctx *c);
    void *(*comm_recv)(comm_ctx *c);
    /* Host staging: copy device<->host as floats (synchronous on the main stream). */
    void (*to_host_float)(comm_ctx *c, float *dst, const void *src, long long n);
    void (*from_host_float)(comm_ctx *c, void *dst, const float *src, long long n);
    /* Spin on the main stream for `ns` nanoseconds. */
    void (*delay)(comm_ctx *c, double ns);
    /* allreduce_norm without a fused kernel: after the backend's own allreduce into recv,
     * residual += recv, then recv = RMSNorm(residual) x weight over rows of `width` (eps 1e-6). */
    void (*residual_norm)(comm_ctx *c, void *recv, void *residual, const void *weight, long long rows,
                          long long width);
} comm_device;

struct comm_ctx {
    dist_job dist;
    const comm_device *dev;
    void *state;                  /* the backend's private state */
    long long max_comm_elems;     /* largest collective, elements (all-gather counted whole) */
    const double *collective_us;  /* backend model: modelled duration of every op in flat plan order */
    util_env_item *env;           /* environment facts (the caller's block) */
    int *n_env;
    const cfg_nccl_tuning *nccl_tuning; /* the scenario's `nccl:` section; NULL = NCCL decides */
    int p2p;                            /* comm_p2p (--p2p); read by the custom backends only */
    const void *opts; /* the backend's own options block (a policy's comm_select_opts), NULL: none; owned
                         by the caller, alive as long as the backend is: no per-run state in file globals */
};

/* A comm backend. Every collective moves elements of dev->elem_bytes from send to recv; `count` is what
 * each rank sends (plan_op.count, plan.h, gives every kind's layout):
 *   allreduce       sum of `count` elements;
 *   allgather       `count` per rank, recv holds count x ranks;
 *   reduce_scatter  `count` in, rank r receives block r (count / ranks elements) of the sum;
 *   alltoall        `count` in as ranks blocks; block j goes to rank j, recv block j comes from rank j;
 *   allreduce_norm  sum of `count` = op->m x op->n elements, added into `residual` (in place), then
 *                   recv = RMSNorm(residual) x weight over rows of op->n (eps 1e-6).
 * The last three are optional: NULL means the backend has none, and a plan holding such an op is
 * refused before anything starts (comm_backend_has says which). */
typedef struct comm_backend {
    const char *name;
    bool graph_safe;    /* can be captured in a CUDA graph */
    bool moves_no_data; /* collectives skipped or replaced by delays (none, model): nothing to --check */
    /* 0 when usable on this device and job; else -1 with a reason in why. Collective where it says. */
    int (*supported)(comm_ctx *c, char *why, size_t len);
    void (*init)(comm_ctx *c);
    void (*fini)(comm_ctx *c);
    void (*allreduce)(comm_ctx *c, const plan_op *op, int flat, const void *send, void *recv, long long count);
    void (*allgather)(comm_ctx *c, const plan_op *op, int flat, const void *send, void *recv, long long count);
    void (*reduce_scatter)(comm_ctx *c, const plan_op *op, int flat, const void *send, void *recv, long long count);
    void (*alltoall)(comm_ctx *c, const plan_op *op, int flat, const void *send, void *recv, long long count);
    void (*allreduce_norm)(comm_ctx *c, const plan_op *op, int flat, const void *send, void *recv, void *residual,
                           const void *weight, long long count);
    /* Versions and settings for the results' environment block. */
    void (*describe)(comm_ctx *c);
} comm_backend;

/* Whether backend `b` can replay an op of kind `k` (every compute kind: yes). */
bool comm_backend_has(const comm_backend *b, plan_op_kind k);

/* Record an environment fact in the caller's block (comm_env.c). */
void comm_env_set(comm_ctx *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The backend for a cfg_backend, or NULL with a reason when this build has none (comm_backends.c). */
const comm_backend *comm_find_backend(int cfg_backend, char *why, size_t len);

#endif

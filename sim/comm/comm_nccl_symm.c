/* Backend `nccl-symm`: NCCL on symmetric memory windows — buffers from ncclMemAlloc registered with
 * ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC) on every rank (NCCL 2.27 and newer), which
 * lets NCCL use its symmetric-memory kernels where it supports them.
 *
 * The window functions are looked up at run time (dlsym in the already loaded libnccl), so a binary
 * built against a new nccl.h still starts with an older libnccl and reports this backend unsupported
 * with the version it found, instead of failing to load.
 *
 * The device's collective buffers are cudaMalloc'd, and a window must come from ncclMemAlloc, so each
 * call copies its input into the send window and the result out of the receive window: two device
 * copies per call, included in the measured time and stated in describe(). */
#include "comm_custom.h"
#include "comm.h"
#include "../dist/dist_cuda.h"
#include "comm_nccl.h"

#include "../util/util.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef NCCL_WIN_COLL_SYMMETRIC /* the values in NCCL 2.27+'s nccl.h */
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#endif
#ifndef NCCL_WIN_REQUIRED_ALIGNMENT
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096
#endif


/* ncclWindow_t is a pointer type; void * keeps this file building against headers without it. */
typedef ncclResult_t (*mem_alloc_fn)(void **ptr, size_t size);
typedef ncclResult_t (*mem_free_fn)(void *ptr);
typedef ncclResult_t (*win_register_fn)(ncclComm_t comm, void *buff, size_t size, void **win, int flags);
typedef ncclResult_t (*win_deregister_fn)(ncclComm_t comm, void *win);

typedef struct symm_api {
    mem_alloc_fn mem_alloc;
    mem_free_fn mem_free;
    win_register_fn win_register;
    win_deregister_fn win_deregister;
} symm_api;

typedef struct symm_state {
    symm_api api;
    ncclComm_t comm;
    void *sbuf, *rbuf, *swin, *rwin;
    size_t bytes;
    char tuning_note[512]; /* what comm_nccl_tuning_apply set, for the results */
} symm_state;

static void *sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

static int load_api(symm_api *a)
{
    a->mem_alloc = (mem_alloc_fn)(uintptr_t)sym("ncclMemAlloc");
    a->mem_free = (mem_free_fn)(uintptr_t)sym("ncclMemFree");
    a->win_register = (win_register_fn)(uintptr_t)sym("ncclCommWindowRegister");
    a->win_deregister = (win_deregister_fn)(uintptr_t)sym("ncclCommWindowDeregister");
    return a->mem_alloc && a->mem_free && a->win_register && a->win_deregister ? 0 : -1;
}

static int symm_supported(comm_ctx *x, char *why, size_t len)
{
    char local[256] = "";
    symm_api api;
    int v = 0;
    ncclGetVersion(&v);
    if (strcmp(x->dev->name, "cuda") != 0)
        snprintf(local, sizeof(local), "nccl-symm needs the cuda device (use --backend mpi with --device cpu)");
    else if (load_api(&api))
        snprintf(local, sizeof(local),
                 "the linked NCCL %d.%d.%d has no ncclCommWindowRegister/ncclMemAlloc: symmetric memory windows need "
                 "NCCL 2.27 or newer",
                 v / 10000, (v / 100) % 100, v % 100);
    else
        comm_ranks_share_gpu(x, local, sizeof(local));
    if (!local[0])
        comm_nccl_tuning_check(x, local, sizeof(local));
    snprintf(why, len, "%s", local);
    return dist_agree(&x->dist, local[0] != 0, why, len);
}

static void symm_init(comm_ctx *x)
{
    symm_state *s = util_xcalloc(1, sizeof(*s));
    x->state = s;
    if (load_api(&s->api))
        dist_fail(__FILE__, __LINE__, "nccl-symm", "NCCL symmetric memory functions not found");
    ncclUniqueId id;
    if (x->dist.rank == 0)
        VP_NCCL(ncclGetUniqueId(&id));
    dist_bcast(&id, sizeof(id), 0);
    comm_nccl_tuning_apply(x, s->tuning_note, sizeof(s->tuning_note));
    VP_NCCL(ncclCommInitRank(&s->comm, x->dist.size, id, x->dist.rank));
    /* Same size on every rank (symmetric windows require it), a multiple of the window alignment. */
    size_t need = (size_t)(x->max_comm_elems > 0 ? x->max_comm_elems : 1) * 2;
    s->bytes = (need + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT * NCCL_WIN_REQUIRED_ALIGNMENT;
    VP_NCCL(s->api.mem_alloc(&s->sbuf, s->bytes));
    VP_NCCL(s->api.mem_alloc(&s->rbuf, s->bytes));
    VP_NCCL(s->api.win_register(s->comm, s->sbuf, s->bytes, &s->swin, NCCL_WIN_COLL_SYMMETRIC));
    VP_NCCL(s->api.win_register(s->comm, s->rbuf, s->bytes, &s->rwin, NCCL_WIN_COLL_SYMMETRIC));
}

static void symm_fini(comm_ctx *x)
{
    symm_state *s = x->state;
    if (!s)
        return;
    VP_CUDA(cudaDeviceSynchronize());
    VP_NCCL(s->api.win_deregister(s->comm, s->swin));
    VP_NCCL(s->api.win_deregister(s->comm, s->rwin));
    VP_NCCL(s->api.mem_free(s->sbuf));
    VP_NCCL(s->api.mem_free(s->rbuf));
    ncclCommDestroy(s->comm);
    free(s);
    x->state = NULL;
}

static void copy_in(comm_ctx *x, symm_state *s, const void *src, long long count)
{
    if (src != s->sbuf)
        VP_CUDA(cudaMemcpyAsync(s->sbuf, src, (size_t)count * 2, cudaMemcpyDeviceToDevice, x->dev->stream(x, 0)));
}

static void copy_out(comm_ctx *x, symm_state *s, void *dst, long long count)
{
    if (dst != s->rbuf)
        VP_CUDA(cudaMemcpyAsync(dst, s->rbuf, (size_t)count * 2, cudaMemcpyDeviceToDevice, x->dev->stream(x, 0)));
}

static void symm_allreduce(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    symm_state *s = x->state;
    if (count <= 0)
        return;
    copy_in(x, s, send, count);
    VP_NCCL(ncclAllReduce(s->sbuf, s->rbuf, (size_t)count, ncclBfloat16, ncclSum, s->comm, x->dev->stream(x, 0)));
    copy_out(x, s, recv, count);
}

static void symm_allgather(comm_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    (void)op;
    (void)flat;
    symm_state *s = x->state;
    if (count <= 0)
        return;
    copy_in(x, s, send, count);
    VP_NCCL(ncclAllGather(s->sbuf, s->rbuf, (size_t)count, ncclBfloat16, s->comm, x->dev->stream(x, 0)));
    copy_out(x, s, recv, count * x->dist.size);
}

static void symm_describe(comm_ctx *x)
{
    const symm_state *s = x->state;
    comm_nccl_describe_env(x, s ? s->tuning_note : NULL);
    comm_env_set(x, "comm", "nccl-symm: ncclMemAlloc windows registered with NCCL_WIN_COLL_SYMMETRIC; each call "
                            "copies in and out of the windows (2 device copies, included in the times)");
    comm_env_set(x, "nccl_symm_note", "NCCL picks symmetric kernels only where it supports them; NCCL_DEBUG=INFO "
                                      "shows which algorithm ran");
}

const comm_backend comm_backend_nccl_symm = {
    .name = "nccl-symm",
    .graph_safe = true,
    .supported = symm_supported,
    .init = symm_init,
    .fini = symm_fini,
    .allreduce = symm_allreduce,
    .allgather = symm_allgather,
    .describe = symm_describe,
};

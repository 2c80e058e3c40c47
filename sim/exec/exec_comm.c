/* The executor's one door to the comm backends: every collective of `vpsim run` and of
 * `vpsim bench-allreduce` passes through exec_collective (call count, injected faults, watchdog marks),
 * and every backend is finished through exec_comm_fini (graphs first). */
#include "exec.h"
#include "exec_watch.h"

#include "../config/cfg_schema.h"
#include "../util/util.h"

#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *const exec_fault_names[] = {"none", "kill", "exit", "stall", NULL};

/* MODE:RANK:CALL[:SECONDS], every number a plain decimal (util_parse_ll: no blanks, '+', hex). */
int exec_fault_parse(const char *arg, exec_fault *f, char *why, size_t len)
{
    memset(f, 0, sizeof(*f));
    char *fields[5] = {0};
    int n = 0;
    /* strsep keeps empty fields ("kill::1"), which then fail to parse like any other bad number. */
    char *copy = util_xstrdup(arg), *rest = copy;
    while (rest && n < 5)
        fields[n++] = strsep(&rest, ":");
    long long rank = -1, call = 0, secs = 10;
    const int mode = cfg_enum_index(exec_fault_names, fields[0]);
    const bool ok = (n == 3 || n == 4) && !rest && mode > EXEC_FAULT_NONE && util_parse_ll(fields[1], &rank) == 0 &&
                    rank >= 0 && rank <= 1 << 20 && util_parse_ll(fields[2], &call) == 0 && call >= 1 &&
                    (n == 3 || (util_parse_ll(fields[3], &secs) == 0 && secs >= 0 && secs <= 86400));
    free(copy);
    if (!ok) {
        snprintf(why, len,
                 "--inject-fault '%s': expected MODE:RANK:CALL[:SECONDS] with MODE kill, exit or stall, RANK >= 0, "
                 "CALL >= 1, SECONDS in 0..86400, each a plain decimal",
                 arg);
        return -1;
    }
    *f = (exec_fault){.mode = mode, .rank = (int)rank, .call = call, .stall_s = (int)secs};
    return 0;
}

static void inject(const exec_ctx *x, const exec_fault *f)
{
    fprintf(stderr, "vpsim[rank %d@%s]: --inject-fault %s: before collective call %lld\n", x->dist.rank,
            x->dist.host, exec_fault_names[f->mode], x->calls);
    fflush(stderr);
    switch (f->mode) {
    case EXEC_FAULT_KILL: raise(SIGKILL); break;
    case EXEC_FAULT_EXIT: /* a runtime failure, as the exit codes say: 1, never a status outside 0/1/2 */
        dist_note_exit(1, true);
        _exit(1);
    case EXEC_FAULT_STALL: sleep((unsigned)f->stall_s); break;
    default: break;
    }
}

void exec_collective(exec_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count)
{
    x->calls++;
    exec_watch_op(flat, count * (long long)x->dev->elem_bytes, x->calls);
    const exec_fault *f = &x->opt->fault;
    if (f->mode != EXEC_FAULT_NONE && x->dist.rank == f->rank && x->calls == f->call)
        inject(x, f);
    /* open_run refused plans with kinds the backend lacks (comm_backend_has), so every member called
     * here exists. */
    switch (op->kind) {
    case PLAN_OP_ALLGATHER: x->comm->allgather(&x->cc, op, flat, send, recv, count); break;
    case PLAN_OP_REDUCE_SCATTER: x->comm->reduce_scatter(&x->cc, op, flat, send, recv, count); break;
    case PLAN_OP_ALLTOALL: x->comm->alltoall(&x->cc, op, flat, send, recv, count); break;
    case PLAN_OP_ALLREDUCE_NORM:
        x->comm->allreduce_norm(&x->cc, op, flat, send, recv, x->dev->comm_aux(x, EXEC_AUX_RESIDUAL),
                                x->dev->comm_aux(x, EXEC_AUX_NORM_WEIGHT), count);
        break;
    default: x->comm->allreduce(&x->cc, op, flat, send, recv, count); break;
    }
}

/* The device's services as the backend calls them: back from the embedded comm_ctx to its exec_ctx. */
static exec_ctx *owner(comm_ctx *c) { return (exec_ctx *)((char *)c - offsetof(exec_ctx, cc)); }
static void *svc_stream(comm_ctx *c, int which)
{
    exec_ctx *x = owner(c);
    return x->dev->stream(x, which);
}
static void *svc_send(comm_ctx *c)
{
    exec_ctx *x = owner(c);
    return x->dev->comm_send(x);
}
static void *svc_recv(comm_ctx *c)
{
    exec_ctx *x = owner(c);
    return x->dev->comm_recv(x);
}
static void svc_to_host(comm_ctx *c, float *dst, const void *src, long long n)
{
    exec_ctx *x = owner(c);
    x->dev->to_host_float(x, dst, src, n);
}
static void svc_from_host(comm_ctx *c, void *dst, const float *src, long long n)
{
    exec_ctx *x = owner(c);
    x->dev->from_host_float(x, dst, src, n);
}
static void svc_delay(comm_ctx *c, double ns)
{
    exec_ctx *x = owner(c);
    x->dev->delay(x, ns);
}

static void svc_residual_norm(comm_ctx *c, void *recv, void *residual, const void *weight, long long rows,
                              long long width)
{
    exec_ctx *x = owner(c);
    x->dev->residual_norm(x, recv, residual, weight, rows, width);
}

void exec_comm_bind(exec_ctx *x)
{
    x->cdev = (comm_device){
        .name = x->dev->name,
        .elem_bytes = x->dev->elem_bytes,
        .stream = svc_stream,
        .comm_send = svc_send,
        .comm_recv = svc_recv,
        .to_host_float = svc_to_host,
        .from_host_float = svc_from_host,
        .delay = svc_delay,
        .residual_norm = svc_residual_norm,
    };
    x->cc.dist = x->dist;
    x->cc.dev = &x->cdev;
    x->cc.collective_us = x->opt ? x->opt->collective_us : NULL;
    x->cc.env = x->env;
    x->cc.n_env = &x->n_env;
    x->cc.nccl_tuning = x->opt ? x->opt->nccl_tuning : NULL;
    x->cc.p2p = x->opt ? x->opt->p2p : COMM_P2P_DIRECT;
}

/* NCCL's ncclCommDestroy waits until every CUDA graph that captured one of the communicator's
 * collectives is destroyed (commDestroySync loops while comm->localPersistentRefs != 0): with a
 * graph still alive it blocks for ever. The custom backends' captured kernels point into IPC-mapped
 * peer memory that their fini unmaps. So graphs go first. */
void exec_comm_fini(exec_ctx *x)
{
    exec_watch_step("finishing backend %s", x->comm->name);
    if (x->dev->graphs_release)
        x->dev->graphs_release(x);
    x->comm->fini(&x->cc);
}

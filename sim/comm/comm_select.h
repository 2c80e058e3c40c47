/* comm_select: a comm backend that sends each collective to one of several backends by payload size,
 * following a cfg_policy ("oneshot<=256K,twoshot<=8M,nccl"), as servers do (custom allreduce for
 * small payloads, NCCL for large ones). All-gathers go to one backend of their own (default: the
 * policy's last, unbounded one).
 *
 * Each backend the policy names is initialised once, with its own state; a call swaps that state
 * into x->state around the delegated call, so the backends need no change. The composite can be
 * captured in a CUDA graph only when every backend it uses can.
 *
 * Usage (exec_run or a benchmark):
 *     comm_select_opts opts;                                        (the caller's, as long as the backend)
 *     const comm_backend *c = comm_select_configure(&policy, -1, &opts);
 *     ctx.opts = &opts;                                             (before its supported())
 * Each instance reads its own options, so several policies may live in one process. */
#ifndef VPSIM_COMM_SELECT_H
#define VPSIM_COMM_SELECT_H

#include "../config/cfg_policy.h"
#include "comm.h"

/* The composite's options: the policy, and the backend all-gathers go to. */
typedef struct comm_select_opts {
    cfg_policy policy;
    int allgather;
} comm_select_opts;

/* Fill `opts` and return the composite's table (graph_safe = false when a member backend is not
 * graph-safe or not in this build). allgather_backend: a cfg_backend, or -1 for the policy's last. */
const comm_backend *comm_select_configure(const cfg_policy *p, int allgather_backend, comm_select_opts *opts);

#endif

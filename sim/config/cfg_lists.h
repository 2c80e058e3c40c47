/* cfg_lists: the extension points of vpsim, one list each. Every enum, name table, schema table,
 * registry, model dispatch and help text that depends on them is generated from these lists, so adding
 * a backend, an op kind or a device is one line here plus its own file(s) (docs/extending.md).
 *
 * They live in config because config is the lowest layer that names them (scenario enums, the
 * system file's measured tables); the layers above expand them with their own X macros. */
#ifndef VPSIM_CFG_LISTS_H
#define VPSIM_CFG_LISTS_H

/* Collective backends.
 *   X(ID, name, key, where, policy, table, family, peer, fuse, launch, workspace, inplace, probe, help)
 *   ID        CFG_BACKEND_<ID>
 *   name      what users type (--backend, run.backend, policies)
 *   key       a C identifier: the backend's table is comm_backend_<key> (sim/comm), its measured table
 *             system.measured.allreduce.<key>
 *   where     HOST (every build) or CUDA (left out of CUDA=0 builds; comm_backends.c says so)
 *   policy    1: a real allreduce an allreduce_policy may name and the model compares; 0: none, model
 *   table     1: the system file can carry a measured latency table for it
 *   family    the model's formula family (model_comm.c): nccl, symm, ipc, host, none
 *   peer      the peer accesses of its own data path: NONE (a library's transport, or none), LOADS or
 *             STORES (its flags are stores either way): how the platform's topology.peer_loads /
 *             peer_stores reach it
 *   fuse      1: it fuses the residual add + RMSNorm into its epilogue (fusion.allreduce_residual_norm)
 *   launch    PLANNED (the host plans every call: launch.eager_collective_us), KERNEL (one plain kernel
 *             launch: launch.eager_us) or HOST (run by the host itself, host-staged)
 *   workspace 1: it needs the custom allreduce's IPC workspace (memory.custom_workspace_mib)
 *   inplace   1: its allreduce takes send == recv, so bench-allreduce --check checks that too (MPI
 *             stages through host copies and has no in-place path here)
 *   probe     1: `vpsim probe` times its allreduce curve on a GPU box (measured.allreduce.<key>)
 *   help      one line for --help and the docs */
#define CFG_BACKEND_LIST(X)                                                                                             \
    X(NCCL, "nccl", nccl, CUDA, 1, 1, nccl, NONE, 0, PLANNED, 0, 1, 1,                                                      \
      "NCCL ncclAllReduce / ncclAllGather (ring or tree, LL or Simple)")                                               \
    X(NCCL_SYMM, "nccl-symm", nccl_symm, CUDA, 1, 1, symm, LOADS, 0, PLANNED, 0, 1, 0,                                       \
      "NCCL on symmetric-memory windows (NCCL 2.27+)")                                                                 \
    X(ONESHOT, "oneshot", oneshot, CUDA, 1, 1, ipc, LOADS, 1, KERNEL, 1, 1, 1,                                               \
      "custom one-shot kernel: every rank loads all peers over CUDA IPC")                                             \
    X(TWOSHOT, "twoshot", twoshot, CUDA, 1, 1, ipc, LOADS, 0, KERNEL, 1, 1, 1,                                               \
      "custom two-shot kernel: reduce-scatter then all-gather over IPC")                                              \
    X(PUSH, "push", push, CUDA, 1, 1, ipc, STORES, 1, KERNEL, 1, 1, 1,                                                       \
      "custom push kernel: peers store into each other, flags in the data")                                           \
    X(MPI, "mpi", mpi, HOST, 1, 1, host, NONE, 0, HOST, 0, 0, 0, "host-staged MPI_Allreduce (copies to and from the host)")  \
    X(NONE, "none", none, HOST, 0, 0, none, NONE, 0, KERNEL, 0, 1, 0, "collectives skipped: compute only")                   \
    X(MODEL, "model", model, HOST, 0, 0, none, NONE, 0, KERNEL, 0, 1, 0,                                                     \
      "run only: each collective a GPU delay of its modelled duration on --target-system")

/* Op kinds of a plan.
 *   X(ID, name, class, compute, help)
 *   ID       PLAN_OP_<ID>
 *   name     the plan JSON's "kind" and measured.ops.<name>
 *   class    PLAN_CLASS_<class> of breakdowns: GEMM, ATTENTION, COMM, OTHER
 *   compute  1: runs on the device's compute path and may carry a measured table; 0: a collective
 *   help     one line for the docs */
#define CFG_OP_LIST(X)                                                                                                  \
    X(GEMM, "gemm", GEMM, 1, "GEMMs (duration against bytes read + written)")                                         \
    X(GROUPED_GEMM, "grouped_gemm", GEMM, 1, "grouped MoE GEMMs")                                                    \
    X(ATTENTION, "attention", ATTENTION, 1, "attention")                                                               \
    X(NORM, "norm", OTHER, 1, "norms")                                                                                 \
    X(ELEMENTWISE, "elementwise", OTHER, 1, "elementwise kernels")                                                    \
    X(EMBEDDING, "embedding", OTHER, 1, "embedding lookups")                                                          \
    X(ALLREDUCE, "allreduce", COMM, 0, "allreduce across the TP group")                                               \
    X(ALLGATHER, "allgather", COMM, 0, "all-gather across the TP group")                                              \
    X(REDUCE_SCATTER, "reduce_scatter", COMM, 0, "reduce-scatter across the TP group (collectives.allreduce_split)")  \
    X(ALLTOALL, "alltoall", COMM, 0, "all-to-all across the EP group (MoE dispatch and combine, parallel.ep)")        \
    X(ALLREDUCE_NORM, "allreduce_norm", COMM, 0, "allreduce + residual add + RMSNorm as one op (fusion.*)")

/* Devices that replay a plan.
 *   X(ID, name, key, where, help): table exec_device_<key> (sim/exec), HOST or CUDA as for backends. */
#define CFG_DEVICE_LIST(X)                                                                                              \
    X(CUDA, "cuda", cuda, CUDA, "CUDA GPU: cuBLAS GEMMs, vpsim kernels, CUDA graphs")                                  \
    X(CPU, "cpu", cpu, HOST, "CPU: OpenBLAS GEMMs in fp32, for tests and machines without a GPU")

/* Expansion helpers. */
#define CFG_LIST_COUNT_ONE(...) +1
#define CFG_LIST_NAME_BACKEND(ID, name, ...) name,
#define CFG_LIST_NAME_OP(ID, name, ...) name,
#define CFG_LIST_NAME_DEVICE(ID, name, ...) name,

#endif

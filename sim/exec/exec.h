/* exec: replaying a plan on a device, one MPI rank per device, with a communication backend.
 *
 * The executor core (exec_core.c) walks the plan and drives two tables of function pointers: a device
 * (CUDA or CPU: buffers, compute ops, streams, timers, graphs) and a comm backend (sim/comm/comm.h).
 * The backend sees only the comm_ctx embedded here (exec_comm.c binds the device's services to it).
 * Which devices exist in this build is decided in exec_devices.c alone, which backends in
 * comm_backends.c, so no CUDA or MPI conditional leaks into the logic. */
#ifndef VPSIM_EXEC_H
#define VPSIM_EXEC_H

#include "../config/cfg.h"
#include "../plan/plan.h"
#include "../comm/comm.h"
#include "../comm/comm_select.h"
#include "../dist/dist.h"

#include <stdbool.h>
#include <stddef.h>

/* Testing hook (--inject-fault MODE:RANK:CALL[:SECONDS]): rank `rank` kills itself, exits, or stalls
 * on the host for `stall_s` seconds just before its collective call number `call` (counted from 1
 * over the whole job: checks, warm-up and captures included). */
typedef enum { EXEC_FAULT_NONE, EXEC_FAULT_KILL, EXEC_FAULT_EXIT, EXEC_FAULT_STALL } exec_fault_mode;
extern const char *const exec_fault_names[]; /* "none", "kill", "exit", "stall" */
typedef struct exec_fault {
    int mode; /* exec_fault_mode */
    int rank;
    long long call;
    int stall_s;
} exec_fault;
/* Parse MODE:RANK:CALL[:SECONDS] (SECONDS default 10); 0, or -1 with a reason. */
int exec_fault_parse(const char *arg, exec_fault *f, char *why, size_t len);

/* The host-memory budget per rank of every command that runs on the CPU device (run, bench-allreduce,
 * calibrate --measure): one default, one option name (--max-host-memory GIB), so that no command can
 * take a box's memory by a size alone (seen once: bench-allreduce -e 8G ran a 24 GiB box out of memory). */
#define EXEC_MAX_HOST_GIB_DEFAULT 4
typedef struct exec_options {
    int device;  /* cfg_device */
    int backend; /* cfg_backend */
    bool graph;  /* capture the cycle as a CUDA graph */
    int iters, warmup;
    int instrumented_iters; /* eager passes with a timer around every op */
    bool check;
    int debug_corrupt_rank; /* test hook: this rank corrupts element 0 of each checked result (-1: none) */
    int seed;
    bool progress;           /* progress line on stderr (rank 0, terminal only) */
    size_t max_host_bytes;   /* CPU device: refuse plans needing more memory per rank */
    /* Per-size choice of allreduce backend (cfg_policy.h); NULL = `backend` for every collective. */
    const struct cfg_policy *allreduce_policy;
    /* Backend model: modelled duration of every op in flat plan order (only collectives are read). */
    const double *collective_us;
    exec_fault fault;
    /* --class-cost: time the cycle again without each compute class (exec_result.class_cost_us). */
    bool class_cost;
    /* The scenario's NCCL tuning, set as NCCL_* variables by the NCCL backends; NULL = NCCL decides. */
    const cfg_nccl_tuning *nccl_tuning;
    /* --p2p: the custom backends' path to their peers (comm_p2p, comm.h); 0 = direct. */
    int p2p;
    /* --attn-kernel: index of cfg_attn_kernel_names = vp_attention_set_kernel's number; 0 = auto. */
    int attn_kernel;
} exec_options;


typedef struct exec_ctx exec_ctx;

/* What a measurement ran on, as the device itself reports it (exec_device.facts), so that a file of
 * measured values can describe the machine that measured it: calibrate --measure and probe
 * write these into the gpu section and compare them with the base's. A device fills what it knows; 0 or
 * "" means "not a fact of this device" and the base's value stays. */
typedef struct exec_facts {
    char device[8];     /* cfg_device name: "cuda", "cpu" */
    bool self_test;     /* the figures are not a GPU's (the CPU device; a caller adds virtual ranks) */
    char gpu_name[96];  /* cudaDeviceProp.name, e.g. "NVIDIA H200"; the CPU device: "CPU device (MODEL)" */
    int sms;            /* multiprocessors (0: not a GPU) */
    double memory_gib;  /* device memory in GiB (0: not reported) */
    int cc;             /* compute capability x10 (0: not a GPU) */
    char clocks[96];    /* NVML's state when read ("SM 1980 MHz, memory 3201 MHz, 39 C, 90 W"), else "" */
    char cpu_vendor[8]; /* cfg_cpu_vendor_names entry of the host, "" when /proc/cpuinfo does not say */
    char cpu_model[96]; /* /proc/cpuinfo "model name", "" when absent */
    char host[64];
    char label[192];    /* one line for provenance: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)" */
    char uuid[48];      /* the card, as nvidia-smi names it ("GPU-f2fae499-..."): two machines of one kind are
                           told apart by it; "" when not a GPU */
} exec_facts;

/* EXEC_GRAPH_WITHOUT and EXEC_GRAPH_ALONE: the cycle with one class's ops skipped and with that class
 * alone (--class-cost). */
enum { EXEC_GRAPH_TIMED, EXEC_GRAPH_INSTRUMENTED, EXEC_GRAPH_WITHOUT, EXEC_GRAPH_ALONE, EXEC_GRAPH_SLOTS };
enum { EXEC_AUX_RESIDUAL, EXEC_AUX_NORM_WEIGHT, EXEC_AUX_COUNT };

/* A device: owns memory, streams, timers. Every function aborts the job through dist_fail on
 * an API error, so callers need no error paths for device faults. */
typedef struct exec_device {
    const char *name;
    size_t elem_bytes; /* activation element size on this device (bf16 = 2, CPU fp32 = 4) */
    bool has_graphs;
    /* Whether this machine can run the device at all (a GPU and a driver the runtime accepts), asked
     * before anything else starts: 0, or -1 with a reason in why. NULL: always usable. */
    int (*probe)(char *why, size_t len);
    void (*init)(exec_ctx *x);
    /* Allocate what every op of the plan needs; returns -1 with x->why set when it cannot. */
    int (*prepare)(exec_ctx *x);
    void (*fini)(exec_ctx *x);
    /* Enqueue one compute op (not a collective) on its stream. */
    void (*compute)(exec_ctx *x, const plan_op *op, int op_index);
    /* The side stream waits for the main stream / the main stream waits for the side stream. */
    void (*fork)(exec_ctx *x);
    void (*join)(exec_ctx *x);
    void (*sync)(exec_ctx *x);
    /* Timers: a flat array of n slots, recorded on a stream (0 main, 1 side), read after sync. */
    void (*timers_alloc)(exec_ctx *x, int n);
    void (*timer_record)(exec_ctx *x, int slot, int stream);
    double (*timer_elapsed_us)(exec_ctx *x, int from_slot, int to_slot);
    /* Graphs (has_graphs only), in EXEC_GRAPH_SLOTS slots: EXEC_GRAPH_TIMED (plain cycle),
     * EXEC_GRAPH_INSTRUMENTED (a timer pair around every op), EXEC_GRAPH_WITHOUT and EXEC_GRAPH_ALONE
     * (a class left out, a class alone).
     * Timers recorded during capture become graph nodes. */
    void (*capture_begin)(exec_ctx *x);
    void (*capture_end)(exec_ctx *x, int slot);
    void (*graph_launch)(exec_ctx *x, int slot);
    /* Destroy every captured graph (exec_comm_fini calls it before a backend's fini). */
    void (*graphs_release)(exec_ctx *x);
    /* Collective buffers: send (op output) and receive, sized for the largest collective. */
    void *(*comm_send)(exec_ctx *x);
    void *(*comm_recv)(exec_ctx *x);
    /* The fused allreduce_norm's other operands (EXEC_AUX_*), sized like comm_recv (the weight: the
     * widest norm); NULL from a device that has none, whose plans then hold no allreduce_norm. */
    void *(*comm_aux)(exec_ctx *x, int which);
    /* residual += recv (rows x width); recv = RMSNorm(residual) x weight (eps 1e-6), on the main stream:
     * allreduce_norm for backends without a fused kernel, after their own allreduce into recv. */
    void (*residual_norm)(exec_ctx *x, void *recv, void *residual, const void *weight, long long rows,
                          long long width);
    void *(*stream)(exec_ctx *x, int which);
    /* Host staging for host-based backends: copy device<->host (synchronous on the main stream). */
    void (*to_host_float)(exec_ctx *x, float *dst, const void *src, long long n);
    void (*from_host_float)(exec_ctx *x, void *dst, const float *src, long long n);
    /* Checks: fill, poison and compare a buffer of n elements (see kernels/vp_pattern.h). */
    void (*fill_pattern)(exec_ctx *x, void *buf, long long n, int salt);
    void (*poison)(exec_ctx *x, void *buf, long long n);
    /* Returns the first bad index or -1 (synchronises). */
    long long (*check)(exec_ctx *x, const void *buf, long long n, int salt, bool gather);
    /* Spin on the main stream for `ns` nanoseconds (backend model). */
    void (*delay)(exec_ctx *x, double ns);
    /* Fill in environment facts (GPU name, driver, clocks, ...) as "key": value pairs. */
    void (*describe)(exec_ctx *x, bool after);
    /* The device's own facts (exec_facts) for the rank `local_rank` of its host, without a context:
     * asked before anything is measured, so a refusal costs nothing. Host fields are filled already. */
    void (*facts)(int local_rank, exec_facts *f);
} exec_device;

struct exec_ctx {
    const exec_options *opt;
    const plan *plan;
    dist_job dist;
    const exec_device *dev;
    const comm_backend *comm;
    comm_select_opts select_opts; /* a per-size policy's options (cc.opts points here when one runs) */
    comm_ctx cc;       /* what the backend sees: exec_comm_bind fills it; cc.max_comm_elems is the
                          largest collective (all-gather counted whole), which devices size buffers by */
    comm_device cdev;  /* this device's services to the backend (thunks in exec_comm.c) */
    void *dev_state;   /* the device's private state */
    long long calls;          /* collective calls made through exec_collective (faults count these) */
    char why[512];
    util_env_item env[UTIL_ENV_MAX];
    int n_env;
};

/* Record an environment fact (later ones with the same key replace earlier ones). */
void exec_env_set(exec_ctx *x, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Every collective of a run or a benchmark goes through here: counts the call, injects the requested
 * fault, tells the watchdog, then calls the backend (allreduce or all-gather by op->kind). */
void exec_collective(exec_ctx *x, const plan_op *op, int flat, const void *send, void *recv, long long count);
/* --check (exec_check.c): every collective of the plan on poisoned output and pattern input, compared
 * with its reference. Returns the ranks x ops that failed (the same on every rank); the first failure's
 * description in msg. Collective. */
long long exec_check_collectives(exec_ctx *x, char *msg, size_t msg_len);
/* One collective's output `recv` against its reference, the inputs having been fill_pattern(salt) on
 * every rank (op->ranks = the job's ranks): the first bad index, or -1. Local (not collective). */
long long exec_check_result(exec_ctx *x, const plan_op *op, const void *recv, int salt);
/* The --check reference of allreduce_norm (exec_check.c): after `ranks` ranks each sent the pattern
 * (vp_pattern_value) onto the residual filled with vp_residual_value, the residual and the normalised
 * rows (vp_norm_weight_value weights, eps 1e-6), rows x width each. */
void exec_check_norm_reference(int ranks, long long rows, long long width, int salt, float *residual, float *recv);
/* Point x->cc at this context's dist, device services, options and environment block (before the
 * backend's supported()). */
void exec_comm_bind(exec_ctx *x);
/* Release the device's graphs, then the backend (a graph may hold the backend's resources). */
void exec_comm_fini(exec_ctx *x);

/* Registry (exec_devices.c). NULL with a reason when not available in this build. */
const exec_device *exec_find_device(int cfg_device, char *why, size_t len);
/* Every rank asks its device's probe (and whether the build has the device), then all agree: 0 on
 * every rank, or -1 on every rank with the lowest failing rank's reason in why, which ends in what to
 * do instead ("use --device cpu"). Collective; call before any device or backend setup. */
int exec_device_ready(const dist_job *d, int cfg_device, char *why, size_t len);
/* The facts of this rank's device (after exec_device_ready): the host's (name, CPU vendor and model),
 * then the device's own. Local. */
void exec_device_facts(const dist_job *d, int cfg_device, exec_facts *f);

/* Measured results of a replay, identical on every rank after exec_run. */
typedef struct exec_stats {
    double median_us, p10_us, p90_us, min_us, max_us;
} exec_stats;

typedef struct exec_result {
    int ranks, iters;
    int n_inst;          /* instrumented passes */
    bool graph;          /* cycle timed as a CUDA graph */
    exec_stats cycle;    /* timed loop, max over ranks per iteration */
    exec_stats inst_cycle;  /* instrumented passes: wall time of a whole pass */
    bool inst_graph;        /* instrumented passes ran as a CUDA graph (else eager) */
    int n_ops;           /* ops over all phases, in plan order */
    double *op_us;       /* per op: median over instrumented passes less the timer overhead, max over ranks */
    double timer_overhead_us;   /* subtracted from every op: main-stream ops then add up to the cycle */
    double timer_empty_pair_us; /* what an empty timer pair measures (the least that is subtracted) */
    double *op_start_us; /* per rank per op (rank-major, ranks x n_ops): start offset in the last
                            instrumented pass, for traces */
    double *op_dur_us;   /* per rank per op, same pass */
    bool checked;        /* --check ran (its verdict: check_failures) */
    long long check_failures;
    char check_message[512];
    /* --class-cost, per plan_class (gemm, attention, other; comm stays 0): the marginal cost, the median
     * over rounds of the cycle less the cycle without that class's compute ops; the class alone, the
     * median cycle with only its compute ops less class_none_us, the median cycle with none. */
    bool class_cost;
    double class_cost_us[PLAN_CLASS_COUNT];
    double class_alone_us[PLAN_CLASS_COUNT];
    double class_none_us;
    util_env_item env[UTIL_ENV_MAX];
    int n_env;
} exec_result;

/* Replay the plan. Collective: every rank calls it. Returns 0, 1 on wrong results (check), 2 when
 * the request cannot run here (message on stderr from rank 0). */
int exec_run(dist_job *d, const exec_options *opt, const plan *p, exec_result *out);
void exec_result_free(exec_result *r);

/* Groups of like ops for exec_time_groups: group i is ops [first[i], first[i] + count[i]) of the plan's
 * one phase (count >= 2); k_few < count. */
typedef struct exec_groups {
    const int *first, *count;
    int n_groups;
    int k_few;    /* the smaller graph holds the group's first k_few ops */
    int passes;   /* timed pairs per group (median) */
    int warmup;   /* untimed pairs per group */
    int flush_op; /* op run before every timed launch, outside the timers (-1: none) */
} exec_groups;
/* exec_groups.c: per group, the time one more of its ops adds to a CUDA graph (eager on a device
 * without graphs): median over passes of (t(all) - t(first k_few)) / (count - k_few). One rank, one
 * phase, compute ops only. env_out gets the environment facts, graph and passes. 0, or 2 (stderr). */
int exec_time_groups(dist_job *d, const exec_options *opt, const plan *p, const exec_groups *g, double *per_op_us,
                     exec_result *env_out);


#endif

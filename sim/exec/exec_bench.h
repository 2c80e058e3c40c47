/* comm_bench: the allreduce benchmark behind `vpsim bench-allreduce` — every requested backend over a
 * size sweep on one device, nccl-tests style (time per call, algbw, busbw, #wrong).
 *
 * comm_bench.c runs it (collective over MPI_COMM_WORLD; drives the exec device and backend tables
 * directly, one device for all backends); exec_bench_fmt.c holds the plain functions (sizes, bus
 * bandwidth, table and CSV output) that the unit tests exercise without MPI or a GPU; exec_bench_json.c
 * the JSON record, written, read back and described by one schema table. */
#ifndef VPSIM_EXEC_BENCH_H
#define VPSIM_EXEC_BENCH_H

#include "../config/cfg_policy.h"
#include "exec.h"

#include "../util/util.h"

#include <stdbool.h>

#define EXEC_BENCH_MAX_SIZES 128

typedef struct exec_bench_opts {
    int device;                          /* cfg_device */
    int collective;                      /* plan_op_kind timed (--collective): allreduce, allgather, ... */
    int backends[CFG_BACKEND_COUNT];     /* cfg_backend, in run order */
    int n_backends;
    long long sizes[EXEC_BENCH_MAX_SIZES]; /* payload bytes per rank, ascending */
    int n_sizes;
    long long verify_counts[16];         /* element counts the scenario's verify pass reduces */
    int n_verify;
    bool with_policy; /* also run the per-size composite (comm_select) with this policy */
    cfg_policy policy;
    int iters, warmup;
    bool graph, check;
    int seed;
    exec_fault fault; /* testing hook (--inject-fault), see exec.h */
    cfg_nccl_tuning nccl_tuning; /* the scenario's nccl: section (all zero = NCCL decides) */
    int p2p;                     /* --p2p: comm_p2p of the custom backends (0 = direct) */
    size_t max_host_bytes;       /* CPU device: the host-memory budget per rank (0: none) */
} exec_bench_opts;

/* A row's bytes and count are what each rank sends (plan_op.count's convention): for reduce_scatter and
 * alltoall a multiple of the ranks; an all-gather's result is ranks x that. */
typedef struct exec_bench_row {
    long long bytes, count;
    double time_us; /* per call, max over ranks */
    double algbw, busbw; /* GB/s */
    long long wrong;     /* elements wrong, summed over ranks and checks (-1: not run) */
    bool verify_size;    /* the scenario's verify pass reduces this many elements */
    double model_us;     /* the model's per-call time on the compared system; NAN when not modelled */
} exec_bench_row;

typedef struct exec_bench_backend {
    int backend; /* cfg_backend, or -1 for the per-size policy */
    char name[96];
    bool ran;
    char why[320]; /* not run: why */
    bool graph;    /* timed as CUDA graphs */
    exec_bench_row rows[EXEC_BENCH_MAX_SIZES];
    int n_rows;
    util_env_item env[UTIL_ENV_MAX];
    int n_env;
    char model_method[256]; /* how the model priced this backend ("" when not compared) */
} exec_bench_backend;

typedef struct exec_bench_result {
    int ranks;
    char device[16];
    int collective; /* plan_op_kind timed; a value that is not a collective reads as allreduce */
    char type[8]; /* "bf16" on cuda, "float" on cpu */
    int elem_bytes;
    int iters, warmup;
    bool graph_requested, check;
    bool virtual_ranks; /* several ranks share a GPU */
    int p2p;            /* comm_p2p the custom backends ran with (--p2p; "p2p" in JSON, absent = direct) */
    exec_bench_backend *backends;
    int n_backends;
    long long wrong_total;
    util_env_item env[UTIL_ENV_MAX]; /* device facts */
    int n_env;
    char *command;          /* the measuring command line, when loaded from a file (NULL = this process's) */
    char *compare_command;  /* writing a loaded result: the command comparing it (exec_bench_json sets it) */
    char model_system[64];  /* the system the model was compared on ("" = no comparison) */
    char model_note[256];   /* what the comparison assumes (file, overrides) */
} exec_bench_result;

/* Run the benchmark (every rank). Returns 0, or 2 with a message on stderr from rank 0 when the
 * device is not available. `out` is complete on rank 0; free it with exec_bench_result_free. */
int exec_bench_run(dist_job *d, const exec_bench_opts *o, exec_bench_result *out);
/* Free what a run or a load allocated (exec_bench_json.c: the record's table knows what it holds). */
void exec_bench_result_free(exec_bench_result *r);

/* ---- plain helpers (exec_bench_fmt.c) ---- */

/* nccl-tests' bus bandwidth of an allreduce: algbw x 2 (n - 1) / n. */
double comm_busbw(double algbw_gbps, int ranks);
/* The collective a result timed (allreduce when r->collective is not a collective kind). */
int exec_bench_kind(const exec_bench_result *r);
/* Bus bandwidth of collective `kind` from the algbw of the bytes each rank sends, as nccl-tests defines
 * it on its own sizes: allreduce x 2(n-1)/n; reduce_scatter and alltoall x (n-1)/n (their send buffer
 * is nccl-tests' size); allgather x (n-1) (nccl-tests' size is the gathered n x the contribution). */
double exec_bench_busbw(int kind, double algbw_gbps, int ranks);
const char *exec_bench_busbw_definition(int kind);
/* Whether the collective sums ("sum", the redop column) or only moves data ("none"). */
const char *exec_bench_redop(int kind);
/* The mean bus bandwidth of a backend's rows (0 without rows). */
double exec_bench_avg_busbw(const exec_bench_backend *b);
/* Algorithm bandwidth in GB/s (1e9 bytes per second) of `bytes` in `us` microseconds. */
double comm_algbw(long long bytes, double us);
/* Geometric sweep min, min*factor, ... <= max (nccl-tests -b -e -f); each size rounded down to a
 * multiple of elem_bytes, sizes below one element dropped, duplicates dropped. Returns the count
 * written (at most cap), or -1 with a reason when the arguments make no sense. */
int exec_bench_sizes(long long min, long long max, long long factor, size_t elem_bytes, long long *out, int cap,
                     char *why, size_t why_len);
/* Insert `bytes` into an ascending list without duplicates; returns the new count (cap respected). */
int exec_bench_add_size(long long *sizes, int n, int cap, long long bytes);

/* Load a `vpsim.bench_allreduce/1` document written by exec_bench_json (to compare it with the model
 * again): every key as the record's table has it (docs/schemas/bench.schema.json), the comparison left
 * out (it is recomputed). 0, or -1 with "file:line:col: what" in err. Free with exec_bench_result_free. */
int exec_bench_load(const char *path, exec_bench_result *r, char *err, size_t len);
/* The record's JSON Schema (draft 2020-12): `vpsim schema bench`. */
void exec_bench_json_schema(util_json *j);

/* nccl-tests-style table for every backend, with a header naming ranks, device, type, iterations
 * and the virtual-ranks caveat, and a footer with #wrong total and average bus bandwidth. */
void exec_bench_table(util_buf *out, const exec_bench_result *r);
/* CSV: a header line, then one line per row of every backend that ran (backend, ranks, device, type,
 * redop, bytes, count, time_us, algbw_gbps, busbw_gbps, wrong (empty: not checked), verify_pass, graph,
 * and model_us, model_error_pct when compared with the model). Backends that could not run have no
 * rows (the table and JSON give their reasons). */
void exec_bench_csv(util_buf *out, const exec_bench_result *r);
/* JSON (schema "vpsim.bench_allreduce/1", exec_bench_json.c): stable keys, one object per backend with its
 * rows; `argv` is this process's command line. */
void exec_bench_json(util_json *j, const exec_bench_result *r, int argc, char **argv);

#endif

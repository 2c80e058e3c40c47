/* trace: a serving engine's PyTorch profiler traces (one Chrome trace JSON per rank, as SGLang's and
 * vLLM's torch profiler hooks write them) read as measured input: the kernels of every rank, mapped to
 * the plan's op kinds by a table of kernel-name patterns, cut into decode cycles and phases, and the
 * collectives matched across ranks so that each call's time splits into wire time and waiting for peers.
 *
 * The layer sits beside model: it knows the plan's vocabulary (op kinds, phase kinds) and fills the
 * results of sim/results, and knows nothing of devices, MPI or reports. Every error is a bad input (the
 * caller exits 2) with the file and byte offset, or the file and the rule it broke. */
#ifndef VPSIM_TRACE_H
#define VPSIM_TRACE_H

#include "../plan/plan.h"
#include "../util/util.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct trace_error {
    char msg[1024];
} trace_error;

/* A kernel's kind: a plan_op_kind, or one of these. */
enum { TRACE_KIND_UNMAPPED = -1 };

/* One GPU activity (a kernel, memcpy or memset). Times are the file's microseconds ("ts"), which count
 * from its baseTimeNanoseconds when it has one (kineto's files do): ranks are put on one clock through
 * the difference of their bases, never by adding 1e15-sized numbers in a double. */
typedef struct trace_kernel {
    double ts, dur;
    long long corr; /* CUPTI correlation id (-1: none): joins the kernel to its launch on the CPU */
    int name;       /* index into trace_rank.names */
    int stream;
    short kind;  /* plan_op_kind or TRACE_KIND_UNMAPPED (trace_map_apply) */
    short phase; /* index into the rank's phases (trace_find_cycles), -1 outside every phase */
} trace_kernel;

/* A CPU or GPU range that may mark a phase (record_function / NVTX annotations, Python functions), or
 * a runtime call that launched GPU work (cudaLaunchKernel, cudaGraphLaunch, ...). */
typedef struct trace_span {
    double ts, dur;
    long long corr;
    int name;
    int stream; /* gpu_user_annotation: the stream (its tid) whose kernels the range covers; else -1 */
    bool gpu;   /* gpu_user_annotation: a range on the GPU's timeline */
} trace_span;

/* One phase instance found in a rank's trace: its kernels are those with this phase index. */
typedef struct trace_phase {
    plan_phase_kind kind;
    int step;          /* draft steps: 1..D in their cycle; else 0 */
    int cycle;         /* index of its complete cycle, -1 when its cycle is incomplete (trace edges) */
    int first, n;      /* kernels [first, first + n) of the rank's time-sorted array */
    double start, end; /* first kernel's start, last kernel's end (us) */
} trace_phase;

typedef struct trace_rank {
    char *path;
    int rank, world; /* distributedInfo.rank / world_size, -1 when the file has none */
    bool have_base;  /* baseTimeNanoseconds given: ts values count from it */
    long long base_ns;
    char **names;    /* interned kernel and span names */
    int n_names, cap_names;
    int *name_hash; /* open addressing over names (index + 1; 0 = free) */
    int hash_cap;
    util_vec kernels;  /* trace_kernel, sorted by ts after reading */
    util_vec marks;    /* trace_span: annotations and Python functions that match a marker pattern */
    util_vec launches; /* trace_span: runtime calls with a correlation id */
    long long bytes;   /* JSON bytes read (decompressed) */
    long long events;  /* traceEvents entries */
    bool marked;       /* phases came from markers, not from the collective pattern */
    util_vec phases;   /* trace_phase, in time order */
    int n_cycles;      /* complete cycles */
    int draft_steps;   /* draft steps per complete cycle (0 without speculation) */
} trace_rank;

/* ---------------- reading (trace_read.c, trace_stream.c) ---------------- */

/* Which spans to keep while reading (names are matched once each): a marker table's predicate. */
typedef bool (*trace_keep_fn)(const char *name, void *ctx);

/* Read one rank's trace: Chrome trace JSON (an object with "traceEvents", or a bare array of events),
 * gzip accepted, streamed event by event so a file of any size is never held whole. Keeps GPU
 * activities, runtime launches, and spans `keep` accepts. 0, or -1 with `err` = "FILE: byte N (line L,
 * column C): what" (not JSON, cut short, not a trace, no kernel events). */
int trace_read(const char *path, trace_keep_fn keep, void *keep_ctx, trace_rank *out, trace_error *err);
void trace_rank_free(trace_rank *r);
const char *trace_name(const trace_rank *r, int id);
int trace_intern(trace_rank *r, const char *s, size_t len);

/* ---------------- kernel names (trace_map.c) ---------------- */

typedef struct trace_map trace_map;
/* The pattern table: `user` (may be NULL) first, then `shipped`; both YAML (configs/trace-kernels.yaml
 * says the layout). NULL with err = "file:line:col: what". */
trace_map *trace_map_load(const char *shipped, const char *user, trace_error *err);
void trace_map_free(trace_map *m);
/* The kind a kernel name maps to (first matching pattern), TRACE_KIND_UNMAPPED when none; `library`
 * (may be NULL) gets the pattern's library name. */
int trace_map_kind(const trace_map *m, const char *name, const char **library);
/* A marker span's phase: 1 + plan_phase_kind, 0 when the name is no marker. */
int trace_map_marker(const trace_map *m, const char *name);
bool trace_map_keep(const char *name, void *map);
/* Set every kernel's kind. */
void trace_map_apply(const trace_map *m, trace_rank *r);
int trace_map_patterns(const trace_map *m);

/* ---------------- cycles (trace_cycles.c) ---------------- */

/* Cut a rank's kernels into phases (by its markers where they exist, else by the collective pattern:
 * each forward pass ends at its logits all-gather; the passes with the most allreduces are the target's)
 * and phases into cycles (draft steps, verify, draft-extend; one decode pass without speculation). 0, or
 * -1 with why (no collective to cut at, no complete cycle). */
int trace_find_cycles(const trace_map *m, trace_rank *r, trace_error *err);
/* The plan's name of a phase: draft_<step>, verify, draft_extend, decode. */
void trace_phase_name(plan_phase_kind kind, int step, char *buf, size_t len);

/* ---------------- the breakdown across ranks (trace_stats.c, trace_skew.c) ---------------- */

#define TRACE_MAX_PHASES 40 /* RESULTS_MAX_PHASES */
#define TRACE_MAX_UNMAPPED 24

/* One collective kind in one phase of the cycle, over the matched cycles and ranks. A call's time on a
 * rank is its kernel's duration: the ranks finish a collective together, so the rank that arrived last
 * waited for nobody and its duration is the wire time (the smallest of the call's durations); every
 * other rank's duration is that plus its wait, and the call's arrival skew is the largest minus the
 * smallest duration. No clock is needed for this; `clock_skew_us` checks it against the ranks' clocks. */
typedef struct trace_coll_stats {
    int kind;                 /* plan_op_kind */
    int calls;                /* per cycle and rank */
    double call_us;           /* mean kernel duration: wire + wait */
    double wire_us, wait_us;  /* means per call and rank */
    double skew_mean_us, skew_p10_us, skew_p50_us, skew_p90_us, skew_max_us;
    double clock_skew_p50_us; /* the same from the ranks' start times on their shared clock (base times) */
    int n_samples;            /* calls x cycles */
} trace_coll_stats;

#define TRACE_MAX_COLLS 5
typedef struct trace_phase_stats {
    char name[32]; /* as the plan names it: draft_1 .. draft_D, verify, draft_extend, decode */
    plan_phase_kind kind;
    int step;
    double ms;                             /* mean span, from the previous phase's end to this one's */
    double class_ms[PLAN_CLASS_COUNT];     /* the critical path: each main-stream kernel plus the gap before it */
    double kernel_us[PLAN_OP_KIND_COUNT];  /* kernel time by kind, every stream */
    double side_us[PLAN_OP_KIND_COUNT];    /* ... of it on streams other than the main one */
    double kernels[PLAN_OP_KIND_COUNT];    /* kernels by kind */
    double unmapped_us, unmapped_kernels;  /* kernels no pattern named */
    double gap_us, gaps;                   /* idle between main-stream kernels inside the phase */
    double lead_us;                        /* idle before its first kernel after the previous phase */
    double tail_us;                        /* side-stream work past the main stream's last kernel */
    int n_colls;
    trace_coll_stats colls[TRACE_MAX_COLLS];
} trace_phase_stats;

typedef struct trace_unmapped {
    char *name;
    double us;
    long long count;
} trace_unmapped;

typedef struct trace_summary {
    int ranks, cycles, draft_steps;
    bool graph;          /* cudaGraphLaunch among the launches: the server replayed CUDA graphs */
    bool marked;         /* phases by markers */
    bool clocks;         /* every rank has a base time: their clocks compare */
    int n_phases;
    trace_phase_stats phases[TRACE_MAX_PHASES];
    double host_ms;      /* idle between a cycle's end and the next one's first kernel */
    double cycle_ms;     /* host_ms + the phases */
    double cycle_p10_ms, cycle_p50_ms, cycle_p90_ms; /* period between cycle ends (mean over ranks) */
    double kernel_us, mapped_us; /* per cycle and rank, every kernel in the matched cycles */
    int n_unmapped;      /* names, most time first */
    trace_unmapped unmapped[TRACE_MAX_UNMAPPED];
    double unmapped_rest_us;
    double wait_by_rank_us[64];  /* mean wait per allreduce call of each rank (the first 64) */
    int last_by_rank[64];        /* how often each rank arrived last */
} trace_summary;

/* The breakdown over the ranks' matched cycles. The ranks must hold the same steps: cycles matched by
 * their times when every file has a base time, by index otherwise; each matched cycle must have the
 * same phases and collectives on every rank. 0, or -1 with why ("from different steps: ..."). */
int trace_summarize(trace_rank *ranks, int n, trace_summary *out, trace_error *err);
void trace_summary_free(trace_summary *s);

#endif

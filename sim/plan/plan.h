/* plan: the schedule of one decode cycle, as plain data (no CUDA, no MPI).
 *
 * Under tensor parallelism every rank runs the same op list on its own shard, so a plan holds one list
 * per phase that each of the `ranks` ranks executes; collectives name the participating ranks.
 *
 * Phases of an EAGLE-3 cycle with topk=1 (SGLang eagle_worker.py, `draft_forward` and
 * `forward_draft_extend_after_decode`):
 *   draft_1 .. draft_{steps-1}  the draft head, one token per request each: the first draft token
 *                               comes from the previous cycle's draft-extend, and the loop breaks
 *                               before the last forward;
 *   verify                      the target model over num_draft_tokens tokens per request;
 *   draft_extend                the draft head over the accepted tokens, padded to num_draft_tokens
 *                               per request as SGLang's CUDA-graph path does.
 * With speculative.algorithm=none a cycle is one `decode` phase of the target over one token.
 *
 * GEMM convention: C[m, n] = A[m, k] x W[k, n], A = activations (m = tokens), W = this rank's weight
 * shard; `batch` > 1 repeats it over independent weights (per-head bmm, per-expert grouped GEMM). */
#ifndef VPSIM_PLAN_H
#define VPSIM_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "../config/cfg.h"

/* Op kinds come from CFG_OP_LIST (cfg_lists.h): adding one is a line there plus its cost, build and
 * device code (docs/extending.md). */
#define PLAN_OP_ENUM(ID, ...) PLAN_OP_##ID,
typedef enum { CFG_OP_LIST(PLAN_OP_ENUM) PLAN_OP_KIND_COUNT } plan_op_kind;
#undef PLAN_OP_ENUM
extern const char *const plan_op_kind_names[];

typedef enum { PLAN_STREAM_MAIN, PLAN_STREAM_SIDE, PLAN_STREAM_COUNT } plan_stream;
extern const char *const plan_stream_names[];

/* Coarse classes used by breakdowns (report, model): comm / gemm / attention / other. */
typedef enum { PLAN_CLASS_GEMM, PLAN_CLASS_ATTENTION, PLAN_CLASS_COMM, PLAN_CLASS_OTHER, PLAN_CLASS_COUNT } plan_class;
extern const char *const plan_class_names[];
plan_class plan_op_class(plan_op_kind kind);
/* Runs on the device's compute path (not a collective). */
bool plan_op_is_compute(plan_op_kind kind);
bool plan_op_is_collective(plan_op_kind kind);

#define PLAN_NAME_MAX 32

typedef struct plan_op {
    plan_op_kind kind;
    char name[PLAN_NAME_MAX]; /* e.g. "q_b_proj", "moe.w13", "allreduce.o_proj" */
    int layer;                /* -1 outside the decoder layers */
    plan_stream stream;
    int micro_batch;          /* two-batch overlap (plan_tbo.c): 0 = the whole batch, 1 = a, 2 = b */

    /* GEMM / GROUPED_GEMM (C[m,n] = A[m,k] W[k,n], `batch` weights); NORM / ELEMENTWISE use m x n. */
    long long m, n, k;
    int batch;
    cfg_dtype wdtype; /* weight storage */
    int wgroup;       /* quantisation group */
    cfg_dtype adtype; /* activations */

    /* ATTENTION: `batch` sequences of q_len query tokens, `heads` heads on this rank, kv_len cached
     * tokens of kv_dim elements each (keys) of which v_dim are values. */
    long long q_len, kv_len;
    int heads, kv_heads, qk_dim, v_dim;
    bool kv_shared; /* MLA: one latent per token shared by all heads */

    /* Collectives. `count` is what each rank sends (plan_collective_elems gives what it receives):
     *   allreduce       count in, count out (the sum);
     *   allgather       count in, count x ranks out (rank j's block at j x count);
     *   reduce_scatter  count in (ranks blocks of count / ranks), block r of the sum out on rank r;
     *   alltoall        count in (ranks blocks of count / ranks: block j goes to rank j), count out
     *                   (block j came from rank j);
     *   allreduce_norm  count = m x n in; out: the residual (m x n, updated in place: residual + sum) and
     *                   RMSNorm(residual) x weight (m x n). */
    long long count;  /* elements per rank contributed */
    long long payload_bytes;
    int ranks;        /* participants: ranks 0..ranks-1 of the TP group */

    /* Derived cost terms (filled by plan_op_finalize). */
    double flops;
    double weight_bytes; /* weight bytes this rank reads */
    double bytes_read;   /* weights + activations + cache */
    double bytes_written;
} plan_op;

typedef enum { PLAN_PHASE_DRAFT, PLAN_PHASE_VERIFY, PLAN_PHASE_DRAFT_EXTEND, PLAN_PHASE_DECODE } plan_phase_kind;
extern const char *const plan_phase_kind_names[];

typedef struct plan_phase_summary {
    int op_count[PLAN_OP_KIND_COUNT];
    int allreduce_count, allgather_count, gemm_count;
    long long *allreduce_bytes; /* payload of each allreduce, in order */
    long long allgather_bytes_total;
    double flops, weight_bytes, bytes_read, bytes_written;
    double attention_bytes_read; /* the attention ops' reads: the KV cache, what a cycle re-reads with the weights */
    double activation_peak;      /* the largest activation traffic (in + out) of one op other than attention */
    bool two_batch;              /* ops of two micro-batches (plan_phase_is_tbo) */
} plan_phase_summary;

typedef struct plan_phase {
    char name[PLAN_NAME_MAX];
    plan_phase_kind kind;
    char model[PLAN_NAME_MAX]; /* "target" or "draft" */
    int tokens;                /* tokens per request processed */
    int batch;                 /* requests */
    plan_op *ops;
    int n_ops, cap_ops;
    int *shape; /* per op: its index in plan.shapes (plan_index_shapes) */
    plan_phase_summary summary;
} plan_phase;

typedef struct plan {
    char scenario[128];
    int ranks; /* TP degree: ranks executing the plan */
    int batch, context;
    int active_experts; /* distinct routed experts touched per MoE layer in the verify pass */
    double expected_tokens;
    plan_phase *phases;
    int n_phases;
    /* The plan's distinct op shapes, one representative each (plan_op_same_shape), made by
     * plan_summarize: what a pricing walks instead of every op. */
    plan_op *shapes;
    int n_shapes;
} plan;

/* Build the cycle schedule of a loaded scenario. Returns 0, or -1 with a reason in `why`. */
int plan_build(const cfg_scenario *sc, plan *out, char *why, size_t why_len);
void plan_free(plan *p);

/* Append an op (used by the builder and by the JSON loader), and recompute its derived terms. */
plan_op *plan_phase_add_op(plan_phase *ph);
void plan_op_finalize(plan_op *op);
/* The output width the replay's GEMM has: a quantised GEMM (INT4, FP8) runs as a bf16 GEMM reading the
 * same weight bytes, its width scaled by bytes-per-weight / 2 and rounded up to a multiple of 8
 * (sim/exec/dev_cuda.c runs exactly this); else n. */
long long plan_op_effective_n(const plan_op *op);
/* The SiLU-and-multiply of an MLP: an element-wise op named "...silu_mul" (the replay's kernel choice). */
bool plan_op_is_silu_mul(const plan_op *op);
/* The op's probed-law class (cfg_law_class, cfg_system.h) and its rows coordinate (docs/model.md
 * "Probed compute laws"), or -1 for an op no law prices (collectives). Here, not in sim/model, because
 * the probe's plan (plan_probe.c) files its ops by the same rule the model prices them by. */
int plan_op_law_class(const plan_op *op, double *rows);
/* The law's width coordinate of a grouped GEMM: the smaller of its per-expert stand-in width
 * (plan_op_effective_n) and depth k, the dimension tensor parallelism splits (w13's columns, w2's depth);
 * 0 for every other op. Only the grouped classes' tables carry widths (docs/model.md "Probed compute
 * laws"). */
double plan_op_law_width(const plan_op *op);
/* The query rows of one KV head as the decode kernel runs them: past 32, balanced chunks of at most 32
 * rows padded to 8-row tiles (40 rows -> 48); up to 32, the rows themselves. */
double plan_attention_rows(long long rows);
/* Elements one rank sends (`in`) and receives (`out`) in a collective op (see plan_op.count). */
void plan_collective_elems(const plan_op *op, long long *in, long long *out);
/* collectives.allreduce_split (plan_split.c): each layer allreduce that feeds an RMSNorm becomes
 * reduce-scatter (rows padded to a multiple of the ranks) -> the norm on rows_padded / ranks rows ->
 * all-gather. Called by plan_build before the summaries; nothing changes at one rank. */
void plan_split_allreduce(plan *p);
/* fusion.allreduce_residual_norm (plan_fuse.c): every allreduce immediately followed by a main-stream
 * norm of count elements becomes one allreduce_norm op (m, n the norm's). Returns the pairs fused;
 * resummarises the plan. */
int plan_fuse_allreduce_norm(plan *p);
/* Recompute every phase's summary from its ops. */
void plan_summarize(plan *p);
/* Ops of one shape: every field a cost reads agrees (plan_shapes.c says which), so they cost the same. */
bool plan_op_same_shape(const plan_op *a, const plan_op *b);
/* Fill plan.shapes and each phase's shape[] (called by plan_summarize; again after any edit of the ops). */
void plan_index_shapes(plan *p);

/* Two-batch overlap (overlap.two_batch): rewrite a target phase (verify, decode) as two micro-batches
 * of ceil(B/2) and floor(B/2) requests, stage by stage (a stage ends at a collective): a's stage, then
 * b's, so that each collective is followed by the other micro-batch's compute. plan_tbo.c. */
void plan_tbo_split(const cfg_scenario *sc, plan_phase *ph);
/* The phase was split by plan_tbo_split (its ops carry micro_batch 1 and 2). */
bool plan_phase_is_tbo(const plan_phase *ph);

/* Expected distinct experts touched when `selections` tokens each pick `top_k` distinct experts of
 * `experts` uniformly: E * (1 - (1 - k/E)^selections). */
double plan_expected_active_experts(int experts, int top_k, long long tokens);
/* Op `op` of phase `phase` in plan order over all phases (the index of per-op arrays: times, traces). */
int plan_op_flat_index(const plan *p, int phase, int op);

/* Totals over phases. */
const plan_phase *plan_find_phase(const plan *p, const char *name);

#endif

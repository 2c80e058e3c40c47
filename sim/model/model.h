/* model: the analytic cost of one decode cycle on a described system, per collective backend.
 *
 * Usage: model_prepare() once per (scenario, plan) computes every compute op's duration and the shape of
 * the timeline (stream overlap, launch costs); model_eval() then walks the plan once per backend with that
 * backend's collective costs. Every formula is written down in docs/model.md; model_explain() prints the
 * terms of each for one allreduce and one layer. No CUDA, no MPI: plain arithmetic on the plan. */
#ifndef VPSIM_MODEL_H
#define VPSIM_MODEL_H

#include "../config/cfg.h"
#include "../plan/plan.h"
#include "../results/results.h"
#include "../util/util.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- formula terms, for --explain and for tests ---- */
#define MODEL_MAX_TERMS 48

typedef struct model_term {
    char name[40];
    double value;
    char unit[12];
    char note[112];
} model_term;

typedef struct model_terms {
    model_term t[MODEL_MAX_TERMS];
    int n;
} model_terms;

/* Record a term when `t` is not NULL (formulas take NULL on the fast path). A macro so that the fast
 * path costs one test: the variadic call (its register spills) and the arguments' evaluation happen
 * only when the terms are wanted; it was an eighth of a model evaluation's instructions. */
void model_term_record(model_terms *t, const char *name, double value, const char *unit, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define model_term_add(t, ...)                                                                                          \
    do {                                                                                                               \
        model_terms *model_term_t_ = (t);                                                                              \
        if (model_term_t_)                                                                                             \
            model_term_record(model_term_t_, __VA_ARGS__);                                                             \
    } while (0)
/* The value of the first term called `name`, or NAN. */
double model_term_get(const model_terms *t, const char *name);

/* ---- compute ops ---- */

/* One compute op's kernel duration (us) on `sys`, graph-node gap not included. When measured.use is on:
 * the probed law of its class (measured.compute.<class>; GEMMs with rows above the probed ones take
 * max(law, t_compute)), else the measured table for its kind (measured.ops.<kind>); otherwise
 * max(floor, memory time, compute time). `in_l2`: the cycle's working set fits in L2. `source` (may be
 * NULL) receives "probed", "measured" or "formula". */
double model_op_us(const cfg_system *sys, const plan_op *op, bool in_l2, model_terms *terms, const char **source);
/* The `source` model_op_us would give the op, without pricing it. */
const char *model_op_source(const cfg_system *sys, const plan_op *op);
/* The pure bandwidth part of an op (no latency, no floor): what side-stream overlap cannot hide. */
double model_op_mem_us(const cfg_system *sys, const plan_op *op, bool in_l2);

/* ---- collectives ---- */

/* Why a measured collective table was left out when the scenario said so (model_coll.table_skip points
 * at one of these, so a caller tells them by address from the reasons a table did not apply). */
extern const char model_skip_use[], model_skip_collectives[];

typedef struct model_coll {
    bool available;
    double us;
    char method[96]; /* what was used: "formula: ring/LL over P2P", "measured table ..." */
    char reason[256]; /* why not, when !available */
    const cfg_sys_table *table; /* the measured table that gave `us`, NULL when a formula did */
    const char *table_skip;     /* a table exists for this backend but does not apply: why (else NULL; one of
                                   model_skip_use, model_skip_collectives when the scenario turned tables off) */
} model_coll;

/* The cost of one collective (`kind` PLAN_OP_ALLREDUCE or PLAN_OP_ALLGATHER) of `bytes` per rank over
 * ranks 0..ranks-1 with backend `be`. Fills `terms` with every term of the formula when not NULL. */
void model_collective(const cfg_system *sys, cfg_backend be, plan_op_kind kind, double bytes, int ranks,
                      model_terms *terms, model_coll *out);

/* Host-staged collectives (mpi) cannot live in a CUDA graph or run ahead of the GPU: the host waits for
 * the GPU, runs the collective, and (in graph mode) launches the next piece of the graph. */
bool model_backend_host_staged(cfg_backend be);

/* fusion.allreduce_residual_norm: an allreduce_norm op costs its allreduce (model_collective with the
 * allreduce's formula and tables) plus the residual add and RMSNorm. Backends with a fused kernel (oneshot,
 * push) do those in the kernel's epilogue: one memory-bound pass, no launch of its own. The others run
 * them as a separate norm kernel after the collective, costed like the norm op of an unfused plan (the
 * cycle adds its launch or graph-node gap). Returns that part's GPU time; its terms in `terms`. */
bool model_backend_fuses_norm(cfg_backend be);
double model_norm_part_us(const cfg_system *sys, bool fused, const plan_op *op, bool in_l2, model_terms *terms);
/* Host time to launch one collective of backend `be` eagerly (launch.eager_collective_us for NCCL's
 * host-planned calls, launch.eager_us for a single custom kernel). */
double model_collective_launch_us(const cfg_system *sys, cfg_backend be);
/* Per-call time of back-to-back collectives of `kind` as `vpsim bench-allreduce` times them (a CUDA graph of N
 * calls, or N eager launches): the collective plus the launch terms of model_cycle's timeline. */
void model_bench_call(const cfg_system *sys, cfg_backend be, plan_op_kind kind, double bytes, int ranks, bool graph,
                      model_coll *out);

/* NCCL's tuning-model time alone (no transport penalty, no table): for tests and explain. It honours the
 * scenario's NCCL tuning carried in sys->nccl_tuning (channels, allowed protocols and algorithms). `algo_proto`
 * (may be NULL, >= 16 chars) receives e.g. "ring/LL". */
double model_nccl_formula_us(const cfg_system *sys, plan_op_kind kind, double bytes, int ranks, model_terms *terms,
                             char *algo_proto);

/* Whether `be` can run on `sys` at `ranks` ranks; reason filled when not. */
bool model_backend_available(const cfg_system *sys, cfg_backend be, int ranks, char *reason, size_t len);

/* ---- what serving engines would pick (model_engine.c) ---- */

typedef enum { MODEL_ENGINE_VLLM, MODEL_ENGINE_SGLANG, MODEL_ENGINE_COUNT } model_engine;
extern const char *const model_engine_names[];

/* Would `engine` (in its default configuration) run an allreduce of `bytes` per rank over `ranks` GPUs
 * of `sys` with vpsim backend `be`? Writes "yes" or "no: why" into buf. */
void model_engine_pick(model_engine engine, const cfg_system *sys, cfg_backend be, double bytes, int ranks,
                       char *buf, size_t len);
/* The engine's source files and functions the gates come from. */
const char *model_engine_source(model_engine engine);

/* ---- measured tables ---- */

/* Duration at `x` from a measured table. Inside the table: linear in log(bytes) between points. Outside:
 * the nearest end point plus (formula(x) - formula(end)) when `formula` is given, else the end point's
 * value scaled by x / end above the table and the first value below it. */
double model_table_eval(const cfg_sys_table *t, double x, double (*formula)(void *ctx, double bytes), void *ctx);
/* "" when the table is usable, else why not ("bytes has 2 values, us has 1", ...). */
const char *model_table_check(const cfg_sys_table *t);

/* Probed compute laws (model_law.c; docs/model.md "Probed compute laws"); the op's class and rows:
 * plan_op_law_class. */
/* "" when the table is sound (equal lengths, rows and bytes > 0, rows ascending, bytes strictly increasing
 * within a rows value, us >= 0; with widths: one per point, > 0, ascending, the rest within each width),
 * else why not. */
const char *model_law_check(const cfg_law_table *t);
/* The per-op time (us, graph gap not included) the table gives at (rows, bytes) and, for a table with
 * widths, at `width` (plan_op_law_width; log-linear between two widths, the nearest width's law outside
 * them); NAN for an empty table (or one whose lists differ in length). Adds its terms when terms is not
 * NULL: "law@rows R" per rows group used (which byte points, which rule), then "t_law" (which rows, which
 * rule); with widths each name carries "w<width>" and a last "t_law" says which widths. */
double model_law_eval(const cfg_law_table *t, double rows, double bytes, double width, model_terms *terms);
/* The same for an op whose kernel runs one block per row (a norm, an embedding lookup: kernels/vp_kernels.cu):
 * its time follows the row's width, not the rows x width bytes, so each rows group is read at the bytes the
 * op would have at that group's rows (docs/model.md "Probed compute laws", row-parallel kernels). */
double model_law_eval_per_row(const cfg_law_table *t, const plan_op *op, double rows, model_terms *terms);
/* The (rows, bytes) at which an attention op reads its law: the decode kernel's launch on the system's GPU
 * (plan_attn.h) decides; `rows` and `bytes` are left as they are when the splits are set by the keys or
 * the device's shared memory is not known. `t` (the law read, or NULL) says whether the op keeps its rows
 * and row chunks (the law has points at its rows) or is read as one block's rows. Adds "launch",
 * "sm_keys" and "launch_rule" terms. */
void model_attention_coords(const cfg_system *sys, const cfg_law_table *t, const plan_op *op, double *rows,
                            double *bytes, model_terms *terms);

/* ---- the cycle ---- */

typedef struct model_ctx model_ctx;

/* Prepare a scenario + its plan (plan ops must outlive the context). Returns NULL with `why` filled when
 * the system file is inconsistent (e.g. a measured table with mismatched lists). */
model_ctx *model_prepare(const cfg_scenario *sc, const plan *p, char *why, size_t why_len);
void model_free(model_ctx *ctx);

/* Evaluate one backend; `with_ops` also fills the per-op durations. Always fills r->backend,
 * r->tokens_per_cycle and, when the backend cannot run, r->available = false with the reason. */
void model_eval(const model_ctx *ctx, cfg_backend be, bool with_ops, results_cycle *r);

/* Human explanation: every term of the formulas for one verify allreduce per backend and for one
 * decoder layer's ops. */
void model_explain(util_buf *out, const model_ctx *ctx, const cfg_backend *bes, int n_bes);

/* Tokens per cycle written out with its source (cfg_accept_eval's explanation), e.g. "chain formula: 1 +
 * 0.75 + 0.75x0.6 = 2.200", then "; warning: ..." when rates were extrapolated. */
void model_tokens_formula(const cfg_scenario *sc, char *buf, size_t len);

/* ---- sensitivity ---- */

#define MODEL_SENS_KEY 64

/* One input moved by -frac and +frac: tok/s at each end and its provenance tag in the system file. */
typedef struct model_sens_item {
    char key[MODEL_SENS_KEY]; /* "system.gpu.mem_efficiency", "speculative.acceptance", ... */
    int count;                /* values moved together (a measured list, the acceptance rates) */
    double value, lo_value, hi_value; /* the first value as loaded, and moved down / up */
    bool clamped;             /* a moved value hit the schema's range (e.g. an efficiency at 1) */
    double base_tok_per_s, lo_tok_per_s, hi_tok_per_s;
    double swing;             /* max |tok/s change| / base tok/s */
    char tag[16];             /* cfg_prov_lookup's tag: assumed, spec, measured, calibrated, --set, ... */
    char note[120];           /* the comment beside the value */
} model_sens_item;

/* Rank the scenario's numeric system inputs (and its acceptance rates) by how far tok/s of backend `be`
 * moves when each is scaled by (1 - frac) and (1 + frac) alone; inputs that move it by less than 0.01%
 * are left out. Fills at most max_out items, largest swing first; returns how many (0 when the backend
 * is unavailable). */
int model_sensitivity(const cfg_scenario *sc, const plan *p, cfg_backend be, double frac, model_sens_item *out,
                      int max_out);

/* What an answer's sign rests on (model_rests.c): unmeasured platform facts with their other plausible
 * value and the reading that decides each. */
typedef struct model_rest {
    const char *key;     /* the --set key */
    const char *alt;     /* "other" (the other mode or value) or "xF" (F x the current value) */
    const char *decides; /* the reading on the box that decides it */
} model_rest;
extern const model_rest model_rests[];
extern const int model_n_rests;
/* The rests that apply to `sc`, each with the --set text of its other value (those the system file
 * tags measured or spec, and those without another value, are left out): how many, at most max. */
typedef struct model_rest_alt {
    const model_rest *rest;
    char set[160];
} model_rest_alt;
#define MODEL_MAX_RESTS 16
int model_rests_for(const cfg_scenario *sc, model_rest_alt *out, int max);
/* tok/s of `be` on the scenario at `path` with `sets`, reusing plan `p` (the rests change only system.*
 * and run.* keys, which no plan reads); NAN when it does not load or the backend is unavailable. */
double model_rest_tok_per_s(const char *path, const char *system_path, const char *const *sets, int n, const plan *p,
                            cfg_backend be);
/* The one line that says a gain's sign rests on an input. */
void model_rest_line(char *buf, size_t len, double gain_pct, const char *set, double alt_gain_pct, const model_rest *r);

/* Host time per cycle outside the GPU phases: host.cycle_overhead_us, plus host.tree_overhead_us when the
 * draft is a tree (topk > 1). */
double model_host_us(const cfg_scenario *sc);

/* Accessors used by explain and the CLI. */
bool model_ctx_in_l2(const model_ctx *ctx);

#endif

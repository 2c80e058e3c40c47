/* model_internal: the prepared form of a plan that model_eval walks once per backend. Internal to sim/model. */
#ifndef VPSIM_MODEL_INTERNAL_H
#define VPSIM_MODEL_INTERNAL_H

#include "model.h"

#include "../config/cfg_accept.h"
#include "../plan/plan_memory.h"

#define MODEL_MAX_COLLS 64

/* One op, reduced to what the timeline needs. */
typedef struct model_op {
    unsigned char kind;   /* plan_op_kind */
    unsigned char cls;    /* plan_class */
    unsigned char stream; /* plan_stream */
    unsigned char mb;     /* two-batch overlap micro-batch: 0 none, 1 a, 2 b */
    int coll;             /* index into model_ctx.colls for collectives, else -1 */
    int region;           /* side-stream overlap region starting here, else -1 */
    double us;            /* compute ops: kernel duration */
    double mem_us;        /* compute ops: pure bandwidth time */
    double norm_us[2];    /* allreduce_norm: its norm part [0] as a separate kernel, [1] as a fused epilogue */
} model_op;

/* Side-stream ops and the main-stream ops they overlap (up to the next collective): the region lasts
 * max(main stream, side stream, every byte of both through the one DRAM). */
typedef struct model_region {
    int first, last;      /* op indices, inclusive */
    int n_ops;
    double t_main, t_side, t_mem, t;
    double main_class_us[PLAN_CLASS_COUNT]; /* main ops' own time per class (sums to t_main) */
    double side_class_w[PLAN_CLASS_COUNT];  /* side ops' time per class as weights (sums to 1) */
    double last_us;                         /* the region's last op, for the eager host bound */
} model_region;

typedef struct model_coll_key {
    plan_op_kind kind;
    long long bytes;
    int ranks;
} model_coll_key;

typedef struct model_phase_span {
    int first, n;
    bool tbo; /* split into two micro-batches (plan_tbo_split): costed by model_tbo_phase */
} model_phase_span;

/* Launch costs of the cycle walk (system launch.*, the backend's collective launch). */
typedef struct launch_costs {
    double eager, eager_coll, eager_gap, graph_node, graph_launch;
    double skew_coeff; /* eager: a collective waits skew_coeff x sqrt(launches since the last one) for the
                          slowest rank (docs/model.md "Arrival skew"); 0 under CUDA graphs */
} launch_costs;
/* The launch costs for backend `be` over `ranks` ranks, eager or in CUDA graphs. */
launch_costs model_launch_costs(const cfg_system *s, cfg_backend be, int ranks, bool graph);
/* E[max of n standard normals]: how far the slowest of n ranks runs behind their mean, in spreads. */
double model_expected_max_normal(int n);

struct model_ctx {
    const cfg_scenario *sc;
    const plan *p;
    bool in_l2;
    bool graph;
    double working_set_bytes;
    double tokens_per_cycle;
    cfg_accept accept;  /* the scenario's tokens per verify, with its source and extrapolation */
    plan_memory memory; /* the plan's per-rank account without a backend's own workspace */
    int n_ops;
    model_op *ops;
    model_phase_span *phases;
    model_region *regions;
    int n_regions, cap_regions;
    model_coll_key colls[MODEL_MAX_COLLS];
    int n_colls;
    int verify_ar_slot; /* the verify (or decode) pass's first allreduce, -1 if none: names the method */
};

/* ---- two-batch overlap (model_tbo.c) ---- */

/* How much slower compute runs beside a collective: the collective's kernel holds `channels` of the
 * GPU's SMs (one block per NCCL channel), compute gets the rest: sms / (sms - channels). INFINITY when
 * the backend overlaps nothing (host-staged: the host runs it) or the collective holds every SM. */
double model_tbo_stretch(const cfg_scenario *sc, cfg_backend be, model_terms *terms);

/* Totals of one TBO phase's schedule, for --explain and the tests (us). */
typedef struct model_tbo_sums {
    double compute, comm;  /* every compute op's own time (gaps included), every collective's */
    double serial;         /* compute + comm: the phase without overlap */
    double critical_path;  /* the schedule's span */
    double stretched;      /* time compute lost to the collective's SMs */
} model_tbo_sums;

/* Walk one TBO phase as two dependency chains (a, b) over two in-order resources (the SMs for compute,
 * the communicator for collectives); fills out->class_ms (us) and op_us like eval_phase, returns the
 * phase's GPU span in us (graph launch and host bound included). */
double model_tbo_phase(const model_ctx *ctx, int ph, const double *cost, const launch_costs *L, double stretch,
                       double *class_us, double *op_us, model_tbo_sums *sums);
/* --explain: stretch, compute, comm, serial, critical path and hidden time of each split phase. */
void model_tbo_explain(util_buf *out, const model_ctx *ctx, cfg_backend be);

#endif

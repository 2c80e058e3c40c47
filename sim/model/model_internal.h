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
} model_phase_span;

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
    int n_regions;
    model_coll_key colls[MODEL_MAX_COLLS];
    int n_colls;
    int verify_ar_slot; /* the verify (or decode) pass's first allreduce, -1 if none: names the method */
};

#endif

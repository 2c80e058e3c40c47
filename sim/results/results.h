/* results: the result of one cycle per backend, modelled (`vpsim model`) or measured (`vpsim run`) —
 * the data behind "vpsim.results/1". Model and exec fill it, report renders it; it depends on nothing
 * but the plan's vocabulary, so none of them has to include another to share it.
 *
 * Both modes fill the same struct so measured and modelled runs compare key by key, and (with the
 * optional per-op array, in plan order) op by op. */
#ifndef VPSIM_RESULTS_H
#define VPSIM_RESULTS_H

#include "../plan/plan.h"

#include <stdbool.h>

#define RESULTS_SCHEMA "vpsim.results/1"
#define RESULTS_MAX_PHASES 40
#define RESULTS_MAX_WARNINGS 6

/* A like-for-like caveat on a result: two figures of different provenance or conditions meet in it (a
 * measured figure taken in eager mode applied to a CUDA-graph scenario, acceptance rates extrapolated
 * past the given vector, ...). `code` is stable for tools and for deduplication; `text` is for people. */
typedef struct results_warning {
    char code[32];
    char text[320];
} results_warning;

/* One op's time as a results file gives it ("ops": phase, index in the phase, name, kind, layer, bytes
 * moved, duration): what results_json_load reads; a producer gives op_us and the plan instead. */
typedef struct results_op {
    char phase[PLAN_NAME_MAX];
    int index;
    char name[PLAN_NAME_MAX];
    plan_op_kind kind;
    int layer;
    long long bytes; /* -1: not recorded (a run from before sizes were) */
    double us;
} results_op;

typedef struct results_phase {
    char name[PLAN_NAME_MAX];
    plan_phase_kind kind;
    double ms;
    double class_ms[PLAN_CLASS_COUNT]; /* sums to ms: each op's share of the critical path */
    int collectives;
    double collective_us_mean; /* mean duration of this phase's allreduces (0 when none) */
} results_phase;

typedef struct results_cycle {
    char backend[64]; /* a backend name, or a per-size policy for runs */
    bool available;
    char reason[256]; /* why not, when !available */

    double allreduce_us;         /* mean per allreduce in the verify (or decode) pass */
    char allreduce_method[96];   /* e.g. "formula: ring/LL over P2P" or "measured table (1 point)" */
    double allgather_us;         /* mean per all-gather in the verify pass */

    double verify_ms;                       /* the target pass (decode phase without speculation) */
    double verify_class_ms[PLAN_CLASS_COUNT];
    double draft_ms;        /* every draft-model phase: draft steps plus draft-extend */
    double draft_steps_ms;  /* the draft steps alone */
    double draft_extend_ms; /* the draft-extend alone */
    double host_ms;         /* host overhead per cycle */
    double cycle_ms;        /* sum of the phases plus host overhead */
    double tokens_per_cycle;
    double tok_per_s; /* tokens_per_cycle / cycle seconds */

    /* Serving figures as engines print them. Every request of the batch gets tokens_per_cycle tokens per
     * cycle, so both are per request: tpot_ms = cycle_ms / tokens_per_cycle (time per output token) and
     * accepted_per_cycle = tokens_per_cycle - 1 (draft tokens accepted; SGLang's "accept len" and vLLM's
     * "mean acceptance length" count the bonus token too, i.e. equal tokens_per_cycle). */
    double tpot_ms;
    double accepted_per_cycle;
    /* Would the engine pick this backend for the verify allreduce at this payload and GPU count:
     * "yes", or "no: why" (model_engine.c holds the gates and their sources). Empty when not modelled. */
    char engine_vllm[128];
    char engine_sglang[128];
    /* The same scenario with speculative.algorithm=none, same backend (the break-even of speculation);
     * 0 when not modelled (vpsim sweep fills it). */
    double nospec_tok_per_s;

    /* Per-rank GPU memory (plan_memory_account for this backend) against the GPU's (gpu.memory_gib):
     * filled by the model (mem_known), for every backend, whether it is available or not, so that a
     * result that does not fit (available = false, reason "does not fit: needs X GiB of Y") still says
     * by how much. A replay measures no memory account: mem_known false. */
    bool mem_known;
    bool fits;
    double mem_gib;
    double mem_capacity_gib;

    int n_warnings;
    results_warning warnings[RESULTS_MAX_WARNINGS];

    int n_phases;
    results_phase phases[RESULTS_MAX_PHASES];

    /* Optional: each op's own duration in microseconds, in plan order (phase by phase), NULL if absent.
     * Owned by the result (results_cycle_free). */
    double *op_us;
    int n_op_us;
    /* The ops of a loaded document (results_json_load), NULL when it had none; a producer leaves it NULL. */
    results_op *ops;
    int n_ops;
} results_cycle;

void results_cycle_free(results_cycle *r);

/* Fill the verify / draft / cycle totals and tok/s from the phases, host_ms and tokens_per_cycle. */
void results_cycle_finish(results_cycle *r);
/* The cycle time and what follows from it (tok/s, TPOT): a replay sets the timed cycle this way, so
 * that every figure of the row rests on the same cycle. */
void results_cycle_set_cycle(results_cycle *r, double cycle_ms);

/* Add a warning (once per code: a second one with the same code is dropped; so is one past the
 * maximum, which the last slot then says). */
void results_warn(results_cycle *r, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

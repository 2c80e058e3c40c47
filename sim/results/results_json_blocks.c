/* The blocks of a results record that only some modes carry, as schema tables (results_json_blocks.h):
 * a run's "measured", "model_comparison" (sim/cli/run_report.c writes them) and an import's "import"
 * (sim/cli/import_report.c). They are read and checked like the rest of the record and are part of its
 * JSON Schema; their writers stay with the data they come from. A key that came later (the check, the
 * class costs, the comparison's conditions and whole cycle, the clock skew) has a default or is optional,
 * so files of older runs read too. */
#include "results_json_blocks.h"

#include <math.h>
#include <stddef.h>
#include <string.h>


/* ---------------- measured ---------------- */

#define CK(f) offsetof(results_check, f)
static const cfg_field check_fields[] = {
    {.key = "run", .type = CFG_T_BOOL, .offset = CK(run), .def = "false", .doc = "--check ran"},
    {.key = "passed", .type = CFG_T_BOOL, .offset = CK(passed), .def = "null", .nullable = true,
     .doc = "null when not run"},
    {.key = "collectives", .type = CFG_T_INT, .offset = CK(collectives), .def = "0", CFG_RANGE(0, 1 << 30)},
    {.key = "failures", .type = CFG_T_INT, .offset = CK(failures), .def = "0", CFG_RANGE(0, 2147483647.0)},
    {.key = "message", .type = CFG_T_STRING, .offset = CK(message), .def = "null", .nullable = true},
    {0},
};

#define M(f) offsetof(results_measured, f)
/* gemm, attention and other (ms) of a per-class array of results_measured (the comm class has none). */
#define CLASS_MS_FIELDS(arr)                                                                                          \
    {.key = "gemm", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = M(arr) + PLAN_CLASS_GEMM * sizeof(double),        \
     .nullable = true, .unit = "ms"},                                                                                 \
    {.key = "attention", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = M(arr) + PLAN_CLASS_ATTENTION * sizeof(double), \
     .nullable = true},                                                                                               \
    {.key = "other", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = M(arr) + PLAN_CLASS_OTHER * sizeof(double),      \
     .nullable = true}
static const cfg_field class_cost_fields[] = {
    CLASS_MS_FIELDS(class_cost_ms),
    {.key = "method", .type = CFG_T_STRING, .derived = true},
    {0},
};
static const cfg_field class_alone_fields[] = {
    CLASS_MS_FIELDS(class_alone_ms),
    {.key = "none", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = M(class_none_ms), .nullable = true, .unit = "ms",
     .doc = "the cycle with no compute op"},
    {.key = "method", .type = CFG_T_STRING, .derived = true},
    {0},
};

/* Timing figures of a run: null where nothing was timed (util_json_num writes a NaN so). */
#define TIMING(k, f) {.key = k, .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = M(f), .nullable = true}
const cfg_field results_measured_fields[] = {
    {.key = "ranks", .type = CFG_T_INT, .offset = M(ranks), CFG_RANGE(1, 4096)},
    {.key = "iters", .type = CFG_T_INT, .offset = M(iters), CFG_RANGE(0, 2147483647.0)},
    {.key = "graph", .type = CFG_T_BOOL, .offset = M(graph)},
    TIMING("cycle_median_ms", cycle_median_ms),
    TIMING("cycle_p10_ms", cycle_p10_ms),
    TIMING("cycle_p90_ms", cycle_p90_ms),
    TIMING("cycle_min_ms", cycle_min_ms),
    TIMING("cycle_max_ms", cycle_max_ms),
    {.key = "instrumented_passes", .type = CFG_T_INT, .offset = M(instrumented_passes), CFG_RANGE(0, 2147483647.0)},
    TIMING("instrumented_pass_median_ms", instrumented_pass_median_ms),
    {.key = "instrumented_as_graph", .type = CFG_T_BOOL, .offset = M(instrumented_as_graph)},
    TIMING("timer_overhead_us", timer_overhead_us),
    TIMING("timer_empty_pair_us", timer_empty_pair_us),
    {.key = "check_failures", .type = CFG_T_INT, .offset = M(check_failures), CFG_RANGE(0, 2147483647.0)},
    {.key = "check", .type = CFG_T_MAP, .offset = M(check), .fields = check_fields, .doc = "--check"},
    {.key = "class_cost_ms", .type = CFG_T_MAP, .offset = 0, .fields = class_cost_fields, .optional = true,
     .doc = "--class-cost: each compute class's marginal cost (the cycle less the cycle without it)"},
    {.key = "class_alone_ms", .type = CFG_T_MAP, .offset = 0, .fields = class_alone_fields, .optional = true,
     .doc = "--class-cost: each compute class alone (its ops only, less the cycle with none)"},
    {0},
};

/* ---------------- model_comparison ---------------- */

#define CC(f) offsetof(results_class_cmp, f)
static const cfg_field class_cmp_fields[] = {
    {.key = "measured_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = CC(measured_ms), .nullable = true},
    {.key = "modelled_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = CC(modelled_ms), .nullable = true},
    {.key = "error_pct", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = CC(error_pct), .nullable = true,
     .doc = "(modelled - measured) / measured"},
    {0},
};

/* verify and cycle: one comparison per compute class and the total (the comm class is not compared). */
#define C(f) offsetof(results_comparison, f)
#define CMP_AT(scope, c) (C(scope) + (c) * sizeof(results_class_cmp))
#define SCOPE(scope)                                                                                                   \
    static const cfg_field scope##_fields[] = {                                                                        \
        {.key = "gemm", .type = CFG_T_MAP, .offset = CMP_AT(scope, PLAN_CLASS_GEMM), .fields = class_cmp_fields},      \
        {.key = "attention", .type = CFG_T_MAP, .offset = CMP_AT(scope, PLAN_CLASS_ATTENTION),                         \
         .fields = class_cmp_fields},                                                                                  \
        {.key = "other", .type = CFG_T_MAP, .offset = CMP_AT(scope, PLAN_CLASS_OTHER), .fields = class_cmp_fields},    \
        {.key = "total", .type = CFG_T_MAP, .offset = CMP_AT(scope, PLAN_CLASS_COUNT), .fields = class_cmp_fields},    \
        {0},                                                                                                           \
    }
SCOPE(verify);
SCOPE(cycle);

static const cfg_field conditions_fields[] = {
    {.key = "tp", .type = CFG_T_INT, .offset = C(tp), .def = "0", CFG_RANGE(0, 4096)},
    {.key = "batch", .type = CFG_T_INT, .offset = C(batch), .def = "0", CFG_RANGE(0, 1 << 20)},
    {.key = "context", .type = CFG_T_INT, .offset = C(context), .def = "0", CFG_RANGE(0, 2147483647.0)},
    {.key = "graph", .type = CFG_T_BOOL, .offset = C(graph), .def = "false"},
    {.key = "run_gpu", .type = CFG_T_STRING, .offset = C(run_gpu), .def = "''"},
    {.key = "model_gpu", .type = CFG_T_STRING, .offset = C(model_gpu), .def = "''"},
    {.key = "note", .type = CFG_T_STRING, .derived = true},
    {0},
};

static const cfg_field backend_cycle_fields[] = {
    {.key = "what", .type = CFG_T_STRING, .derived = true},
    {.key = "backend", .type = CFG_T_STRING, .offset = C(cycle_backend)},
    {.key = "graph", .type = CFG_T_BOOL, .offset = C(cycle_graph)},
    {.key = "measured_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = C(cycle_measured_ms), .nullable = true},
    {.key = "modelled_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = C(cycle_modelled_ms), .nullable = true},
    {.key = "error_pct", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = C(cycle_error_pct), .nullable = true},
    {.key = "host_overhead_excluded_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = C(host_overhead_excluded_ms),
     .nullable = true},
    {.key = "allreduce_measured_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = C(allreduce_measured_us),
     .nullable = true},
    {.key = "allreduce_modelled_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = C(allreduce_modelled_us),
     .nullable = true},
    {.key = "allreduce_method", .type = CFG_T_STRING, .offset = C(allreduce_method)},
    {0},
};

const cfg_field results_comparison_fields[] = {
    {.key = "system", .type = CFG_T_STRING, .offset = C(system)},
    {.key = "what", .type = CFG_T_STRING, .derived = true},
    {.key = "conditions", .type = CFG_T_MAP, .offset = 0, .fields = conditions_fields,
     .doc = "what both sides were taken under"},
    {.key = "warnings", .type = CFG_T_STRING_LIST, .offset = C(warnings), .count_offset = C(n_warnings),
     .max_items = 16,
     .def = "[]"},
    {.key = "verify", .type = CFG_T_MAP, .offset = 0, .fields = verify_fields, .doc = "the verify pass, main stream"},
    {.key = "cycle", .type = CFG_T_MAP, .offset = 0, .fields = cycle_fields, .doc = "the whole cycle, main stream"},
    {.key = "backend_cycle", .type = CFG_T_MAP, .offset = 0, .fields = backend_cycle_fields, .nullable = true,
     .optional = true, .doc = "the timed cycle against the model of the same backend (null: a per-size policy)"},
    {0},
};

/* ---------------- import ---------------- */

#define IC(f) offsetof(results_import_coll, f)
static const cfg_field skew_fields[] = {
    {.key = "mean", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(skew_mean_us), .nullable = true},
    {.key = "p10", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(skew_p10_us), .nullable = true},
    {.key = "p50", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(skew_p50_us), .nullable = true},
    {.key = "p90", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(skew_p90_us), .nullable = true},
    {.key = "max", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(skew_max_us), .nullable = true},
    {.key = "clock_p50", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(clock_skew_p50_us), .def = "null",
     .nullable = true,
     .doc = "the ranks' clock offset, where the trace gives one"},
    {.key = "samples", .type = CFG_T_INT, .offset = IC(skew_samples), CFG_RANGE(0, 2147483647.0)},
    {0},
};

static const cfg_field coll_fields[] = {
    {.key = "kind", .type = CFG_T_ENUM, .offset = IC(kind), .choices = plan_op_kind_names},
    {.key = "calls_per_cycle", .type = CFG_T_INT, .offset = IC(calls_per_cycle), CFG_RANGE(0, 2147483647.0)},
    {.key = "call_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(call_us), .nullable = true},
    {.key = "wire_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(wire_us), .nullable = true},
    {.key = "wait_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IC(wait_us), .nullable = true,
     .doc = "waiting for the slowest rank"},
    {.key = "skew_us", .type = CFG_T_MAP, .offset = 0, .fields = skew_fields, .doc = "arrival skew across ranks"},
    {0},
};

/* kernel_us: one key per op kind that ran a kernel in the phase (absent: none). */
#define IP(f) offsetof(results_import_phase, f)
#define KERNEL_FIELD(id, name, ...)                                                                                    \
    {.key = name, .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IP(kernel_us) + PLAN_OP_##id * sizeof(double),         \
     .def = "0", .nullable = true},
static const cfg_field kernel_fields[] = {CFG_OP_LIST(KERNEL_FIELD){0}};
_Static_assert(sizeof(kernel_fields) / sizeof(kernel_fields[0]) == PLAN_OP_KIND_COUNT + 1, "one key per op kind");

static const cfg_field import_phase_fields[] = {
    {.key = "name", .type = CFG_T_CHARS, .offset = IP(name), .max_items = PLAN_NAME_MAX},
    {.key = "ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IP(ms), .nullable = true},
    {.key = "kernel_us", .type = CFG_T_MAP, .offset = 0, .fields = kernel_fields, .doc = "GPU time per op kind"},
    {.key = "unmapped_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IP(unmapped_us), .nullable = true},
    {.key = "gap_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IP(gap_us), .nullable = true},
    {.key = "lead_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IP(lead_us), .nullable = true},
    {.key = "tail_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IP(tail_us), .nullable = true},
    {.key = "collectives", .type = CFG_T_MAP_LIST, .offset = IP(colls), .count_offset = IP(n_colls), .max_items = 4096,
     .elem_size = sizeof(results_import_coll), .fields = coll_fields, .empty_ok = true},
    {0},
};

#define IN(f) offsetof(results_import_name, f)
static const cfg_field unmapped_fields[] = {
    {.key = "name", .type = CFG_T_STRING, .offset = IN(name), .doc = "a kernel name no rule maps"},
    {.key = "us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = IN(us), .nullable = true},
    {.key = "count", .type = CFG_T_INT, .offset = IN(count), CFG_RANGE(0, 2147483647.0)},
    {0},
};

const char *const results_phases_by_names[] = {"markers", "collective pattern", NULL};

#define I(f) offsetof(results_import, f)
static const cfg_field model_check_fields[] = {
    {.key = "model_cycle_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(model_cycle_ms), .nullable = true},
    {.key = "trace_cycle_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(trace_cycle_ms), .nullable = true},
    {.key = "error_pct", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(model_error_pct), .nullable = true},
    {.key = "gap_per_op_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(gap_per_op_us), .nullable = true},
    {0},
};

const cfg_field results_import_fields[] = {
    {.key = "source", .type = CFG_T_STRING, .offset = I(source), .doc = "the server the traces came from"},
    {.key = "files", .type = CFG_T_STRING_LIST, .offset = I(files), .count_offset = I(n_files), .max_items = 4096},
    {.key = "ranks", .type = CFG_T_INT, .offset = I(ranks), CFG_RANGE(1, 4096)},
    {.key = "cycles", .type = CFG_T_INT, .offset = I(cycles), CFG_RANGE(0, 2147483647.0)},
    {.key = "draft_steps", .type = CFG_T_INT, .offset = I(draft_steps), CFG_RANGE(0, 1 << 20)},
    {.key = "phases_by", .type = CFG_T_ENUM, .offset = I(phases_by), .choices = results_phases_by_names},
    {.key = "graph", .type = CFG_T_BOOL, .offset = I(graph)},
    {.key = "cycle_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(cycle_ms), .nullable = true},
    {.key = "host_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(host_ms), .nullable = true},
    {.key = "cycle_p50_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(cycle_p50_ms), .nullable = true},
    {.key = "kernel_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(kernel_us), .nullable = true},
    {.key = "named_fraction", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = I(named_fraction), .nullable = true,
     .doc = "the share of kernel time the kernel rules named"},
    {.key = "phases", .type = CFG_T_MAP_LIST, .offset = I(phases), .count_offset = I(n_phases), .max_items = 4096,
     .elem_size = sizeof(results_import_phase), .fields = import_phase_fields, .empty_ok = true},
    {.key = "unmapped", .type = CFG_T_MAP_LIST, .offset = I(unmapped), .count_offset = I(n_unmapped), .max_items = 4096,
     .elem_size = sizeof(results_import_name), .fields = unmapped_fields, .empty_ok = true},
    {.key = "model_check", .type = CFG_T_MAP, .offset = 0, .fields = model_check_fields, .optional = true,
     .doc = "the model of the system file written, against the trace"},
    {0},
};

static bool present(const cfg_node *map, const char *key)
{
    const cfg_node *n = cfg_map_get(map, key);
    return n && !(n->kind == CFG_NODE_SCALAR && !n->quoted && strcmp(n->scalar, "null") == 0);
}

void results_json_blocks_done(results_doc *d, const cfg_node *root)
{
    const cfg_node *cmp = cfg_map_get(root, "model_comparison");
    d->run.measured.has_class_cost = present(cfg_map_get(root, "measured"), "class_cost_ms");
    d->run.measured.has_class_alone = present(cfg_map_get(root, "measured"), "class_alone_ms");
    d->run.has_comparison = present(root, "model_comparison");
    d->run.comparison.has_backend_cycle = d->run.has_comparison && present(cmp, "backend_cycle");
    d->import.has_model_check = present(cfg_map_get(root, "import"), "model_check");
}

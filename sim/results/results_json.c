/* The results record ("vpsim.results/1", results_doc.h) as one schema table: it writes the document (the
 * figures to six significant digits, a field of an unavailable backend as null), reads it back with
 * file:line:col errors and gives its JSON Schema, so that `vpsim model` / `run` / `import-trace`, calibrate
 * and analysis/ agree on one description. The blocks only a run or an import writes are described in
 * results_json_blocks.c. */
#include "results_doc.h"

#include "../config/cfg_schema.h"
#include "results_json_blocks.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *const results_mode_names[] = {"model", "run", "import-trace", NULL};

_Static_assert(sizeof(plan_op_kind) == sizeof(int) && sizeof(plan_phase_kind) == sizeof(int) &&
                   sizeof(results_mode) == sizeof(int),
               "the schema binds enums as int");
_Static_assert(sizeof(results_mode_names) / sizeof(results_mode_names[0]) == RESULTS_MODE_COUNT + 1,
               "one name per mode");

#define DIGITS 6 /* every figure of the record: enough for any of them, no binary noise in a file people diff */
#define BIG HUGE_VAL /* "at least" ranges (">= lo") */

/* ---------------- a backend's row ---------------- */

/* The row of a hook (the engine block is a view of the row itself, at offset 0: the same base). */
static const results_cycle *row_of(const cfg_wctx *w) { return w->base; }
static bool unavailable(const cfg_wctx *w) { return !row_of(w)->available; }
static bool available(const cfg_wctx *w) { return row_of(w)->available; }
static bool no_memory(const cfg_wctx *w) { return !row_of(w)->mem_known; }
static bool no_nospec(const cfg_wctx *w) { return !row_of(w)->available || !(row_of(w)->nospec_tok_per_s > 0); }
static bool no_vllm(const cfg_wctx *w) { return !row_of(w)->engine_vllm[0]; }
static bool no_sglang(const cfg_wctx *w) { return !row_of(w)->engine_sglang[0]; }
static bool no_ops(const cfg_wctx *w) { return !row_of(w)->available || (!row_of(w)->op_us && !row_of(w)->ops); }

#define W(f) offsetof(results_warning, f)
static const cfg_field warning_fields[] = {
    {.key = "code", .type = CFG_T_CHARS, .offset = W(code), .max_items = (int)sizeof(((results_warning *)0)->code),
     .doc = "stable for tools"},
    {.key = "text", .type = CFG_T_CHARS, .offset = W(text), .max_items = (int)sizeof(((results_warning *)0)->text),
     .doc = "for people"},
    {0},
};

#define PH(f) offsetof(results_phase, f)
#define PH_CLASS(c) (PH(class_ms) + (c) * sizeof(double))
static const cfg_field phase_fields[] = {
    {.key = "name", .type = CFG_T_CHARS, .offset = PH(name), .max_items = PLAN_NAME_MAX},
    {.key = "kind", .type = CFG_T_ENUM, .offset = PH(kind), .choices = plan_phase_kind_names},
    {.key = "ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = PH(ms), .digits = DIGITS, .unit = "ms"},
    {.key = "gemm_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = PH_CLASS(PLAN_CLASS_GEMM), .digits = DIGITS,
     .doc = "each op's share of the critical path, by class (the four sum to ms)"},
    {.key = "attention_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = PH_CLASS(PLAN_CLASS_ATTENTION),
     .digits = DIGITS},
    {.key = "comm_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = PH_CLASS(PLAN_CLASS_COMM), .digits = DIGITS},
    {.key = "other_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = PH_CLASS(PLAN_CLASS_OTHER), .digits = DIGITS},
    {.key = "collectives", .type = CFG_T_INT, .offset = PH(collectives), CFG_RANGE(0, 1 << 24)},
    {.key = "allreduce_us", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = PH(collective_us_mean), .digits = DIGITS,
     .doc = "mean duration of the phase's allreduces (0 when none)"},
    {0},
};

#define OP(f) offsetof(results_op, f)
static const cfg_field op_fields[] = {
    {.key = "phase", .type = CFG_T_CHARS, .offset = OP(phase), .max_items = PLAN_NAME_MAX},
    {.key = "index", .type = CFG_T_INT, .offset = OP(index), CFG_RANGE(0, 1 << 20),
     .doc = "the op's place in its phase"},
    {.key = "name", .type = CFG_T_CHARS, .offset = OP(name), .max_items = PLAN_NAME_MAX},
    {.key = "kind", .type = CFG_T_ENUM, .offset = OP(kind), .choices = plan_op_kind_names},
    {.key = "layer", .type = CFG_T_INT, .offset = OP(layer), CFG_RANGE(-1, 1 << 20)},
    /* The op's size, so that `vpsim calibrate` can tell a run of other shapes (another TP, model or --set)
     * from this plan's op by op, not by names alone; runs before sizes were recorded have none. */
    {.key = "bytes", .type = CFG_T_INT64, .offset = OP(bytes), .def = "-1", CFG_RANGE(-1, 9007199254740992.0),
     .doc = "bytes the op reads and writes (-1 or absent: not recorded)"},
    {.key = "us", .type = CFG_T_DOUBLE, .offset = OP(us), .digits = DIGITS, CFG_RANGE(0, BIG), .unit = "us"},
    {0},
};

static void write_row(util_json *j, const cfg_field *fields, const void *row)
{
    util_json_obj_begin(j);
    cfg_schema_write(j, fields, row);
    util_json_obj_end(j);
}

/* An unavailable backend has no phases to show: written empty, whatever the row holds. */
static void write_phases(util_json *j, const void *slot, const cfg_wctx *w)
{
    const results_cycle *r = row_of(w);
    (void)slot;
    util_json_arr_begin(j);
    for (int i = 0; r->available && i < r->n_phases; i++)
        write_row(j, phase_fields, &r->phases[i]);
    util_json_arr_end(j);
}

/* A producer's op_us are named from the record's plan, in plan order; a loaded row has its ops. */
static void write_ops(util_json *j, const void *slot, const cfg_wctx *w)
{
    const results_cycle *r = row_of(w);
    const plan *p = ((const results_doc *)w->up->base)->plan;
    (void)slot;
    util_json_arr_begin(j);
    for (int i = 0; r->ops && i < r->n_ops; i++)
        write_row(j, op_fields, &r->ops[i]);
    int idx = 0;
    for (int ph = 0; !r->ops && p && ph < p->n_phases; ph++) {
        for (int o = 0; o < p->phases[ph].n_ops && idx < r->n_op_us; o++, idx++) {
            const plan_op *op = &p->phases[ph].ops[o];
            results_op row = {.index = o, .kind = op->kind, .layer = op->layer,
                              .bytes = llround(op->bytes_read + op->bytes_written), .us = r->op_us[idx]};
            snprintf(row.phase, sizeof(row.phase), "%s", p->phases[ph].name);
            snprintf(row.name, sizeof(row.name), "%s", op->name);
            write_row(j, op_fields, &row);
        }
    }
    util_json_arr_end(j);
}

#define R(f) offsetof(results_cycle, f)
#define R_CLASS(c) (R(verify_class_ms) + (c) * sizeof(double))
/* A figure of the row: null when the backend is not available. */
#define FIGURE(k, f, d)                                                                                                \
    {.key = k, .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = (f), .digits = DIGITS, .nullable = true,                  \
     .null_when = unavailable, .doc = d}

static const cfg_field engine_fields[] = {
    {.key = "vllm", .type = CFG_T_CHARS, .offset = R(engine_vllm),
     .max_items = (int)sizeof(((results_cycle *)0)->engine_vllm), .def = "null", .nullable = true,
     .null_when = no_vllm, .doc = "\"yes\", or \"no: why\"; null when not modelled"},
    {.key = "sglang", .type = CFG_T_CHARS, .offset = R(engine_sglang),
     .max_items = (int)sizeof(((results_cycle *)0)->engine_sglang), .def = "null", .nullable = true,
     .null_when = no_sglang},
    {0},
};

/* A row: the figures in the order people read them, then the blocks; keys added after the first runs
 * (serving figures, memory, engines, warnings, op sizes) have defaults, so older files read too. */
static int check_row(void *obj, const cfg_node *node, const char *path, cfg_error *err);

static const cfg_field row_fields[] = {
    {.key = "backend", .type = CFG_T_CHARS, .offset = R(backend),
     .max_items = (int)sizeof(((results_cycle *)0)->backend),
     .doc = "a backend, or a per-size policy(...)"},
    {.key = "available", .type = CFG_T_BOOL, .offset = R(available)},
    {.key = "reason", .type = CFG_T_CHARS, .offset = R(reason), .max_items = (int)sizeof(((results_cycle *)0)->reason),
     .nullable = true, .null_when = available, .doc = "why not, when not available"},
    FIGURE("allreduce_us", R(allreduce_us), "mean per allreduce of the verify (or decode) pass"),
    {.key = "allreduce_method", .type = CFG_T_CHARS, .offset = R(allreduce_method),
     .max_items = (int)sizeof(((results_cycle *)0)->allreduce_method), .nullable = true, .null_when = unavailable,
     .doc = "where the allreduce figure comes from"},
    FIGURE("allgather_us", R(allgather_us), NULL),
    FIGURE("verify_ms", R(verify_ms), "the target pass"),
    FIGURE("verify_gemm_ms", R_CLASS(PLAN_CLASS_GEMM), NULL),
    FIGURE("verify_attention_ms", R_CLASS(PLAN_CLASS_ATTENTION), NULL),
    FIGURE("verify_comm_ms", R_CLASS(PLAN_CLASS_COMM), NULL),
    FIGURE("verify_other_ms", R_CLASS(PLAN_CLASS_OTHER), NULL),
    FIGURE("draft_ms", R(draft_ms), "draft steps plus draft-extend"),
    FIGURE("draft_steps_ms", R(draft_steps_ms), NULL),
    FIGURE("draft_extend_ms", R(draft_extend_ms), NULL),
    FIGURE("host_ms", R(host_ms), "host overhead per cycle"),
    FIGURE("cycle_ms", R(cycle_ms), "the phases plus host overhead"),
    {.key = "tokens_per_cycle", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = R(tokens_per_cycle), .digits = DIGITS},
    FIGURE("tok_per_s", R(tok_per_s), "tokens_per_cycle / cycle seconds"),
    {.key = "tpot_ms", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = R(tpot_ms), .digits = DIGITS, .def = "null",
     .nullable = true,
     .null_when = unavailable, .doc = "time per output token per request"},
    {.key = "accepted_per_cycle", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = R(accepted_per_cycle), .digits = DIGITS,
     .def = "0",
     .doc = "draft tokens accepted per cycle"},
    {.key = "nospec_tok_per_s", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = R(nospec_tok_per_s), .digits = DIGITS,
     .def = "null",
     .nullable = true, .null_when = no_nospec, .doc = "the same backend without speculation (vpsim sweep)"},
    {.key = "memory_gib", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = R(mem_gib), .digits = DIGITS, .def = "null",
     .nullable = true,
     .null_when = no_memory, .doc = "GPU memory per rank (null: not accounted, a replay)"},
    {.key = "memory_capacity_gib", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = R(mem_capacity_gib), .digits = DIGITS,
     .def = "null",
     .nullable = true, .null_when = no_memory},
    {.key = "fits", .type = CFG_T_BOOL, .offset = R(fits), .def = "null", .nullable = true, .null_when = no_memory},
    {.key = "engine", .type = CFG_T_MAP, .offset = 0, .fields = engine_fields,
     .doc = "would vLLM / SGLang run this backend for the verify allreduce"},
    {.key = "warnings", .type = CFG_T_MAP_ARRAY, .offset = R(warnings), .count_offset = R(n_warnings),
     .max_items = RESULTS_MAX_WARNINGS, .elem_size = sizeof(results_warning), .fields = warning_fields, .def = "[]",
     .empty_ok = true, .doc = "figures that are not like for like"},
    {.key = "phases", .type = CFG_T_MAP_ARRAY, .offset = R(phases), .count_offset = R(n_phases),
     .max_items = RESULTS_MAX_PHASES, .elem_size = sizeof(results_phase), .fields = phase_fields, .empty_ok = true,
     .write = write_phases, .doc = "empty when not available"},
    {.key = "ops", .type = CFG_T_MAP_LIST, .offset = R(ops), .count_offset = R(n_ops), .max_items = 1 << 20,
     .elem_size = sizeof(results_op), .fields = op_fields, .optional = true, .empty_ok = true, .omit = no_ops,
     .write = write_ops, .doc = "each op's own time, in plan order (run, model --ops)"},
    {0},
};

/* What is not written but follows from what is: a null memory figure is an unaccounted one. */
static int check_row(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    results_cycle *r = obj;
    (void)node, (void)path, (void)err;
    r->mem_known = isfinite(r->mem_gib);
    if (isnan(r->nospec_tok_per_s))
        r->nospec_tok_per_s = 0;
    return 0;
}

/* ---------------- the document ---------------- */

/* The tag is checked before binding (results_json_bind: "not a vpsim results file"). */
static int bind_schema_tag(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f, (void)n, (void)slot, (void)path, (void)err;
    return 0;
}

static void write_schema_tag(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot, (void)w;
    util_json_str(j, RESULTS_SCHEMA);
}

#define TOK_PER_S_FORMULA "tok_per_s = tokens_per_cycle / (cycle_ms / 1000)"
static void write_tok_formula(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot, (void)w;
    util_json_str(j, TOK_PER_S_FORMULA);
}

#define D(f) offsetof(results_doc, f)
#define K_RUN (1u << RESULTS_MODE_RUN)
#define K_IMPORT (1u << RESULTS_MODE_IMPORT)
static const cfg_field doc_fields[] = {
    {.key = "schema", .type = CFG_T_CUSTOM, .bind = bind_schema_tag, .write = write_schema_tag,
     .json_schema = "{\"const\": \"" RESULTS_SCHEMA "\"}"},
    {.key = "mode", .type = CFG_T_ENUM, .offset = D(mode), .choices = results_mode_names, .discriminator = true,
     .doc = "what made it: vpsim model, run or import-trace"},
    {.key = "scenario", .type = CFG_T_STRING, .offset = D(scenario), .nullable = true},
    {.key = "scenario_path", .type = CFG_T_STRING, .offset = D(scenario_path), .nullable = true},
    {.key = "system", .type = CFG_T_STRING, .offset = D(system), .nullable = true},
    {.key = "model", .type = CFG_T_STRING, .offset = D(model), .nullable = true, .doc = "the target model"},
    {.key = "tp", .type = CFG_T_INT, .offset = D(tp), CFG_RANGE(1, 4096)},
    {.key = "batch", .type = CFG_T_INT, .offset = D(batch), CFG_RANGE(1, 1 << 20)},
    {.key = "context", .type = CFG_T_INT, .offset = D(context), CFG_RANGE(0, 2147483647.0)},
    {.key = "graph", .type = CFG_T_BOOL, .offset = D(graph), .doc = "CUDA graph (true) or eager launches"},
    {.key = "expected_tokens", .type = CFG_T_DOUBLE, CFG_NO_RANGE, .offset = D(expected_tokens), .digits = DIGITS,
     .doc = "tokens per cycle from the acceptance model"},
    {.key = "tokens_formula", .type = CFG_T_STRING, .offset = D(tokens_formula), .nullable = true},
    {.key = "tok_per_s_formula", .type = CFG_T_STRING, .derived = true, .write = write_tok_formula},
    {.key = "provenance", .type = CFG_T_STRING, .offset = D(provenance), .nullable = true},
    {.key = "backends", .type = CFG_T_MAP_LIST, .offset = D(backends), .count_offset = D(n_backends), .max_items = 4096,
     .elem_size = sizeof(results_cycle), .fields = row_fields, .post = check_row, .doc = "one row per backend"},
    /* Written by `vpsim run` (sim/cli/run_report.c) and `vpsim import-trace` (sim/cli/import_report.c). */
    {.key = "measured", .type = CFG_T_MAP, .offset = D(run.measured), .fields = results_measured_fields,
     .kinds = K_RUN, .external = true, .doc = "the timing spread and the check of a run"},
    {.key = "environment", .type = CFG_T_STRING_MAP, .offset = D(run.env), .count_offset = D(run.n_env),
     .max_items = UTIL_ENV_MAX, .kinds = K_RUN, .external = true, .doc = "device, driver and library facts"},
    {.key = "model_comparison", .type = CFG_T_MAP, .offset = D(run.comparison), .fields = results_comparison_fields,
     .nullable = true, .kinds = K_RUN, .external = true,
     .doc = "the model of the run's plan against it (null on the cpu device)"},
    {.key = "command_line", .type = CFG_T_STRING_LIST, .offset = D(run.command_line),
     .count_offset = D(run.n_command_line), .max_items = 4096, .kinds = K_RUN, .external = true},
    {.key = "import", .type = CFG_T_MAP, .offset = D(import), .fields = results_import_fields, .kinds = K_IMPORT,
     .external = true, .doc = "the server traces read back"},
    {0},
};

void results_json_write_fields(util_json *j, const results_doc *d) { cfg_schema_write(j, doc_fields, d); }

void results_json_write_warnings(util_json *j, const results_cycle *r)
{
    util_json_key(j, "warnings");
    util_json_arr_begin(j);
    for (int i = 0; i < r->n_warnings; i++)
        write_row(j, warning_fields, &r->warnings[i]);
    util_json_arr_end(j);
}

void results_json_schema(util_json *j)
{
    cfg_schema_json_schema(j, doc_fields, "vpsim results (" RESULTS_SCHEMA ")", "urn:vpsim:schema:" RESULTS_SCHEMA);
}

int results_json_bind(const cfg_node *root, results_doc *d, cfg_error *err)
{
    memset(d, 0, sizeof(*d));
    const cfg_node *schema = root->kind == CFG_NODE_MAP ? cfg_map_get(root, "schema") : NULL;
    if (!schema || schema->kind != CFG_NODE_SCALAR || strcmp(schema->scalar, RESULTS_SCHEMA) != 0) {
        cfg_errorf(err, schema ? schema : root, "not a vpsim results file: expected \"schema\": \"%s\"",
                   RESULTS_SCHEMA);
        return -1;
    }
    if (cfg_schema_bind_json(doc_fields, root, d, "", err))
        return -1;
    results_json_blocks_done(d, root);
    return 0;
}

int results_json_load(const char *path, results_doc *d, cfg_error *err)
{
    memset(d, 0, sizeof(*d));
    cfg_doc *doc = cfg_doc_load_file(path, err);
    if (!doc)
        return -1;
    const int rc = results_json_bind(cfg_doc_root(doc), d, err);
    cfg_doc_free(doc);
    return rc;
}

void results_doc_free(results_doc *d)
{
    cfg_schema_free(doc_fields, d);
    memset(d, 0, sizeof(*d));
}

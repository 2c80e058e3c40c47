/* The bench-allreduce record ("vpsim.bench_allreduce/1", exec_bench.h) as one schema table: it writes the
 * document (`vpsim bench-allreduce --format json`), reads a saved one back (--from, so that a
 * measurement can be compared with the model again without the machine) and gives its JSON Schema
 * (`vpsim schema bench`). The comparison with the model (the "model" block, each backend's
 * model_method, each row's model_us and error) is written for readers and recomputed on load. */
#include "exec_bench.h"

#include "../comm/comm_custom.h"
#include "../config/cfg_schema.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_SCHEMA "vpsim.bench_allreduce/1"

/* The bounds of what a run can have written (exec_bench.c): 1 PiB per call at most, a time of up to 1e9 us
 * (17 minutes) per call, and the job sizes and counts the options allow. A hand-edited result must not
 * carry a figure that prints as -inf%, nan or 300 digits, nor a count no run could have. */
#define MAX_BYTES 1125899906842624.0
#define MAX_US 1e9
#define MAX_GBPS 1e9

_Static_assert(sizeof(((exec_bench_result *)0)->collective) == sizeof(int) && sizeof(((exec_bench_result *)0)->p2p) ==
                   sizeof(int),
               "the schema binds enums as int");

static const exec_bench_result *result_of(const cfg_wctx *w)
{
    while (w->up)
        w = w->up;
    return w->base;
}

/* Compared with the model: the record's "model" says on what; its rows and backends carry the figures. */
static bool not_compared(const cfg_wctx *w) { return !result_of(w)->model_system[0]; }

/* ---------------- a row ---------------- */

static bool unchecked(const cfg_wctx *w) { return ((const exec_bench_row *)w->base)->wrong < 0; }

static void write_error_pct(util_json *j, const void *slot, const cfg_wctx *w)
{
    const exec_bench_row *r = w->base;
    (void)slot;
    util_json_num(j, isfinite(r->model_us) && r->time_us > 0 ? 100.0 * (r->model_us - r->time_us) / r->time_us : NAN);
}

/* A loaded row was not modelled: --from models it again (bench_attach_model). */
static int loaded_row(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    (void)node, (void)path, (void)err;
    ((exec_bench_row *)obj)->model_us = NAN;
    return 0;
}

#define RW(f) offsetof(exec_bench_row, f)
static const cfg_field row_fields[] = {
    {.key = "bytes", .type = CFG_T_INT64, .offset = RW(bytes), CFG_RANGE(1, MAX_BYTES), .unit = "B",
     .doc = "sent per rank"},
    {.key = "count", .type = CFG_T_INT64, .offset = RW(count), CFG_RANGE(1, MAX_BYTES), .doc = "elements per rank"},
    {.key = "time_us", .type = CFG_T_DOUBLE, .offset = RW(time_us), CFG_RANGE(0, MAX_US), .unit = "us",
     .doc = "per call, max over ranks"},
    {.key = "algbw_gbps", .type = CFG_T_DOUBLE, .offset = RW(algbw), CFG_RANGE(0, MAX_GBPS), .unit = "GB/s"},
    {.key = "busbw_gbps", .type = CFG_T_DOUBLE, .offset = RW(busbw), CFG_RANGE(0, MAX_GBPS), .unit = "GB/s"},
    {.key = "wrong", .type = CFG_T_INT64, .offset = RW(wrong), CFG_RANGE(0, MAX_BYTES), .nullable = true,
     .null_when = unchecked, .doc = "elements wrong over ranks and checks (null: not checked)"},
    {.key = "verify_pass", .type = CFG_T_BOOL, .offset = RW(verify_size),
     .doc = "the scenario's verify pass reduces this many elements"},
    {.key = "model_us", .type = CFG_T_DOUBLE, .offset = RW(model_us), .derived = true, .nullable = true,
     .omit = not_compared, .doc = "the model's per-call time (null: not modelled)"},
    {.key = "model_error_pct", .type = CFG_T_DOUBLE, .derived = true, .nullable = true, .omit = not_compared,
     .write = write_error_pct},
    {0},
};

/* ---------------- a backend ---------------- */

static bool ran(const cfg_wctx *w) { return ((const exec_bench_backend *)w->base)->ran; }
static bool did_not_run(const cfg_wctx *w) { return !ran(w); }

static void write_avg_busbw(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot;
    util_json_num(j, exec_bench_avg_busbw(w->base));
}

/* A backend vpsim has, or a per-size policy(...) of them. */
static int check_backend(void *obj, const cfg_node *node, const char *path, cfg_error *err)
{
    exec_bench_backend *b = obj;
    b->backend = cfg_enum_index(cfg_backend_names, b->name); /* -1: a per-size policy */
    b->model_method[0] = '\0';
    if (b->backend >= 0 || strncmp(b->name, "policy(", 7) == 0)
        return 0;
    char list[256];
    cfg_errorf(err, cfg_map_get(node, "name"), "%s.name: backend '%s' is none vpsim has; valid: %s, or policy(RULES)",
               path, b->name, cfg_enum_list(cfg_backend_names, list, sizeof(list)));
    return -1;
}

/* What check_backend accepts, for the JSON Schema: one of the backends, or policy(...). */
#define BACKEND_NAME(id, name, ...) "{\"const\": \"" name "\"}, "
#define BACKEND_NAME_SCHEMA                                                                                            \
    "{\"description\": \"a backend, or a per-size policy(...)\", \"anyOf\": [" CFG_BACKEND_LIST(BACKEND_NAME)          \
    "{\"type\": \"string\", \"pattern\": \"^policy\\\\(\", \"maxLength\": 95}]}"
_Static_assert(sizeof(((exec_bench_backend *)0)->name) == 96, "BACKEND_NAME_SCHEMA's maxLength");

#define BE(f) offsetof(exec_bench_backend, f)
static const cfg_field backend_fields[] = {
    {.key = "name", .type = CFG_T_CHARS, .offset = BE(name), .max_items = (int)sizeof(((exec_bench_backend *)0)->name),
     .json_schema = BACKEND_NAME_SCHEMA},
    {.key = "supported", .type = CFG_T_BOOL, .offset = BE(ran), .doc = "it ran here"},
    {.key = "reason", .type = CFG_T_CHARS, .offset = BE(why), .max_items = (int)sizeof(((exec_bench_backend *)0)->why),
     .nullable = true, .null_when = ran, .doc = "why not, when not supported"},
    {.key = "graph", .type = CFG_T_BOOL, .offset = BE(graph), .doc = "timed as CUDA graphs"},
    {.key = "model_method", .type = CFG_T_CHARS, .offset = BE(model_method),
     .max_items = (int)sizeof(((exec_bench_backend *)0)->model_method), .derived = true, .omit = not_compared,
     .doc = "how the model priced it"},
    {.key = "environment", .type = CFG_T_STRING_MAP, .offset = BE(env), .count_offset = BE(n_env),
     .max_items = UTIL_ENV_MAX},
    {.key = "rows", .type = CFG_T_MAP_ARRAY, .offset = BE(rows), .count_offset = BE(n_rows),
     .max_items = EXEC_BENCH_MAX_SIZES, .elem_size = sizeof(exec_bench_row), .fields = row_fields, .empty_ok = true,
     .post = loaded_row},
    {.key = "avg_busbw_gbps", .type = CFG_T_DOUBLE, .derived = true, .omit = did_not_run, .write = write_avg_busbw},
    {0},
};

/* ---------------- the record ---------------- */

static int bind_schema_tag(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f, (void)n, (void)slot, (void)path, (void)err; /* checked before binding (exec_bench_load) */
    return 0;
}

static void write_schema_tag(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot, (void)w;
    util_json_str(j, BENCH_SCHEMA);
}

static int kind_of(const cfg_wctx *w) { return exec_bench_kind(w->base); }

static void write_collective(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot;
    util_json_str(j, plan_op_kind_names[kind_of(w)]);
}

static void write_redop(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot;
    util_json_str(j, exec_bench_redop(kind_of(w)));
}

/* The custom backends ran the direct path unless --p2p sysmem. */
static void write_p2p(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot;
    util_json_str(j, comm_p2p_names[result_of(w)->p2p == COMM_P2P_SYSMEM ? COMM_P2P_SYSMEM : COMM_P2P_DIRECT]);
}

static bool not_virtual(const cfg_wctx *w) { return !result_of(w)->virtual_ranks; }
static void write_virtual_note(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot, (void)w;
    util_json_str(j, COMM_VIRTUAL_NOTE);
}

static void write_time_definition(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot, (void)w;
    util_json_str(j, "microseconds per call, max over ranks");
}

static void write_busbw_definition(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot;
    util_json_str(j, exec_bench_busbw_definition(kind_of(w)));
}

static void write_error_definition(util_json *j, const void *slot, const cfg_wctx *w)
{
    (void)slot, (void)w;
    util_json_str(j, "(model_us - time_us) / time_us, percent");
}

static bool no_compare_command(const cfg_wctx *w) { return !result_of(w)->compare_command; }

#define RE(f) offsetof(exec_bench_result, f)
static const cfg_field model_fields[] = {
    {.key = "system", .type = CFG_T_CHARS, .offset = RE(model_system),
     .max_items = (int)sizeof(((exec_bench_result *)0)->model_system)},
    {.key = "note", .type = CFG_T_CHARS, .offset = RE(model_note),
     .max_items = (int)sizeof(((exec_bench_result *)0)->model_note), .doc = "what the comparison assumes"},
    {.key = "error_definition", .type = CFG_T_STRING, .derived = true, .write = write_error_definition},
    {0},
};

/* The collectives a result can have timed (checked on load: exec_bench_check_collective). */
#define COLLECTIVES_SCHEMA                                                                                             \
    "{\"enum\": [\"allreduce\", \"allgather\", \"reduce_scatter\", \"alltoall\", \"allreduce_norm\"]}"

static const cfg_field result_fields[] = {
    {.key = "schema", .type = CFG_T_CUSTOM, .bind = bind_schema_tag, .write = write_schema_tag,
     .json_schema = "{\"const\": \"" BENCH_SCHEMA "\"}"},
    {.key = "command", .type = CFG_T_STRING, .offset = RE(command), .doc = "the measuring command line"},
    {.key = "compare_command", .type = CFG_T_STRING, .offset = RE(compare_command), .derived = true,
     .omit = no_compare_command, .doc = "the command that compared a saved result with the model (--from)"},
    {.key = "ranks", .type = CFG_T_INT, .offset = RE(ranks), CFG_RANGE(1, 4096)},
    {.key = "device", .type = CFG_T_CHARS, .offset = RE(device),
     .max_items = (int)sizeof(((exec_bench_result *)0)->device),
     .choices = cfg_device_names},
    {.key = "type", .type = CFG_T_CHARS, .offset = RE(type), .max_items = (int)sizeof(((exec_bench_result *)0)->type),
     .doc = "element type: bf16 (cuda), float (cpu)"},
    /* bf16 on cuda, float on cpu today; 1 to 16 bytes covers every type a device could reduce. */
    {.key = "elem_bytes", .type = CFG_T_INT, .offset = RE(elem_bytes), CFG_RANGE(1, 16)},
    /* Results from before --collective timed allreduces. */
    {.key = "collective", .type = CFG_T_ENUM, .offset = RE(collective), .choices = plan_op_kind_names,
     .def = "allreduce", .write = write_collective, .json_schema = COLLECTIVES_SCHEMA},
    {.key = "op", .type = CFG_T_STRING, .derived = true, .write = write_redop,
     .json_schema = "{\"description\": \"the reduction: sum, or none for a collective that only moves data\", "
                    "\"enum\": [\"sum\", \"none\"]}"},
    {.key = "iters", .type = CFG_T_INT, .offset = RE(iters), CFG_RANGE(1, 1000000)},
    {.key = "warmup", .type = CFG_T_INT, .offset = RE(warmup), CFG_RANGE(0, 1000000)},
    {.key = "graph_requested", .type = CFG_T_BOOL, .offset = RE(graph_requested)},
    {.key = "check", .type = CFG_T_BOOL, .offset = RE(check)},
    {.key = "virtual_ranks", .type = CFG_T_BOOL, .offset = RE(virtual_ranks), .doc = "several ranks shared a GPU"},
    /* Results from before --p2p ran the direct path. */
    {.key = "p2p", .type = CFG_T_ENUM, .offset = RE(p2p), .choices = comm_p2p_names, .def = "direct",
     .write = write_p2p, .doc = "the custom backends' exchange path"},
    {.key = "note", .type = CFG_T_STRING, .derived = true, .omit = not_virtual, .write = write_virtual_note},
    {.key = "time_definition", .type = CFG_T_STRING, .derived = true, .write = write_time_definition},
    {.key = "busbw_definition", .type = CFG_T_STRING, .derived = true, .write = write_busbw_definition},
    {.key = "environment", .type = CFG_T_STRING_MAP, .offset = RE(env), .count_offset = RE(n_env),
     .max_items = UTIL_ENV_MAX, .doc = "device facts"},
    {.key = "model", .type = CFG_T_MAP, .offset = 0, .fields = model_fields, .elem_size = sizeof(exec_bench_result),
     .derived = true, .nullable = true, .null_when = not_compared,
     .doc = "the model this was compared with (null: none)"},
    {.key = "backends", .type = CFG_T_MAP_LIST, .offset = RE(backends), .count_offset = RE(n_backends),
     .max_items = CFG_BACKEND_COUNT + 1, .elem_size = sizeof(exec_bench_backend), .fields = backend_fields,
     .post = check_backend},
    {.key = "wrong_total", .type = CFG_T_INT64, .offset = RE(wrong_total), CFG_RANGE(0, 1e18)},
    {0},
};

void exec_bench_json(util_json *j, const exec_bench_result *r, int argc, char **argv)
{
    util_buf cmd = {0};
    for (int i = 0; i < argc; i++)
        util_buf_printf(&cmd, "%s%s", i ? " " : "", argv[i]);
    /* Loaded from a file: the measurement's command stays, this one compares. */
    exec_bench_result w = *r;
    char empty[] = "";
    char *self = cmd.s ? cmd.s : empty;
    if (r->command && r->command[0]) {
        w.compare_command = self;
    } else {
        w.command = self;
        w.compare_command = NULL;
    }
    util_json_obj_begin(j);
    cfg_schema_write(j, result_fields, &w);
    util_json_obj_end(j);
    util_buf_free(&cmd);
}

void exec_bench_json_schema(util_json *j)
{
    cfg_schema_json_schema(j, result_fields, "vpsim bench-allreduce (" BENCH_SCHEMA ")",
                           "urn:vpsim:schema:" BENCH_SCHEMA);
}

int exec_bench_load(const char *path, exec_bench_result *r, char *err, size_t len)
{
    memset(r, 0, sizeof(*r));
    cfg_error e;
    cfg_doc *doc = cfg_doc_load_file(path, &e);
    if (!doc) {
        snprintf(err, len, "%s", e.msg);
        return -1;
    }
    const cfg_node *root = cfg_doc_root(doc);
    const cfg_node *schema = root->kind == CFG_NODE_MAP ? cfg_map_get(root, "schema") : NULL;
    const cfg_node *coll = root->kind == CFG_NODE_MAP ? cfg_map_get(root, "collective") : NULL;
    int rc = -1;
    if (!schema || schema->kind != CFG_NODE_SCALAR || strcmp(schema->scalar, BENCH_SCHEMA) != 0)
        cfg_errorf(&e, schema ? schema : root, "not a vpsim bench-allreduce result (schema " BENCH_SCHEMA ")");
    else if (cfg_schema_bind_json(result_fields, root, r, "", &e))
        ;
    else if (!plan_op_is_collective((plan_op_kind)r->collective))
        cfg_errorf(&e, coll, "collective: '%s' is not a collective (allreduce, allgather, reduce_scatter, alltoall, "
                             "allreduce_norm)",
                   plan_op_kind_names[r->collective]);
    else
        rc = 0;
    cfg_doc_free(doc);
    if (rc) {
        snprintf(err, len, "%s", e.msg);
        exec_bench_result_free(r);
    }
    return rc;
}

void exec_bench_result_free(exec_bench_result *r)
{
    cfg_schema_free(result_fields, r);
    memset(r, 0, sizeof(*r));
}

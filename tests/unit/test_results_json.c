/* One table writes and reads the results record (sim/results/results_json.c): a model's record read back
 * and written again is the same bytes, a run's up to the blocks its producer writes; the JSON binder
 * (cfg_schema_bind_json) refuses what a JSON Schema refuses, at file:line:col; and the bench record's
 * schema names the collectives its reader accepts. */
#include "../../sim/config/cfg_schema.h"
#include "../../sim/exec/exec_bench.h"
#include "../../sim/results/results_doc.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The record of `path` loaded and written again (its table's fields: the producer's blocks left out). */
static char *rewritten(const char *path)
{
    results_doc d;
    cfg_error err;
    cr_assert_eq(results_json_load(path, &d, &err), 0, "%s", err.msg);
    util_json j;
    util_json_init(&j, true);
    util_json_obj_begin(&j);
    results_json_write_fields(&j, &d);
    util_json_obj_end(&j);
    results_doc_free(&d);
    return j.out.s;
}

Test(results_json, a_model_record_reads_back_to_the_same_bytes)
{
    static const char *const files[] = {"traces/samples/model-default-rtx6000.results.json",
                                        "traces/samples/model-default-h200-none-ops.results.json",
                                        "traces/samples/model-import-fixture-h200-graph.results.json"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char *want = th_slurp(th_path(files[i])), *got = rewritten(th_path(files[i]));
        cr_assert_not_null(want);
        cr_assert_str_eq(got, want, "%s", files[i]);
        free(want);
        free(got);
    }
}

/* A run's record: the same bytes up to the end of "backends" (measured, environment, ... follow there). */
Test(results_json, a_run_record_reads_back_to_the_same_rows, .timeout = 60)
{
    char *path = th_write_temp("", 0, ".json");
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1 "
                         "--out %s", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    char *want = th_slurp(path), *got = rewritten(path);
    unlink(path);
    free(path);
    const char *tail = "\n  ]\n}\n"; /* where the writer closes after the rows */
    const size_t n = strlen(got) - strlen(tail);
    cr_assert_str_eq(got + n, tail);
    cr_assert_eq(strncmp(got, want, n), 0, "the rows differ");
    cr_assert_eq(strncmp(want + n, "\n  ],\n  \"measured\": {", 21), 0, "%.40s", want + n);
    free(want);
    free(got);
}

/* The RTX model record with the first `from` replaced by `to`: refused at `linecol` saying `what`. */
static void expect_refused(const char *from, const char *to, const char *linecol, const char *what)
{
    char *text = th_slurp(th_path("traces/samples/model-default-rtx6000.results.json"));
    char *at = strstr(text, from);
    cr_assert_not_null(at, "the record lacks '%s'", from);
    util_buf b = {0};
    util_buf_printf(&b, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    char *path = th_write_temp(b.s, b.len, ".json");
    results_doc d;
    cfg_error err;
    cr_assert_eq(results_json_load(path, &d, &err), -1, "%s -> %s accepted", from, to);
    results_doc_free(&d);
    char *where = util_xasprintf("%s:%s: ", path, linecol);
    cr_assert_not_null(strstr(err.msg, where), "want '%s' in: %s", where, err.msg);
    cr_assert_not_null(strstr(err.msg, what), "want '%s' in: %s", what, err.msg);
    free(where);
    unlink(path);
    free(path);
    util_buf_free(&b);
    free(text);
}

/* What YAML would take and a JSON Schema refuses: the JSON records are bound as JSON. */
Test(results_json, json_types_are_json_types)
{
    expect_refused("\"tp\": 8", "\"tp\": \"8\"", "8:9", "tp: expected an integer, got '8'");
    expect_refused("\"backend\": \"nccl\"", "\"backend\": 7", "18:18",
                   "backends[0].backend: expected a string (in double quotes), got 7");
    expect_refused("\"backend\": \"nccl\"", "\"backend\": null", "18:18",
                   "expected a string (in double quotes), got null");
    expect_refused("\"available\": true", "\"available\": \"true\"", "19:20", "expected true or false");
    expect_refused("\"graph\": true", "\"graph\": null", "11:12", "graph: expected true or false, got 'null'");
    expect_refused("\"mode\": \"model\"", "\"mode\": \"guess\"", "3:11",
                   "mode: unknown value 'guess'; valid choices: model, run, import-trace");
    expect_refused("\"warnings\": [],", "\"warnings\": [], \"speedup\": 2,", "46:23",
                   "unknown key 'backends[0].speedup'");
    expect_refused("\"host_ms\": 0.8,", "\"host_ms\": \"0.8\",", "32:18",
                   "backends[0].host_ms: expected a number, got '0.8'");
}

/* A block only a run (or an import) carries is refused in a model's record, and a run needs its own. */
Test(results_json, a_block_of_another_mode_is_refused)
{
    expect_refused("\"backends\": [", "\"command_line\": [], \"backends\": [", "16:19",
                   "command_line: only some records carry it, and not one whose \"mode\" is \"model\"");
    expect_refused("\"mode\": \"model\"", "\"mode\": \"run\"", "1:1", "missing required key 'measured.ranks'");
}

/* The bench record's JSON Schema lists, as the collectives, the op kinds its reader accepts there. */
Test(results_json, the_bench_schema_names_every_collective)
{
    util_json j;
    util_json_init(&j, true);
    exec_bench_json_schema(&j);
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_text(j.out.s, j.out.len, "bench.schema.json", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    const cfg_node *obj = cfg_doc_root(doc);
    obj = cfg_map_get(obj, "allOf")->items[0];
    const cfg_node *names = cfg_map_get(cfg_map_get(cfg_map_get(obj, "properties"), "collective"), "enum");
    cr_assert_not_null(names);
    size_t n = 0;
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
        if (!plan_op_is_collective((plan_op_kind)k))
            continue;
        cr_assert_lt(n, names->n, "%s missing", plan_op_kind_names[k]);
        cr_assert_str_eq(names->items[n]->scalar, plan_op_kind_names[k]);
        n++;
    }
    cr_assert_eq(n, names->n, "the schema lists more than the collectives");
    cfg_doc_free(doc);
    util_buf_free(&j.out);
}

/* vpsim schema RECORD: the JSON Schema of a record vpsim writes and reads, generated from the table that
 * does both (docs/schemas/ holds them, `make schemas` writes them, `make docs-check` compares). */
#include "cli.h"

#include "../exec/exec_bench.h"
#include "../plan/plan_json.h"
#include "../results/results_doc.h"
#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct record {
    const char *name;
    void (*schema)(util_json *j);
    const char *what;
} record;

static const record records[] = {
    {"plan", plan_json_schema, "the cycle's schedule: `vpsim plan --format json`, read back by `--plan FILE`"},
    {"results", results_json_schema, "results per backend: `vpsim model --format json`, `run --out`, `import-trace "
                                     "--breakdown`, read by `calibrate --results`"},
    {"bench", exec_bench_json_schema, "a collective benchmark: `vpsim bench-allreduce --format json`, read back by "
                                      "`--from FILE`"},
};
#define N_RECORDS (sizeof(records) / sizeof(records[0]))

static void schema_about(util_buf *out)
{
    util_buf_printf(out, "Print the JSON Schema (draft 2020-12) of a record vpsim writes and reads, generated from the\n"
                         "same table that writes and reads it. RECORD is one of:\n");
    for (size_t i = 0; i < N_RECORDS; i++)
        util_buf_printf(out, "  %-8s %s\n", records[i].name, records[i].what);
}

typedef struct schema_args {
    cli_common c; /* unused: the skeleton's common slot */
} schema_args;

static int schema_run(cli_ctx *x)
{
    char valid[256] = "";
    for (size_t i = 0; i < N_RECORDS; i++)
        snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s", i ? ", " : "", records[i].name);
    const int n = x->argc - x->optind;
    if (n != 1)
        return util_usage_error("schema", n < 1 ? "which record? (%s)" : "one record at a time (%s)", valid);
    const char *name = x->argv[x->optind];
    for (size_t i = 0; i < N_RECORDS; i++) {
        if (strcmp(name, records[i].name) != 0)
            continue;
        util_json j;
        util_json_init(&j, true);
        records[i].schema(&j);
        util_buf_printf(&j.out, "\n");
        x->out = j.out;
        x->emit = true;
        return VP_EXIT_OK;
    }
    return util_usage_error("schema", "unknown record '%s' (valid: %s)", name, valid);
}

static const cli_cmd schema_cmd = {
    .spec = {.name = "schema", .synopsis = "vpsim schema", .pos_usage = "RECORD", .pos = CLI_POS_ANY,
             .about_fn = schema_about, .examples = "vpsim schema plan > docs/schemas/plan.schema.json\n"},
    .args_size = sizeof(schema_args),
    .run = schema_run,
};

int cmd_schema(int argc, char **argv) { return cli_command_main(&schema_cmd, argc, argv); }

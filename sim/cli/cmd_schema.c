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

static void usage(void)
{
    printf("usage: vpsim schema RECORD\n\nPrint the JSON Schema (draft 2020-12) of a record vpsim writes and reads, "
           "generated from the\nsame table that writes and reads it. RECORD is one of:\n");
    for (size_t i = 0; i < N_RECORDS; i++)
        printf("  %-8s %s\n", records[i].name, records[i].what);
    printf("example: vpsim schema plan > docs/schemas/plan.schema.json\n");
}

int cmd_schema(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return VP_EXIT_OK;
    }
    char valid[256] = "";
    for (size_t i = 0; i < N_RECORDS; i++)
        snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s", i ? ", " : "", records[i].name);
    if (argc != 2)
        return cli_usage_error("schema", argc < 2 ? "which record? (%s)" : "one record at a time (%s)", valid);
    for (size_t i = 0; i < N_RECORDS; i++) {
        if (strcmp(argv[1], records[i].name) != 0)
            continue;
        util_json j;
        util_json_init(&j, true);
        records[i].schema(&j);
        util_buf_printf(&j.out, "\n");
        const int rc = cli_write_stdout(j.out.s, j.out.len);
        util_buf_free(&j.out);
        return rc;
    }
    return cli_usage_error("schema", "unknown record '%s' (valid: %s)", argv[1], valid);
}

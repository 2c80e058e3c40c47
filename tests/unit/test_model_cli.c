/* vpsim model and vpsim sweep, through the binary. */
#include "../../sim/config/cfg_tree.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/vpsim-model-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    return util_xstrdup(tmpl);
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

static double num_at(cfg_node *map, const char *key)
{
    cfg_node *n = cfg_map_get(map, key);
    cr_assert_not_null(n, "key %s missing", key);
    cr_assert_eq(n->kind, CFG_NODE_SCALAR, "key %s", key);
    return strtod(n->scalar, NULL);
}

Test(model_cli, json_follows_the_results_schema)
{
    th_result r = th_run("model configs/default.yaml --backend nccl,nccl-symm --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_text(r.out, strlen(r.out), "results.json", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    cfg_node *root = cfg_doc_root(doc);
    cr_assert_str_eq(cfg_map_get(root, "schema")->scalar, "vpsim.results/1");
    cr_assert_str_eq(cfg_map_get(root, "mode")->scalar, "model");
    cfg_node *bes = cfg_map_get(root, "backends");
    cr_assert_eq(bes->kind, CFG_NODE_SEQ);
    cr_assert_eq(bes->n, 2);
    cfg_node *nccl = bes->items[0];
    cr_assert_str_eq(cfg_map_get(nccl, "backend")->scalar, "nccl");
    static const char *const keys[] = {"allreduce_us", "verify_ms", "verify_comm_ms", "verify_gemm_ms",
                                       "verify_attention_ms", "verify_other_ms", "draft_ms", "cycle_ms",
                                       "tokens_per_cycle", "tok_per_s"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        cr_assert(num_at(nccl, keys[i]) > 0, "%s", keys[i]);
    cr_assert_float_eq(num_at(nccl, "allreduce_us"), 200.0, 1e-9);
    double v = num_at(nccl, "verify_ms"), c = num_at(nccl, "verify_comm_ms");
    cr_assert(v > 25.5 && v < 34.5 && c > 20.4 && c < 27.6, "verify %f comm %f", v, c);
    cfg_node *symm = bes->items[1];
    cr_assert_str_eq(cfg_map_get(symm, "available")->scalar, "false");
    cr_assert(strstr(cfg_map_get(symm, "reason")->scalar, "NVLink"));
    cfg_doc_free(doc);
    th_free(&r);
}

Test(model_cli, per_op_durations_come_with_ops)
{
    th_result r = th_run("model configs/default.yaml --backend none --format json --ops");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"ops\": ["), "ops array present");
    cr_assert(strstr(r.out, "\"name\": \"moe.w13\""));
    th_free(&r);
}

Test(model_cli, table_csv_and_explain)
{
    th_result t = th_run("model configs/default.yaml");
    cr_assert_eq(t.status, 0, "%s", t.err);
    for (const char *const *be = (const char *const[]){"nccl", "oneshot", "twoshot", "push", "mpi", "none", NULL};
         *be; be++)
        cr_assert(strstr(t.out, *be), "table lacks %s", *be);
    cr_assert(strstr(t.out, "tok/s"));
    th_free(&t);
    th_result c = th_run("model configs/default.yaml --backend nccl,none --format csv");
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert_eq(count_lines(c.out), 3, "header + 2 rows:\n%s", c.out);
    cr_assert(!strncmp(c.out, "backend,available,reason,allreduce_us", 37), "%s", c.out);
    th_free(&c);
    th_result e = th_run("model configs/default.yaml --backend nccl --explain --set system.measured.use=false");
    cr_assert_eq(e.status, 0, "%s", e.err);
    /* The target box as it runs (mechanism C): every ring link SHM, NCCL's search falls back and its tuning
     * picks Simple; a step = fence 1 + a flag through host memory (1.8 within a socket, 2.2 across) + a load
     * from host memory 1.2: mean (6 x 4.0 + 2 x 4.4) / 8 = 4.1; 8.4 + 14 x 4.1 + 43,008 B / (0.56 GB/s x 8 /
     * 14) = 65.8 + 134.4 = 200.2. */
    cr_assert(strstr(e.out, "ring/Simple") && strstr(e.out, "nccl_formula") && strstr(e.out, "200.2") &&
                  strstr(e.out, "falling back") && strstr(e.out, "8 SHM"),
              "%s", e.out);
    cr_assert(strstr(e.out, "one layer:") && strstr(e.out, "moe.w13") && strstr(e.out, "t_mem"), "%s", e.out);
    th_free(&e);
}

Test(model_cli, bad_input_exits_2)
{
    const char *bad[] = {
        "model configs/default.yaml --backend nccl,carrier-pigeon",
        "model configs/default.yaml --backend ''",
        "model configs/default.yaml --set system.topology.p2p=bogus",
        "model configs/default.yaml --set system.gpu.mem_efficiency=2",
        "model configs/default.yaml --set system.measured.allreduce.nccl.us=[1,2]",
        "model --plan traces/none.json",
        "model configs/default.yaml --bench 0",
        "model configs/default.yaml --set system.topology.gpus_per_switch=3",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        th_result r = th_run("%s", bad[i]);
        cr_assert_eq(r.status, 2, "%s -> %d\n%s", bad[i], r.status, r.err);
        cr_assert(strlen(r.err) > 10, "%s: no message", bad[i]);
        th_free(&r);
    }
}

Test(model_cli, out_file_is_written_atomically)
{
    char *dir = temp_dir();
    th_result r = th_run("model configs/default.yaml --backend nccl --format json --out '%s/m.json'", dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_empty(r.out);
    th_free(&r);
    th_result ls = th_sh("ls '%s'", dir);
    cr_assert_str_eq(ls.out, "m.json\n");
    th_free(&ls);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

/* ---------------- sweep ---------------- */

#define SWEEP_ARGS                                                                                                 \
    "sweep configs/default.yaml --vary system.topology.p2p=direct,sysmem,off --vary workload.context=1024,8192 "   \
    "--backend nccl,oneshot"

Test(sweep, writes_the_cartesian_product)
{
    char *dir = temp_dir();
    th_result r = th_run(SWEEP_ARGS " --out '%s/s.csv'", dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *path = util_xasprintf("%s/s.csv", dir);
    char *csv = th_slurp(path);
    cr_assert_not_null(csv);
    cr_assert_eq(count_lines(csv), 1 + 3 * 2 * 2, "%s", csv);
    cr_assert(!strncmp(csv, "system.topology.p2p,workload.context,backend,", 45), "%s", csv);
    cr_assert(strstr(csv, "\nsysmem,8192,oneshot,true,"), "%s", csv);
    cr_assert(strstr(csv, "\noff,1024,oneshot,false,oneshot needs GPU peer loads"), "%s", csv);
    th_result ls = th_sh("ls '%s'", dir);
    cr_assert_str_eq(ls.out, "s.csv\n", "no partial or temporary file is left");
    th_free(&ls);
    th_free(&r);
    free(csv);
    free(path);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

Test(sweep, an_interrupted_sweep_resumes_to_the_same_csv)
{
    char *dir = temp_dir();
    th_result full = th_run(SWEEP_ARGS " --out '%s/full.csv'", dir);
    cr_assert_eq(full.status, 0, "%s", full.err);
    th_free(&full);
    th_result part = th_run(SWEEP_ARGS " --out '%s/r.csv' --limit 4", dir);
    cr_assert_eq(part.status, 1, "stopping early is not success: %s", part.err);
    cr_assert(strstr(part.err, "after 4 of 6"), "%s", part.err);
    th_free(&part);
    char *out = util_xasprintf("%s/r.csv", dir), *partial = util_xasprintf("%s/r.csv.partial", dir);
    cr_assert_not(exists(out), "no CSV until the sweep is complete");
    cr_assert(exists(partial));
    /* A crash mid-write leaves rows without their commit line and a torn line: both are dropped. */
    FILE *f = fopen(partial, "a");
    fputs("off,1024,nccl,true,,1,x,1,1,1,1,1,1,1,1,1,1,1\noff,1024,onesh", f);
    fclose(f);
    th_result rest = th_run(SWEEP_ARGS " --out '%s/r.csv'", dir);
    cr_assert_eq(rest.status, 0, "%s", rest.err);
    cr_assert(strstr(rest.err, "resuming: 4 of 6"), "%s", rest.err);
    th_free(&rest);
    char *a = util_xasprintf("%s/full.csv", dir);
    char *x = th_slurp(a), *y = th_slurp(out);
    cr_assert_str_eq(y, x, "the resumed sweep equals an uninterrupted one");
    cr_assert_not(exists(partial), "the partial file goes once the CSV is written");
    free(x);
    free(y);
    free(a);
    free(out);
    free(partial);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

Test(sweep, a_partial_file_of_another_sweep_is_not_mixed_in)
{
    char *dir = temp_dir();
    th_result part = th_run(SWEEP_ARGS " --out '%s/r.csv' --limit 2", dir);
    cr_assert_eq(part.status, 1, "%s", part.err);
    th_free(&part);
    th_result other = th_run("sweep configs/default.yaml --vary workload.batch=1,2 --out '%s/r.csv'", dir);
    cr_assert_eq(other.status, 2, "%s", other.err);
    cr_assert(strstr(other.err, "different sweep"), "%s", other.err);
    th_free(&other);
    th_result restart = th_run("sweep configs/default.yaml --vary workload.batch=1,2 --out '%s/r.csv' --restart", dir);
    cr_assert_eq(restart.status, 0, "%s", restart.err);
    th_free(&restart);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

Test(sweep, bad_vary_keys_and_values_are_rejected_like_set)
{
    const char *bad[] = {
        "--vary system.topology.pp=direct",         /* unknown key */
        "--vary system.topology.p2p=direct,bogus",   /* bad enum value */
        "--vary parallel.tp=8,3",                    /* TP that is not a power of two */
        "--vary workload.batch=1,-4",                /* out of range */
        "--vary workload.batch=1,,2",                /* empty value */
        "--vary workload.batch",                     /* no values */
        "--vary Workload.batch=1",                   /* key syntax */
        "--vary workload.batch=1 --vary workload.batch=2", /* twice */
        "--vary workload.batch=1 --set workload.batch=2",  /* both */
        "--vary workload=1",                         /* a section, not a key */
    };
    char *dir = temp_dir();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        th_result r = th_run("sweep configs/default.yaml %s --out '%s/b.csv'", bad[i], dir);
        cr_assert_eq(r.status, 2, "%s -> %d\n%s", bad[i], r.status, r.err);
        cr_assert(strlen(r.err) > 10, "%s: no message", bad[i]);
        th_free(&r);
    }
    th_result noout = th_run("sweep configs/default.yaml --vary workload.batch=1");
    cr_assert_eq(noout.status, 2);
    cr_assert(strstr(noout.err, "--out"), "%s", noout.err);
    th_free(&noout);
    th_result ls = th_sh("ls '%s' | wc -l", dir);
    cr_assert_str_eq(ls.out, "0\n", "nothing written for rejected sweeps");
    th_free(&ls);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

Test(sweep, combinations_that_fail_only_together_become_rows_with_the_reason)
{
    char *dir = temp_dir();
    th_result r = th_run("sweep configs/default.yaml --vary speculative.steps=2,3 --vary "
                         "speculative.num_draft_tokens=3,4 --backend nccl --out '%s/j.csv'",
                         dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "2 combination(s) could not be modelled"), "%s", r.err);
    char *path = util_xasprintf("%s/j.csv", dir);
    char *csv = th_slurp(path);
    cr_assert(strstr(csv, "\n2,3,nccl,true,"), "%s", csv);
    cr_assert(strstr(csv, "\n3,4,nccl,true,"), "%s", csv);
    cr_assert(strstr(csv, "\n3,3,nccl,false,") && strstr(csv, "inconsistent"), "%s", csv);
    free(csv);
    free(path);
    th_free(&r);
    th_result rm = th_sh("rm -rf '%s'", dir);
    th_free(&rm);
    free(dir);
}

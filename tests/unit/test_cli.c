/* The vpsim binary: `vpsim plan` output (JSON, CSV, table), the plan JSON round trip through --plan,
 * --out, help. The bad inputs are in test_cli_bad.c. */
#include "../../sim/config/cfg.h"
#include "../../sim/plan/plan.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------- helpers ---------------- */

static char *slurp_file(const char *path)
{
    char *s = th_slurp(path);
    cr_assert_not_null(s, "cannot open %s", path);
    return s;
}

/* Parse JSON text (libyaml reads JSON) into a node tree; asserts success. */
static cfg_doc *parse_json(const char *text)
{
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text(text, strlen(text), "vpsim-output", false, &err);
    cr_assert_not_null(doc, "output is not JSON: %s", err.msg);
    cr_assert_eq(cfg_doc_root(doc)->kind, CFG_NODE_MAP);
    return doc;
}

static const cfg_node *json_phase(cfg_doc *doc, const char *name)
{
    const cfg_node *phases = cfg_map_get(cfg_doc_root(doc), "phases");
    cr_assert_not_null(phases);
    cr_assert_eq(phases->kind, CFG_NODE_SEQ);
    for (size_t i = 0; i < phases->n; i++) {
        const cfg_node *n = cfg_map_get(phases->items[i], "name");
        if (n && !strcmp(n->scalar, name))
            return phases->items[i];
    }
    cr_assert_fail("no phase '%s' in the JSON", name);
    return NULL;
}

static long long json_int(const cfg_node *map, const char *dotted)
{
    const cfg_node *n = cfg_node_at(map, dotted);
    cr_assert_not_null(n, "no key '%s'", dotted);
    cr_assert_eq(n->kind, CFG_NODE_SCALAR, "'%s' is not a scalar", dotted);
    long long v;
    cr_assert(cfg_parse_int(n->scalar, &v), "'%s' = '%s' is not an integer", dotted, n->scalar);
    return v;
}

static double json_num(const cfg_node *map, const char *dotted)
{
    const cfg_node *n = cfg_node_at(map, dotted);
    cr_assert_not_null(n, "no key '%s'", dotted);
    double v;
    cr_assert(cfg_parse_double(n->scalar, &v), "'%s' = '%s' is not a number", dotted, n->scalar);
    return v;
}

/* The phase's allreduces: the summary's count and payload list, and the op list, all agree. */
static void json_assert_allreduces(const cfg_node *ph, long long count, long long bytes)
{
    cr_assert_eq(json_int(ph, "summary.allreduce_count"), count);
    const cfg_node *list = cfg_node_at(ph, "summary.allreduce_bytes");
    cr_assert_not_null(list);
    cr_assert_eq((long long)list->n, count);
    char want[32];
    snprintf(want, sizeof(want), "%lld", bytes);
    for (size_t i = 0; i < list->n; i++)
        cr_assert_str_eq(list->items[i]->scalar, want, "allreduce %zu", i);
    const cfg_node *ops = cfg_map_get(ph, "ops");
    long long seen = 0;
    for (size_t i = 0; i < ops->n; i++) {
        const cfg_node *kind = cfg_map_get(ops->items[i], "kind");
        if (!strcmp(kind->scalar, "allreduce")) {
            seen++;
            cr_assert_eq(json_int(ops->items[i], "payload_bytes"), bytes);
            cr_assert_eq(cfg_map_get(ops->items[i], "ranks")->n, 8);
        }
    }
    cr_assert_eq(seen, count);
}

/* ---------------- vpsim plan --format json ---------------- */

Test(cli_plan, default_json_verify_has_123_allreduces_of_43008_bytes)
{
    th_result r = th_run("plan configs/default.yaml --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    cr_assert_str_eq(cfg_map_get(cfg_doc_root(doc), "schema")->scalar, "vpsim.plan/1");
    cr_assert_eq(json_int(cfg_doc_root(doc), "ranks"), 8);
    const cfg_node *v = json_phase(doc, "verify");
    cr_assert_eq(json_int(v, "tokens"), 3);
    json_assert_allreduces(v, 123, 43008);
    cr_assert_eq(json_int(v, "summary.allgather_count"), 1);
    cr_assert_eq(json_int(v, "summary.allgather_bytes"), 3LL * 20480 * 2);
    /* Each draft step's collectives are listed too. */
    const cfg_node *d1 = json_phase(doc, "draft_1");
    json_assert_allreduces(d1, 3, 14336);
    cr_assert_eq(json_int(d1, "summary.allgather_count"), 1);
    json_assert_allreduces(json_phase(doc, "draft_extend"), 3, 43008);
    cfg_doc_free(doc);
    th_free(&r);
}

Test(cli_plan, three_steps_give_57344_byte_allreduces)
{
    th_result r = th_run("plan configs/default.yaml --set speculative.steps=3 --set speculative.num_draft_tokens=4 "
                         "--format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    cr_assert_eq(cfg_map_get(cfg_doc_root(doc), "phases")->n, 4);
    const cfg_node *v = json_phase(doc, "verify");
    cr_assert_eq(json_int(v, "tokens"), 4);
    json_assert_allreduces(v, 123, 57344);
    json_assert_allreduces(json_phase(doc, "draft_1"), 3, 14336);
    json_assert_allreduces(json_phase(doc, "draft_2"), 3, 14336);
    json_assert_allreduces(json_phase(doc, "draft_extend"), 3, 57344);
    cfg_doc_free(doc);
    th_free(&r);
}

Test(cli_plan, inconsistent_steps_and_draft_tokens_is_an_error)
{
    /* default.yaml derives num_draft_tokens from steps; an explicit, inconsistent value is an error. */
    th_result r = th_run("plan configs/default.yaml --set speculative.steps=3 --set speculative.num_draft_tokens=3");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "--set 'speculative.num_draft_tokens=3': "), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "steps + 1 = 4"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "inconsistent"), "%s", r.err);
    th_free(&r);

    r = th_run("plan configs/default.yaml --set speculative.num_draft_tokens=4");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "--set 'speculative.num_draft_tokens=4': "), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "steps + 1 = 3"), "%s", r.err);
    th_free(&r);

    r = th_run("plan configs/default.yaml --set speculative.steps=3 --format json");
    cr_assert_eq(r.status, 0, "steps alone: num_draft_tokens follows: %s", r.err);
    cr_assert_not_null(strstr(r.out, "\"tokens\": 4"), "%s", r.out);
    th_free(&r);
}

Test(cli_plan, no_speculation_is_one_decode_phase)
{
    th_result r = th_run("plan configs/default.yaml --set speculative.algorithm=none --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    const cfg_node *phases = cfg_map_get(cfg_doc_root(doc), "phases");
    cr_assert_eq(phases->n, 1);
    const cfg_node *d = json_phase(doc, "decode");
    cr_assert_eq(json_int(d, "tokens"), 1);
    json_assert_allreduces(d, 123, 14336);
    cr_assert_eq(json_int(d, "summary.allgather_count"), 1);
    cr_assert_float_eq(json_num(cfg_doc_root(doc), "expected_tokens"), 1.0, 1e-12);
    cfg_doc_free(doc);
    th_free(&r);
}

Test(cli_plan, default_scenario_is_the_default)
{
    th_result a = th_run("plan --format json");
    th_result b = th_run("plan configs/default.yaml --format json");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_str_eq(a.out, b.out);
    th_free(&a);
    th_free(&b);
}

Test(cli_plan, table_shows_each_phase_and_the_payloads)
{
    th_result r = th_run("plan configs/default.yaml");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "draft_1"));
    cr_assert_not_null(strstr(r.out, "verify"));
    cr_assert_not_null(strstr(r.out, "draft_extend"));
    cr_assert_not_null(strstr(r.out, "123 x 43008 B"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "3 x 14336 B"), "%s", r.out);
    th_free(&r);
}

/* ---------------- CSV ---------------- */

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

Test(cli_plan, csv_has_one_row_per_op_plus_a_header)
{
    const char *scenarios[] = {"configs/default.yaml", "configs/tiny.yaml"};
    for (size_t s = 0; s < 2; s++) {
        cfg_scenario sc;
        cfg_error err = {{0}};
        cr_assert_eq(cfg_scenario_load(th_path(scenarios[s]), NULL, 0, NULL, &sc, &err), 0, "%s", err.msg);
        plan p;
        char why[256];
        cr_assert_eq(plan_build(&sc, &p, why, sizeof(why)), 0, "%s", why);

        th_result r = th_run("plan %s --format csv", scenarios[s]);
        cr_assert_eq(r.status, 0, "%s", r.err);
        char *save = NULL;
        char *line = strtok_r(r.out, "\n", &save);
        cr_assert_not_null(line);
        cr_assert(strncmp(line, "phase,index,kind,name,layer,", 28) == 0, "header: %s", line);
        int commas = count_char(line, ',');
        int rows = 0, phase_i = 0, op_i = 0;
        while ((line = strtok_r(NULL, "\n", &save))) {
            cr_assert_eq(count_char(line, ','), commas, "row %d has a different column count: %s", rows, line);
            while (phase_i < p.n_phases && op_i == p.phases[phase_i].n_ops) {
                phase_i++;
                op_i = 0;
            }
            cr_assert_lt(phase_i, p.n_phases, "more rows than ops");
            char *want = util_xasprintf("%s,%d,%s,%s,", p.phases[phase_i].name, op_i,
                                        plan_op_kind_names[p.phases[phase_i].ops[op_i].kind],
                                        p.phases[phase_i].ops[op_i].name);
            cr_assert(strncmp(line, want, strlen(want)) == 0, "row %d: %s\nwant: %s", rows, line, want);
            free(want);
            op_i++;
            rows++;
        }
        int total = 0;
        for (int i = 0; i < p.n_phases; i++)
            total += p.phases[i].n_ops;
        cr_assert_eq(rows, total, "%s: %d rows for %d ops", scenarios[s], rows, total);
        th_free(&r);
        plan_free(&p);
        cfg_scenario_free(&sc);
    }
}

/* ---------------- plan JSON round trip, --plan, --out ---------------- */

static char *make_temp_dir(void)
{
    char *dir = util_xstrdup("/tmp/vpsim-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    th_result r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}

Test(cli_roundtrip, json_loaded_back_gives_identical_json)
{
    const char *args[] = {"configs/default.yaml", "configs/tiny.yaml",
                          "configs/default.yaml --set speculative.algorithm=none",
                          "configs/default.yaml --set parallel.tp=16 --set workload.batch=4"};
    char *dir = make_temp_dir();
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
        th_result a = th_run("plan %s --format json --out %s/a.json", args[i], dir);
        cr_assert_eq(a.status, 0, "%s", a.err);
        cr_assert_str_eq(a.out, "", "--out writes nothing to stdout");
        th_result b = th_run("plan --plan %s/a.json --format json --out %s/b.json", dir, dir);
        cr_assert_eq(b.status, 0, "%s", b.err);
        char *pa = util_xasprintf("%s/a.json", dir), *pb = util_xasprintf("%s/b.json", dir);
        char *ja = slurp_file(pa), *jb = slurp_file(pb);
        cr_assert_gt(strlen(ja), 100);
        cr_assert(strcmp(ja, jb) == 0, "%s: the reloaded plan writes different JSON", args[i]);
        /* The loaded plan prints the same table rows and CSV as the built one. */
        th_result ca = th_run("plan %s --format csv", args[i]);
        th_result cb = th_run("plan --plan %s --format csv", pa);
        cr_assert_eq(cb.status, 0, "%s", cb.err);
        cr_assert_str_eq(ca.out, cb.out);
        free(ja);
        free(jb);
        free(pa);
        free(pb);
        th_free(&a);
        th_free(&b);
        th_free(&ca);
        th_free(&cb);
    }
    remove_dir(dir);
    free(dir);
}

Test(cli_roundtrip, an_edited_shape_changes_the_recomputed_flops)
{
    char *dir = make_temp_dir();
    th_result a = th_run("plan configs/default.yaml --format json --out %s/a.json", dir);
    cr_assert_eq(a.status, 0, "%s", a.err);
    char *pa = util_xasprintf("%s/a.json", dir);
    char *text = slurp_file(pa);

    /* Double o_proj's k (1024 -> 2048) in the first layer of the verify pass. */
    char *verify = strstr(text, "\"name\": \"verify\"");
    cr_assert_not_null(verify);
    char *op = strstr(verify, "\"name\": \"o_proj\"");
    cr_assert_not_null(op);
    char *k = strstr(op, "\"k\": 1024,");
    cr_assert_not_null(k);
    cr_assert_lt(k, strchr(op, '}'), "k belongs to the o_proj op");
    size_t head = (size_t)(k - text);
    char *edited = util_xasprintf("%.*s\"k\": 2048,%s", (int)head, text, k + strlen("\"k\": 1024,"));
    char *pe = util_xasprintf("%s/edited.json", dir);
    FILE *f = fopen(pe, "w");
    cr_assert_not_null(f);
    fputs(edited, f);
    fclose(f);

    th_result b = th_run("plan --plan %s --format json", pe);
    cr_assert_eq(b.status, 0, "%s", b.err);
    cfg_doc *before = parse_json(text), *after = parse_json(b.out);
    const cfg_node *vb = json_phase(before, "verify"), *va = json_phase(after, "verify");
    double d_flops = json_num(va, "summary.flops") - json_num(vb, "summary.flops");
    double d_bytes = json_num(va, "summary.weight_bytes") - json_num(vb, "summary.weight_bytes");
    cr_assert_float_eq(d_flops, 2.0 * 3 * 1024 * 7168, 1.0, "flops grew by %.0f", d_flops);
    cr_assert_float_eq(d_bytes, 1024.0 * 7168 * 2, 1.0, "weight bytes grew by %.0f", d_bytes);
    /* The op itself carries the recomputed figure, not the stale one from the file. */
    const cfg_node *ops = cfg_map_get(va, "ops");
    int found = 0;
    for (size_t i = 0; i < ops->n && !found; i++) {
        const cfg_node *o = ops->items[i];
        if (!strcmp(cfg_map_get(o, "name")->scalar, "o_proj") && json_int(o, "k") == 2048) {
            cr_assert_float_eq(json_num(o, "flops"), 2.0 * 3 * 2048 * 7168, 1.0);
            found = 1;
        }
    }
    cr_assert(found, "the edited op is in the reloaded plan");
    /* Other phases are untouched. */
    cr_assert_float_eq(json_num(json_phase(after, "draft_1"), "summary.flops"),
                       json_num(json_phase(before, "draft_1"), "summary.flops"), 1e-6);
    cfg_doc_free(before);
    cfg_doc_free(after);
    free(edited);
    free(text);
    free(pa);
    free(pe);
    th_free(&a);
    th_free(&b);
    remove_dir(dir);
    free(dir);
}

Test(cli_roundtrip, hand_written_plan_loads_with_recomputed_costs)
{
    th_result r = th_run("plan --plan tests/data/plan_hand.json --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cfg_doc *doc = parse_json(r.out);
    const cfg_node *ph = json_phase(doc, "decode");
    cr_assert_float_eq(json_num(ph, "summary.flops"), 2.0 * 2 * 8 * 4 + 16.0, 1e-9, "gemm + the reduce's adds");
    cr_assert_eq(json_int(ph, "summary.allreduce_count"), 1);
    cfg_doc_free(doc);
    th_free(&r);

    r = th_run("plan --plan tests/data/plan_hand.json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "loaded from JSON"), "%s", r.out);
    th_free(&r);
}

Test(cli_out, writes_atomically_and_leaves_no_temp_file)
{
    char *dir = make_temp_dir();
    th_result a = th_run("plan configs/tiny.yaml --format json --out %s/plan.json", dir);
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_eq(dir_entries(dir), 1, "only the output file is left");
    th_result s = th_run("plan configs/tiny.yaml --format json");
    char *p = util_xasprintf("%s/plan.json", dir);
    char *written = slurp_file(p);
    cr_assert_str_eq(written, s.out, "--out writes what stdout would show");
    free(written);

    /* Replacing an existing file. */
    th_result c = th_run("plan configs/tiny.yaml --format csv --out %s/plan.json", dir);
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert_eq(dir_entries(dir), 1, "still only the output file");
    written = slurp_file(p);
    cr_assert(strncmp(written, "phase,index,", 12) == 0, "the file now holds the CSV");
    free(written);

    /* A directory that does not exist: a bad request, refused before any work; nothing created. */
    th_result m = th_run("plan configs/tiny.yaml --out %s/missing/plan.json", dir);
    cr_assert_eq(m.status, 2, "status %d: %s", m.status, m.err);
    cr_assert_neq(m.err[0], '\0');
    cr_assert_eq(dir_entries(dir), 1);
    free(p);
    th_free(&a);
    th_free(&s);
    th_free(&c);
    th_free(&m);
    remove_dir(dir);
    free(dir);
}

/* ---------------- help ---------------- */

Test(cli_help, plan_help_lists_every_option_with_an_example)
{
    th_result r = th_run("plan --help");
    cr_assert_eq(r.status, 0);
    const char *opts[] = {"--set", "--system", "--format", "--out", "--plan", "--help", "example"};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        cr_assert_not_null(strstr(r.out, opts[i]), "plan --help lacks '%s'", opts[i]);
    th_free(&r);
    r = th_run("--help");
    cr_assert_eq(r.status, 0);
    cr_assert_not_null(strstr(r.out, "plan"));
    th_free(&r);
}

/* The help is generated from CFG_BACKEND_LIST and CFG_DEVICE_LIST: every backend and device, with
 * its line (it once listed nccl, mpi, none and model only). */
Test(cli_help, run_help_lists_every_backend_and_device)
{
    th_result r = th_run("run --help");
    cr_assert_eq(r.status, 0, "%s", r.err);
    for (int b = 0; b < CFG_BACKEND_COUNT; b++) {
        char *line = util_xasprintf("%-10s %s", cfg_backend_names[b], cfg_backend_help[b]);
        cr_assert_not_null(strstr(r.out, line), "run --help lacks '%s':\n%s", line, r.out);
        free(line);
    }
    for (int d = 0; d < CFG_DEVICE_COUNT; d++)
        cr_assert_not_null(strstr(r.out, cfg_device_help[d]), "run --help lacks device %s", cfg_device_names[d]);
    th_free(&r);
}

Test(cli_help, config_reference_lists_the_keys)
{
    th_result r = th_run("config-reference");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *keys[] = {"`parallel.tp`", "`speculative.steps`", "`speculative.topk`", "`speculative.num_draft_tokens`",
                          "`speculative.acceptance`", "`workload.batch`", "`workload.context`",
                          "`weights.routed_experts.group`"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        cr_assert_not_null(strstr(r.out, keys[i]), "config-reference lacks %s", keys[i]);
    th_free(&r);
}

Test(cli_set, system_p2p_is_a_short_form_of_the_topology_key)
{
    th_result a = th_run("model configs/default.yaml --backend oneshot --format csv --set system.p2p=sysmem");
    th_result b = th_run("model configs/default.yaml --backend oneshot --format csv --set system.topology.p2p=sysmem");
    th_result c = th_run("model configs/default.yaml --backend oneshot --format csv");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_str_eq(a.out, b.out, "the alias must mean the same key");
    cr_assert_str_neq(a.out, c.out, "sysmem must change the one-shot allreduce");
    th_free(&a);
    th_free(&b);
    th_free(&c);
}

/* --class-cost times the cycle again without each compute class, and says so in the results; without
 * the flag there is no such key. That leaving GEMMs or attention out shortens the cycle (cost > 0) is a
 * timing claim: on a busy machine two timed runs can swap, so it lives in `make bench`
 * (bench/run_bench.sh), not here. */
Test(cli_run, class_cost_times_the_cycle_without_each_class, .timeout = 120)
{
    char dir[] = "/tmp/vpsim-classcost-XXXXXX", path[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/r.json", dir);
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --iters 7 --warmup 1 --class-cost --out %s",
                         path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "class cost (cycle less the cycle without it): gemm "), "%s", r.out);
    char *r_out_copy = util_xstrdup(r.out);
    th_free(&r);
    char *text = th_slurp(path);
    cfg_doc *doc = parse_json(text);
    const cfg_node *root = cfg_doc_root(doc);
    const double cycle = json_num(root, "measured.cycle_median_ms"), p90 = json_num(root, "measured.cycle_p90_ms");
    const double gemm = json_num(root, "measured.class_cost_ms.gemm");
    const double attn = json_num(root, "measured.class_cost_ms.attention");
    (void)json_num(root, "measured.class_cost_ms.other");
    /* Each a difference of two timed medians: finite, and no larger in size than a cycle can be. */
    cr_assert(isfinite(gemm) && isfinite(attn), "gemm %g attention %g ms", gemm, attn);
    cr_assert(cycle > 0 && p90 >= cycle, "cycle %g p90 %g ms", cycle, p90);
    cr_assert_not_null(cfg_node_at(root, "measured.class_cost_ms.method"));
    /* Each class alone: its ops only, less the cycle with none (which keeps the launch and the timers:
     * more than nothing, less than the cycle). */
    const double alone_gemm = json_num(root, "measured.class_alone_ms.gemm");
    const double none = json_num(root, "measured.class_alone_ms.none");
    (void)json_num(root, "measured.class_alone_ms.attention");
    (void)json_num(root, "measured.class_alone_ms.other");
    cr_assert(isfinite(alone_gemm) && none > 0 && none < cycle, "gemm alone %g, none %g of a %g ms cycle", alone_gemm,
              none, cycle);
    cr_assert_not_null(strstr(r_out_copy, "class alone (its ops only, less none "), "%s", r_out_copy);
    free(r_out_copy);
    cfg_doc_free(doc);
    free(text);
    r = th_run("run configs/tiny.yaml --device cpu --backend none --iters 2 --warmup 1 --out %s", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    text = th_slurp(path);
    cr_assert_null(strstr(text, "class_cost_ms"));
    cr_assert_null(strstr(text, "class_alone_ms"));
    free(text);
    th_free(&r);
    unlink(path);
    rmdir(dir);
}

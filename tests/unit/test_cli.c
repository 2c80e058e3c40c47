/* The vpsim binary: `vpsim plan` output (JSON, CSV, table), the plan JSON round trip through --plan,
 * --out, and the bad inputs that must each give a `file:line:col` (or `--set`) message and exit 2.
 * Fixtures live in tests/data/ (tests/data/bad/ for bad inputs; each says what is wrong and where). */
#include "../../sim/config/cfg.h"
#include "../../sim/plan/plan.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------- helpers ---------------- */

static char *slurp_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    util_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        util_buf_printf(&b, "%.*s", (int)n, chunk);
    fclose(f);
    return b.s ? b.s : util_xstrdup("");
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

/* A bad input: exit status 2, nothing on stdout, and stderr holding `where` and `what`. */
static void expect_bad_run(th_result r, const char *where, const char *what)
{
    cr_assert_eq(r.status, 2, "exit status %d, want 2; stderr: %s", r.status, r.err);
    cr_assert_str_eq(r.out, "", "nothing on stdout for a bad input");
    cr_assert_not_null(strstr(r.err, where), "stderr lacks '%s':\n%s", where, r.err);
    cr_assert_not_null(strstr(r.err, what), "stderr lacks '%s':\n%s", what, r.err);
    th_free(&r);
}

/* A fixture scenario in tests/data/bad/ whose error is at `linecol` ("7:3"). */
static void expect_bad_fixture(const char *name, const char *linecol, const char *what)
{
    char *where = util_xasprintf("tests/data/bad/%s:%s: ", name, linecol);
    expect_bad_run(th_run("plan tests/data/bad/%s", name), where, what);
    free(where);
}

static char *temp_text(const char *text, size_t len)
{
    return th_write_temp(text, len, ".yaml");
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
    th_result r = th_run("plan configs/default.yaml --set speculative.steps=3");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "configs/default.yaml:"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "steps + 1 = 4"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "inconsistent"), "%s", r.err);
    th_free(&r);

    r = th_run("plan configs/default.yaml --set speculative.num_draft_tokens=4");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "--set 'speculative.num_draft_tokens=4': "), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "steps + 1 = 3"), "%s", r.err);
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

    /* A directory that does not exist: a runtime failure, and nothing created. */
    th_result m = th_run("plan configs/tiny.yaml --out %s/missing/plan.json", dir);
    cr_assert_eq(m.status, 1, "status %d: %s", m.status, m.err);
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

/* ---------------- TP degrees through the CLI ---------------- */

Test(cli_tp, powers_of_two_build_and_tp3_is_rejected)
{
    const int tps[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < 5; i++) {
        th_result r = th_run("plan configs/default.yaml --set parallel.tp=%d --format csv", tps[i]);
        cr_assert_eq(r.status, 0, "default at TP=%d: %s", tps[i], r.err);
        th_free(&r);
        if (tps[i] <= 8) {
            r = th_run("plan configs/tiny.yaml --set parallel.tp=%d --format csv", tps[i]);
            cr_assert_eq(r.status, 0, "tiny at TP=%d: %s", tps[i], r.err);
            th_free(&r);
        }
    }
    expect_bad_run(th_run("plan configs/default.yaml --set parallel.tp=3"), "--set 'parallel.tp=3': ",
                   "must be 1, 2, 4, 8 or 16");
    /* tiny-moe has 8 heads. */
    expect_bad_run(th_run("plan configs/tiny.yaml --set parallel.tp=16"), "--set 'parallel.tp=16': ",
                   "does not divide model attention.heads=8");
}

/* ---------------- bad inputs: file:line:col, exit status 2 ---------------- */

Test(cli_bad, yaml_syntax_error)
{
    expect_bad_fixture("syntax_error.yaml", "8:9", "YAML syntax error");
}

Test(cli_bad, unknown_key_lists_the_valid_keys)
{
    expect_bad_fixture("unknown_key.yaml", "7:3", "unknown key 'parallel.tpp'; valid keys here: tp");
}

Test(cli_bad, unknown_key_in_the_model_file)
{
    expect_bad_run(th_run("plan tests/data/bad/model_unknown_key.yaml"),
                   "tests/data/bad/model_unknown_key.model.yaml:10:1: ",
                   "unknown key 'hiden'; valid keys here: name, source, arch, layers, first_k_dense, hidden,");
}

Test(cli_bad, wrong_type)
{
    expect_bad_fixture("wrong_type.yaml", "7:7", "parallel.tp: expected an integer, got 'eight'");
}

Test(cli_bad, quoted_number_is_a_string)
{
    expect_bad_fixture("quoted_number.yaml", "7:7", "parallel.tp: expected an integer, got '8'");
}

Test(cli_bad, negative_size)
{
    expect_bad_fixture("negative_size.yaml", "7:10", "workload.batch: -4 is out of range (must be in [1, 4096])");
}

Test(cli_bad, out_of_range_list_item)
{
    expect_bad_fixture("out_of_range.yaml", "7:21", "speculative.acceptance[1]: 1.5 is out of range");
}

Test(cli_bad, tp_that_does_not_divide_the_heads)
{
    expect_bad_fixture("tp_heads.yaml", "7:7", "parallel.tp=16 does not divide model attention.heads=8 (");
    /* ... and the message points at the heads in the model file too. */
    th_result r = th_run("plan tests/data/bad/tp_heads.yaml");
    cr_assert_not_null(strstr(r.err, "tiny-moe.yaml:"), "%s", r.err);
    th_free(&r);
}

Test(cli_bad, missing_model_file)
{
    expect_bad_fixture("missing_model.yaml", "3:8", "no-such-model.yaml");
    th_result r = th_run("plan tests/data/bad/missing_model.yaml");
    cr_assert_not_null(strstr(r.err, "cannot be read"), "%s", r.err);
    th_free(&r);
}

Test(cli_bad, model_path_that_is_a_directory)
{
    expect_bad_fixture("model_is_directory.yaml", "3:8", "is not a regular file");
    expect_bad_run(th_run("plan configs/tiny.yaml --set model=models"), "--set 'model=models': ",
                   "is not a regular file");
}

Test(cli_bad, missing_scenario_file)
{
    expect_bad_run(th_run("plan tests/data/bad/does-not-exist.yaml"), "tests/data/bad/does-not-exist.yaml: ",
                   "cannot open");
}

Test(cli_bad, alias_bomb)
{
    expect_bad_fixture("alias_bomb.yaml", "7:4", "YAML anchors are not supported (anchor '&a')");
}

Test(cli_bad, anchor)
{
    expect_bad_fixture("anchor.yaml", "2:7", "YAML anchors are not supported");
}

Test(cli_bad, alias)
{
    expect_bad_fixture("alias.yaml", "3:14", "YAML aliases are not supported");
}

Test(cli_bad, empty_file)
{
    expect_bad_fixture("empty.yaml", "1:1", "file is empty");
    expect_bad_fixture("comments_only.yaml", "1:1", "file is empty");
}

Test(cli_bad, binary_file)
{
    /* Bytes with NULs: the position of the first one. */
    const char bin[] = "\x7f" "ELF\x02\x01\x01\x00\x00\x00junk\xff\xfe";
    char *path = temp_text(bin, sizeof(bin) - 1);
    char *where = util_xasprintf("%s:1:8: ", path);
    expect_bad_run(th_run("plan %s", path), where, "contains NUL bytes; this looks like a binary file");
    unlink(path);
    free(path);
    free(where);

    /* Bytes that are not UTF-8 (and hold no NUL): the position of the first bad byte. */
    const char latin1[] = "name: caf\xe9\nparallel: {tp: 2}\n";
    path = temp_text(latin1, sizeof(latin1) - 1);
    where = util_xasprintf("%s:1:10: ", path);
    expect_bad_run(th_run("plan %s", path), where, "not valid UTF-8");
    unlink(path);
    free(path);
    free(where);

    /* The vpsim executable itself. */
    const char *bin_path = getenv("VPSIM_BIN");
    if (bin_path) {
        where = util_xasprintf("%s:1:", bin_path);
        expect_bad_run(th_run("plan '%s'", bin_path), where, "contains NUL bytes");
        free(where);
    }
}

Test(cli_bad, oversized_file)
{
    char path[] = "/tmp/vpsim-test-huge-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)CFG_MAX_FILE_BYTES + 4096), 0); /* sparse: costs nothing */
    close(fd);
    char *where = util_xasprintf("%s: ", path);
    expect_bad_run(th_run("plan %s", path), where, "the limit is 67108864 bytes");
    expect_bad_run(th_run("plan --plan %s", path), where, "the limit is 67108864 bytes");
    unlink(path);
    free(where);
}

Test(cli_bad, too_deep_nesting)
{
    util_buf b = {0};
    util_buf_printf(&b, "name: deep\ndescription: ");
    for (int i = 0; i < 200; i++)
        util_buf_printf(&b, "[");
    for (int i = 0; i < 200; i++)
        util_buf_printf(&b, "]");
    util_buf_printf(&b, "\n");
    char *path = temp_text(b.s, b.len);
    /* "description: " is 13 columns; the root mapping is level 1, so the 64th '[' opens level 65. */
    char *where = util_xasprintf("%s:2:%d: ", path, 13 + CFG_MAX_DEPTH);
    expect_bad_run(th_run("plan %s", path), where, "nesting deeper than 64 levels");
    unlink(path);
    free(path);
    free(where);
    util_buf_free(&b);
}

Test(cli_bad, duplicate_key)
{
    expect_bad_fixture("duplicate_key.yaml", "8:3", "duplicate key 'tp' (first at line 7)");
}

Test(cli_bad, bad_enum_value_lists_the_choices)
{
    expect_bad_fixture("bad_enum.yaml", "7:12",
                       "run.backend: unknown value 'gloo'; valid choices: nccl, nccl-symm, oneshot, twoshot");
}

Test(cli_bad, mapping_where_a_scalar_is_expected)
{
    expect_bad_fixture("map_for_scalar.yaml", "7:7", "parallel.tp: expected integer, got a mapping");
}

Test(cli_bad, list_where_a_section_is_expected)
{
    expect_bad_fixture("list_for_map.yaml", "6:11", "parallel: expected a mapping of keys, got a list");
}

Test(cli_bad, missing_required_key)
{
    expect_bad_fixture("missing_name.yaml", "2:1", "missing required key 'name'");
}

Test(cli_bad, inconsistent_draft_tokens_in_a_file)
{
    expect_bad_fixture("inconsistent_draft_tokens.yaml", "8:21", "steps + 1 = 4");
}

Test(cli_bad, two_documents)
{
    expect_bad_fixture("two_documents.yaml", "6:1", "more than one YAML document");
}

Test(cli_bad, scenario_that_is_not_a_mapping)
{
    expect_bad_fixture("not_a_mapping.yaml", "2:1", "a scenario must be a mapping of keys");
}

Test(cli_bad, set_without_equals)
{
    expect_bad_run(th_run("plan configs/tiny.yaml --set speculative.steps"), "--set 'speculative.steps': ",
                   "expected KEY=VALUE");
}

Test(cli_bad, set_unknown_key)
{
    expect_bad_run(th_run("plan configs/tiny.yaml --set parallel.tpx=2"), "--set 'parallel.tpx=2': ",
                   "unknown key 'parallel.tpx'");
    expect_bad_run(th_run("plan configs/tiny.yaml --set model.hiden=2"), "--set 'model.hiden=2': ",
                   "unknown key 'model.hiden'");
    expect_bad_run(th_run("plan configs/tiny.yaml --set Parallel.tp=2"), "--set 'Parallel.tp=2': ",
                   "may hold only a-z");
}

Test(cli_bad, set_bad_value_type)
{
    expect_bad_run(th_run("plan configs/tiny.yaml --set parallel.tp=abc"), "--set 'parallel.tp=abc': ",
                   "expected an integer, got 'abc'");
    expect_bad_run(th_run("plan configs/tiny.yaml --set run.graph=yes"), "--set 'run.graph=yes': ",
                   "expected true or false");
    expect_bad_run(th_run("plan configs/tiny.yaml --set 'speculative.acceptance=[0.5, 2]'"),
                   "--set 'speculative.acceptance=[0.5, 2]': ", "acceptance[1]: 2 is out of range");
    expect_bad_run(th_run("plan configs/tiny.yaml --set 'speculative.acceptance=[0.5'"),
                   "--set 'speculative.acceptance=[0.5': ", "YAML syntax error");
    expect_bad_run(th_run("plan configs/tiny.yaml --set model.hidden=-1"), "--set 'model.hidden=-1': ",
                   "out of range");
    expect_bad_run(th_run("plan configs/tiny.yaml --set run.device=tpu"), "--set 'run.device=tpu': ",
                   "valid choices: cuda, cpu");
    expect_bad_run(th_run("plan configs/tiny.yaml --set 'parallel.tp={a: 1}'"), "--set 'parallel.tp={a: 1}': ",
                   "expected integer, got a mapping");
}

Test(cli_bad, bad_format)
{
    expect_bad_run(th_run("plan configs/tiny.yaml --format xml"), "--format 'xml'", "valid choices: table, json, csv");
}

Test(cli_bad, unknown_option_and_extra_argument)
{
    expect_bad_run(th_run("plan configs/tiny.yaml --bogus"), "unknown option '--bogus'", "vpsim plan --help");
    expect_bad_run(th_run("plan configs/tiny.yaml configs/default.yaml"), "unexpected argument 'configs/default.yaml'",
                   "vpsim plan --help");
    expect_bad_run(th_run("plan configs/tiny.yaml --set"), "option '--set' needs a value", "vpsim plan --help");
    expect_bad_run(th_run("plan configs/tiny.yaml --format"), "option '--format' needs a value", "");
    expect_bad_run(th_run("plan configs/tiny.yaml -x"), "unknown option '-x'", "");
    expect_bad_run(th_run("no-such-command"), "unknown command 'no-such-command'", "plan");
}

Test(cli_bad, plan_json_with_an_unknown_key)
{
    expect_bad_run(th_run("plan --plan tests/data/bad/plan_unknown_key.json"), "tests/data/bad/plan_unknown_key.json:19:77: ",
                   "op: unknown key \"colour\"");
}

Test(cli_bad, plan_json_with_a_bad_value)
{
    expect_bad_run(th_run("plan --plan tests/data/bad/plan_bad_value.json"), "tests/data/bad/plan_bad_value.json:19:15: ",
                   "op.m: -2 is out of range");
    expect_bad_run(th_run("plan --plan tests/data/bad/plan_bad_kind.json"), "tests/data/bad/plan_bad_kind.json:18:18: ",
                   "op.kind: expected one of:");
    expect_bad_run(th_run("plan --plan tests/data/bad/plan_bad_ranks.json"),
                   "tests/data/bad/plan_bad_ranks.json:21:57: ", "op.ranks");
    expect_bad_run(th_run("plan --plan tests/data/bad/plan_bad_schema.json"),
                   "tests/data/bad/plan_bad_schema.json:2:13: ", "not a vpsim plan");
    expect_bad_run(th_run("plan --plan tests/data/bad/plan_ranks_mismatch.json"),
                   "tests/data/bad/plan_ranks_mismatch.json:21:53: ", "spans 2 ranks but the plan has 4");
    expect_bad_run(th_run("plan --plan tests/data/bad/plan_bad_context.json"),
                   "tests/data/bad/plan_bad_context.json:6:14: ", "context: 4294967296 is out of range");
    expect_bad_run(th_run("plan --plan tests/data/does-not-exist.json"), "tests/data/does-not-exist.json: ",
                   "cannot open");
    /* A scenario is not a plan. */
    expect_bad_run(th_run("plan --plan configs/tiny.yaml"), "configs/tiny.yaml:", "not a vpsim plan");
}

Test(cli_bad, plan_json_cannot_take_set)
{
    expect_bad_run(th_run("plan --plan tests/data/plan_hand.json --set parallel.tp=2"), "--set", "scenario");
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

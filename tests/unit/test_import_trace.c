/* vpsim import-trace on hand-made traces whose figures are set by scripts/make_trace.py: the arrival
 * skew and wire time of every collective, the cycles, the unmapped kernels, the system file's round trip
 * through model mode, and the refusals of bad traces. */
#include "test_helpers.h"
#include "th_json.h"

#include "../../sim/config/cfg_tree.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void rm_rf(const char *dir)
{
    th_result r = th_sh("rm -rf %s", dir);
    th_free(&r);
}

/* Traces into a fresh folder: `plan_args` make the plan, `gen_args` the traces. Returns the folder. */
static char *make_traces(const char *plan_args, const char *gen_args)
{
    char *dir = strdup("/tmp/vpsim-imp-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    th_result r = th_run("plan %s --format json --out %s/plan.json", plan_args, dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    r = th_sh("python3 scripts/make_trace.py --plan %s/plan.json --out-dir %s %s", dir, dir, gen_args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    return dir;
}

/* The collective `kind` of phase `phase` in the breakdown's "import" block. */
static const cfg_node *coll_of(const cfg_node *root, const char *phase, const char *kind)
{
    const cfg_node *phases = cfg_node_at(root, "import.phases");
    cr_assert(phases && phases->kind == CFG_NODE_SEQ);
    for (size_t i = 0; i < phases->n; i++) {
        if (strcmp(cfg_map_get(phases->items[i], "name")->scalar, phase) != 0)
            continue;
        const cfg_node *c = cfg_map_get(phases->items[i], "collectives");
        for (size_t k = 0; k < c->n; k++)
            if (!strcmp(cfg_map_get(c->items[k], "kind")->scalar, kind))
                return c->items[k];
    }
    cr_assert_fail("no %s in phase %s", kind, phase);
    return NULL;
}

/* The Must-show on hand-made traces: 8 ranks, every allreduce's last arrival 150 us after its first
 * (the order of the ranks shuffled per call), wire 40 us: the import recovers the skew within 5 us and
 * splits each call into wire time and waiting. */
Test(import_trace, eight_ranks_known_skew_recovered_and_split, .timeout = 120)
{
    char *dir = make_traces("configs/default.yaml", "--ranks 8 --skew 150 --wire 40 --graph --gzip");
    th_result r = th_run("import-trace %s/rank0.json.gz %s/rank1.json.gz %s/rank2.json.gz %s/rank3.json.gz "
                         "%s/rank4.json.gz %s/rank5.json.gz %s/rank6.json.gz %s/rank7.json.gz --breakdown %s/b.json",
                         dir, dir, dir, dir, dir, dir, dir, dir, dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "8 rank(s), 3 matched cycle(s) of 1 draft step(s)"), "%s", r.out);
    th_free(&r);
    char path[256];
    snprintf(path, sizeof(path), "%s/b.json", dir);
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(path, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    const cfg_node *root = cfg_doc_root(doc);
    const char *phases[] = {"draft_1", "verify", "draft_extend"};
    const int calls[] = {3, 123, 3};
    for (int p = 0; p < 3; p++) {
        const cfg_node *ar = coll_of(root, phases[p], "allreduce");
        const cfg_node *sk = cfg_map_get(ar, "skew_us");
        cr_assert_eq((int)th_json_num(ar, "calls_per_cycle"), calls[p], "%s", phases[p]);
        cr_assert(fabs(th_json_num(sk, "p50") - 150.0) <= 5.0, "%s skew p50 %s", phases[p], cfg_map_get(sk, "p50")->scalar);
        cr_assert(fabs(th_json_num(sk, "p10") - 150.0) <= 5.0 && fabs(th_json_num(sk, "p90") - 150.0) <= 5.0, "%s", phases[p]);
        cr_assert(fabs(th_json_num(ar, "wire_us") - 40.0) <= 2.0, "%s wire %g", phases[p], th_json_num(ar, "wire_us"));
        /* each rank is late by 0..150 us in even steps, so the mean rank waits 150 - 75 us */
        cr_assert(fabs(th_json_num(ar, "wait_us") - 75.0) <= 3.0, "%s wait %g", phases[p], th_json_num(ar, "wait_us"));
        cr_assert(fabs(th_json_num(ar, "call_us") - th_json_num(ar, "wire_us") - th_json_num(ar, "wait_us")) < 0.01);
        /* the ranks' clocks (their base times) say the same */
        cr_assert(fabs(th_json_num(sk, "clock_p50") - 150.0) <= 5.0, "%s", phases[p]);
    }
    /* the all-gather has no stall before it: skew within the ranks' 1 us exit jitter */
    cr_assert(th_json_num(cfg_map_get(coll_of(root, "verify", "allgather"), "skew_us"), "p90") < 3.0);
    cr_assert_eq(strcmp(cfg_node_at(root, "mode")->scalar, "import-trace"), 0);
    cr_assert(th_json_num(cfg_node_at(root, "import"), "named_fraction") > 0.999);
    cfg_doc_free(doc);
    rm_rf(dir);
    free(dir);
}

static double cycle_of_model(const char *args)
{
    cfg_doc *doc = th_json_of(th_run("model %s --backend nccl --format json", args));
    const cfg_node *be = cfg_node_at(cfg_doc_root(doc), "backends");
    const double ms = th_json_num(be->items[0], "cycle_ms");
    cfg_doc_free(doc);
    return ms;
}

/* Item 4: `vpsim model --system F` from an imported trace gives the trace's own cycle within 5 %. */
Test(import_trace, system_file_reproduces_the_cycle_graph_and_eager, .timeout = 120)
{
    const char *modes[] = {"--graph", "--markers"};
    const char *graph_set[] = {"", "--set run.graph=false"};
    for (int m = 0; m < 2; m++) {
        char *dir = make_traces("configs/default.yaml", modes[m]);
        cfg_doc *doc = th_json_of(th_run("import-trace %s/rank0.json %s/rank1.json %s/rank2.json %s/rank3.json "
                                      "%s/rank4.json %s/rank5.json %s/rank6.json %s/rank7.json --format json --out "
                                      "%s/sys.yaml",
                                      dir, dir, dir, dir, dir, dir, dir, dir, dir));
        const double trace_ms = th_json_num(cfg_node_at(cfg_doc_root(doc), "import"), "cycle_ms");
        cr_assert_str_eq(cfg_node_at(cfg_doc_root(doc), "import.phases_by")->scalar,
                         m == 1 ? "markers" : "collective pattern");
        cfg_doc_free(doc);
        char args[512];
        snprintf(args, sizeof(args), "configs/default.yaml --system %s/sys.yaml %s", dir, graph_set[m]);
        const double model_ms = cycle_of_model(args);
        cr_assert(fabs(model_ms - trace_ms) <= 0.05 * trace_ms, "%s: model %.3f ms, trace %.3f ms", modes[m], model_ms,
                  trace_ms);
        /* every value the import wrote is tagged with the trace it came from */
        snprintf(args, sizeof(args), "%s/sys.yaml", dir);
        char *text = th_slurp(args);
        const char *host = strstr(text, "\n  cycle_overhead_us: ");
        cr_assert_not_null(host, "%s", text);
        const char *eol = strchr(host + 1, '\n'), *tag = strstr(host, "  # measured: server trace, ");
        cr_assert(tag && tag < eol, "%.*s", (int)(eol - host), host);
        cr_assert(fabs(atof(host + strlen("\n  cycle_overhead_us: ")) - 800.0) < 3.0, "host: %.*s", (int)(eol - host), host);
        cr_assert_not_null(strstr(text, "source: \"measured: server trace, "), "%s", text);
        free(text);
        rm_rf(dir);
        free(dir);
    }
}

/* Kernels no pattern names are listed with their time, and count against the named share. */
Test(import_trace, unmapped_kernels_are_reported, .timeout = 60)
{
    char *dir = make_traces("configs/tiny.yaml --set parallel.tp=2", "--ranks 2 --unmapped 4");
    th_result r = th_run("import-trace %s/rank0.json %s/rank1.json --scenario configs/tiny.yaml --set parallel.tp=2",
                         dir, dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "my_server_private_kernel_v2"), "%s", r.out);
    const char *named = strstr(r.out, "kernel time named by the patterns: ");
    cr_assert_not_null(named);
    const double pct = atof(named + strlen("kernel time named by the patterns: "));
    cr_assert(pct > 80.0 && pct < 99.9, "%g", pct);
    th_free(&r);
    /* a user's pattern names it: everything named, the user's line first */
    char kpath[256];
    snprintf(kpath, sizeof(kpath), "%s/k.yaml", dir);
    FILE *f = fopen(kpath, "w");
    fputs("kernels:\n  - {match: \"my_server_private_*\", kind: elementwise, library: mine}\n", f);
    fclose(f);
    r = th_run("import-trace %s/rank0.json %s/rank1.json --scenario configs/tiny.yaml --set parallel.tp=2 --kernels %s",
               dir, dir, kpath);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "named by the patterns: 100.0 %"), "%s", r.out);
    th_free(&r);
    rm_rf(dir);
    free(dir);
}

/* Bad traces: exit 2, the file and the byte offset (or the rule) named, nothing on stdout. */
Test(import_trace, bad_traces_exit_2_with_file_and_offset, .timeout = 60)
{
    char *dir = make_traces("configs/tiny.yaml --set parallel.tp=2", "--ranks 2");
    th_result r = th_sh("head -c 30000 %s/rank0.json > %s/cut.json && gzip -c %s/rank0.json | head -c 3000 > "
                        "%s/cut.json.gz && printf 'a: 1\\n' > %s/y.json && printf '{\"traceEvents\": [{\"ph\": \"X\", "
                        "\"name\": foo}]}' > %s/plain.json && printf '{\"traceEvents\": []}' > %s/none.json && "
                        "printf '{\"other\": 1}' > %s/notrace.json",
                        dir, dir, dir, dir, dir, dir, dir, dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    const char *cases[][2] = {
        {"cut.json", "cut short (truncated)"},
        {"cut.json.gz", "of the decompressed JSON"},
        {"y.json", "byte 0: not JSON"},
        {"plain.json", "byte 37 (line 1, column 38): not JSON: unquoted text"},
        {"none.json", "no GPU kernel events"},
        {"notrace.json", "byte 0 (line 1, column 1): not a Chrome trace: the object has no \"traceEvents\" array"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char where[256];
        snprintf(where, sizeof(where), "%s/%s: ", dir, cases[i][0]);
        th_expect_bad(th_run("import-trace %s/%s --scenario configs/tiny.yaml --set parallel.tp=2", dir, cases[i][0]),
                      where, cases[i][1]);
    }
    /* the cut plain file names its own length as the offset */
    char where[256];
    snprintf(where, sizeof(where), "%s/cut.json: byte 30000 ", dir);
    th_expect_bad(th_run("import-trace %s/cut.json --scenario configs/tiny.yaml --set parallel.tp=2", dir), where,
                  "end of the file");
    rm_rf(dir);
    free(dir);
}

/* Two ranks' files of different steps (one profile taken long after the other) are refused. */
Test(import_trace, files_from_different_steps_are_refused, .timeout = 60)
{
    char *a = make_traces("configs/tiny.yaml --set parallel.tp=2", "--ranks 2");
    char *b = make_traces("configs/tiny.yaml --set parallel.tp=2", "--ranks 2 --no-base --cycles 6");
    th_expect_bad(th_run("import-trace %s/rank0.json %s/rank1.json --scenario configs/tiny.yaml --set parallel.tp=2",
                         a, b),
                  "ranks' files from different steps", "complete cycles");
    /* same clock, but the second file's cycles lie a day later */
    th_result r = th_sh("sed -i 's/\"baseTimeNanoseconds\": 1764547200/\"baseTimeNanoseconds\": 1764633600/' %s/rank1.json",
                        a);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    th_expect_bad(th_run("import-trace %s/rank0.json %s/rank1.json --scenario configs/tiny.yaml --set parallel.tp=2",
                         a, a),
                  "ranks' files from different steps: no cycle of", "profile the same steps on every rank");
    /* one file given twice is two rank 0s */
    th_expect_bad(th_run("import-trace %s/rank0.json %s/rank0.json --scenario configs/tiny.yaml --set parallel.tp=2",
                         a, a),
                  "are both rank 0", "one trace per rank");
    rm_rf(a);
    rm_rf(b);
    free(a);
    free(b);
}

/* A kernel table with a bad line is named at its line and column. */
Test(import_trace, bad_kernel_table_names_its_line, .timeout = 30)
{
    const char *t = "kernels:\n  - {match: \"x*\", kind: matmul}\n";
    char *path = th_write_temp(t, strlen(t), ".yaml");
    char where[256];
    snprintf(where, sizeof(where), "%s:2:", path);
    th_expect_bad(th_run("import-trace traces/none.json --kernels %s", path), where, "kind 'matmul': valid choices: gemm");
    unlink(path);
    free(path);
}

/* The shape a real kineto trace has and the first import refused ("16 marked phases found but no complete
 * decode cycle"): CPU ranges (user_annotation) that end when the host's last launch returns, and beside
 * them kineto's gpu_user_annotation projections, one per stream and phase, spanning other times and
 * written before the CPU ranges. The side stream's GPU range nests in the main one's, which used to split
 * each verify in two. Each phase is the CPU range's kernels (by correlation id), the trace's first cycle
 * is whole (its draft marker opened inside the trace) and counts, and the round trip holds. */
Test(import_trace, cpu_and_gpu_annotations_give_every_cycle, .timeout = 120)
{
    const char *modes[] = {"--ranks 2 --graph --markers --gpu-annotations", "--ranks 2 --markers --gpu-annotations",
                           "--ranks 2 --graph --gpu-annotations"};
    const char *graph_set[] = {"", "--set run.graph=false", ""};
    for (int m = 0; m < 3; m++) {
        char *dir = make_traces("configs/default.yaml", modes[m]);
        cfg_doc *doc = th_json_of(th_run("import-trace %s/rank0.json %s/rank1.json --format json --out %s/sys.yaml", dir,
                                      dir, dir));
        const cfg_node *imp = cfg_node_at(cfg_doc_root(doc), "import");
        cr_assert_str_eq(cfg_map_get(imp, "phases_by")->scalar, "markers", "%s", modes[m]);
        /* make_trace.py writes 4 cycles; all 4 are whole, the first included */
        cr_assert_eq((int)th_json_num(imp, "cycles"), 4, "%s: %s cycles", modes[m], cfg_map_get(imp, "cycles")->scalar);
        const double trace_ms = th_json_num(imp, "cycle_ms");
        /* each verify is one phase with all its collectives, not two halves */
        cr_assert_eq((int)th_json_num(coll_of(cfg_doc_root(doc), "verify", "allreduce"), "calls_per_cycle"), 123, "%s",
                     modes[m]);
        cfg_doc_free(doc);
        char args[512];
        snprintf(args, sizeof(args), "configs/default.yaml --system %s/sys.yaml %s", dir, graph_set[m]);
        const double model_ms = cycle_of_model(args);
        cr_assert(fabs(model_ms - trace_ms) <= 0.05 * trace_ms, "%s: model %.3f ms, trace %.3f ms", modes[m], model_ms,
                  trace_ms);
        rm_rf(dir);
        free(dir);
    }
}

/* A phase the trace's end cut (the profiler stopped before its last kernels ran) is left out with its
 * cycle: eager, a launch whose kernel is missing says so; in a graph, fewer kernels than another replay. */
Test(import_trace, phase_cut_by_the_trace_end_is_left_out, .timeout = 120)
{
    const char *modes[] = {"--ranks 2 --markers --gpu-annotations --cut-end 3", "--ranks 2 --graph --markers --cut-end 3"};
    for (int m = 0; m < 2; m++) {
        char *dir = make_traces("configs/default.yaml", modes[m]);
        th_result r = th_run("import-trace %s/rank0.json %s/rank1.json", dir, dir);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_assert_not_null(strstr(r.out, "2 rank(s), 3 matched cycle(s) of 1 draft step(s)"), "%s: %s", modes[m], r.out);
        th_free(&r);
        rm_rf(dir);
        free(dir);
    }
}

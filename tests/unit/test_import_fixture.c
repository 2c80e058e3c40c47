/* vpsim import-trace on the real fixture: bench/trace_fixture.py's PyTorch profiler traces of one H200
 * (traces/samples/fixture-h200-{graph,eager}.json.gz, 2026-12-02, PyTorch 2.11; README there), as kineto
 * wrote them, trimmed. The Must-show on a measured trace: the import finds every profiled cycle,
 * names the kernel time, and `vpsim model --system F` on the file it writes gives the trace's own cycle.
 *
 * The fixture runs on one GPU, so its allreduces are torch.cuda._sleep spin kernels and its all-gather a
 * device-to-device copy: traces/samples/trace-fixture-kernels.yaml names those two (--kernels); every
 * other kernel (cuBLAS nvjet, cuDNN and mem-efficient SDPA, PyTorch's norm and element-wise kernels) is
 * named by the shipped configs/trace-kernels.yaml. */
#include "test_helpers.h"
#include "th_json.h"

#include "../../sim/config/cfg_tree.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIXTURE_KERNELS "traces/samples/trace-fixture-kernels.yaml"

/* The fixture program's own clock: host wall time per profiled cycle (fixture-info.json). */
static double wall_ms(const char *mode)
{
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(th_path("traces/samples/fixture-h200-info.json"), &err);
    cr_assert_not_null(doc, "%s", err.msg);
    char key[64];
    snprintf(key, sizeof(key), "modes.%s.wall_ms_per_cycle", mode);
    const double ms = th_json_num(cfg_doc_root(doc), key);
    cfg_doc_free(doc);
    return ms;
}

static void must_show(const char *mode)
{
    char sys[] = "/tmp/vpsim-fixture-XXXXXX";
    const int fd = mkstemp(sys);
    cr_assert(fd >= 0);
    close(fd);
    cfg_doc *doc = th_json_of(th_run("import-trace traces/samples/fixture-h200-%s.json.gz --system "
                                  "configs/systems/h200-1x.yaml --kernels " FIXTURE_KERNELS " --format json --out %s",
                                  mode, sys));
    const cfg_node *root = cfg_doc_root(doc);
    const cfg_node *imp = cfg_node_at(root, "import");
    const bool graph = !strcmp(mode, "graph");
    /* the program profiled 4 cycles (fixture-info.json "cycles"); the trace holds all 4, the first whole */
    cr_assert_eq((int)th_json_num(imp, "cycles"), 4, "%s", mode);
    cr_assert_eq((int)th_json_num(imp, "draft_steps"), 1);
    cr_assert_str_eq(cfg_map_get(imp, "phases_by")->scalar, "markers");
    cr_assert_str_eq(cfg_map_get(imp, "graph")->scalar, graph ? "true" : "false", "%s", mode);
    const double trace_ms = th_json_num(imp, "cycle_ms");
    /* the breakdown adds up to the trace's own period between cycle ends, and to the program's wall clock
     * (which adds a synchronize per cycle) */
    cr_assert(fabs(trace_ms - th_json_num(imp, "cycle_p50_ms")) <= 0.01 * trace_ms, "%s: %.3f against p50 %.3f", mode,
              trace_ms, th_json_num(imp, "cycle_p50_ms"));
    cr_assert(fabs(trace_ms - wall_ms(mode)) <= 0.03 * wall_ms(mode), "%s: %.3f against wall %.3f", mode, trace_ms,
              wall_ms(mode));
    /* at least 95 % of the kernel time named (all of it, with the stand-ins named by the fixture's table) */
    cr_assert(th_json_num(imp, "named_fraction") >= 0.95, "%s: named %s", mode, cfg_map_get(imp, "named_fraction")->scalar);
    /* the verify pass holds all 123 allreduce stand-ins of the plan's 61 layers, one phase per cycle */
    const cfg_node *phases = cfg_map_get(imp, "phases");
    cr_assert_eq((int)phases->n, 3);
    cr_assert_str_eq(cfg_map_get(phases->items[1], "name")->scalar, "verify");
    const cfg_node *coll = cfg_map_get(phases->items[1], "collectives");
    cr_assert_eq((int)th_json_num(coll->items[0], "calls_per_cycle"), 123, "%s", mode);
    /* the backend the import priced its check with, as its results row names it: "nccl (trace)" */
    char backend[32];
    snprintf(backend, sizeof(backend), "%s", cfg_map_get(cfg_node_at(root, "backends")->items[0], "backend")->scalar);
    *strchr(backend, ' ') = '\0';
    cfg_doc_free(doc);

    doc = th_json_of(th_run("model configs/default.yaml --system %s --backend %s%s --format json", sys, backend,
                         graph ? "" : " --set run.graph=false"));
    const double model_ms = th_json_num(cfg_node_at(cfg_doc_root(doc), "backends")->items[0], "cycle_ms");
    cfg_doc_free(doc);
    cr_assert(fabs(model_ms - trace_ms) <= 0.05 * trace_ms, "%s: model %.3f ms, trace %.3f ms", mode, model_ms, trace_ms);
    /* every value the import wrote is tagged with the fixture it came from and the day it was profiled */
    char *text = th_slurp(sys);
    char tag[160];
    snprintf(tag, sizeof(tag), "measured: server trace, traces/samples/fixture-h200-%s.json.gz, 2026-12-02", mode);
    cr_assert_not_null(strstr(text, tag), "%s", text);
    free(text);
    unlink(sys);
}

Test(import_fixture, graph_trace_reproduces_its_cycle, .timeout = 60) { must_show("graph"); }

Test(import_fixture, eager_trace_reproduces_its_cycle, .timeout = 60) { must_show("eager"); }

/* Without the fixture's table the spin kernels (its allreduce stand-ins) are the one kernel left unnamed:
 * every real PyTorch kernel of the trace is in configs/trace-kernels.yaml. */
Test(import_fixture, shipped_table_names_every_real_kernel, .timeout = 60)
{
    cfg_doc *doc = th_json_of(th_run("import-trace traces/samples/fixture-h200-graph.json.gz --system "
                                  "configs/systems/h200-1x.yaml --format json"));
    const cfg_node *un = cfg_node_at(cfg_doc_root(doc), "import.unmapped");
    cr_assert(un && un->kind == CFG_NODE_SEQ);
    cr_assert_eq((int)un->n, 1);
    cr_assert_not_null(strstr(cfg_map_get(un->items[0], "name")->scalar, "spin_kernel"));
    const double named = th_json_num(cfg_node_at(cfg_doc_root(doc), "import"), "named_fraction");
    cr_assert(named > 0.95 && named < 0.99, "%g", named);
    cfg_doc_free(doc);
}

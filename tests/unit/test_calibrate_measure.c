/* vpsim calibrate --measure: the probe plan (plan_probe_build) and the system file the CPU device's quick
 * probe writes. */
#include "test_helpers.h"
#include "th_plan.h"

#include "../../sim/config/cfg_system.h"
#include "../../sim/model/model.h"
#include "../../sim/plan/plan_probe.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void load(const char *rel, const char *const *sets, int n_sets, const char *system, cfg_scenario *sc)
{
    cfg_error err = {{0}};
    cr_assert_eq(cfg_scenario_load(th_path(rel), sets, n_sets, system, sc, &err), 0, "loading %s: %s", rel, err.msg);
}

/* Ops per law class; asserts that every op after the empty ones is filed by plan_op_law_class under the
 * class its name says (silu_mul ops carry it as their suffix). */
static void count_classes(const plan *p, int *n)
{
    memset(n, 0, sizeof(int) * CFG_LAW_COUNT);
    const plan_phase *ph = &p->phases[0];
    cr_assert_eq(p->n_phases, 1);
    cr_assert_str_eq(ph->name, "probe");
    for (int i = 0; i < ph->n_ops; i++) {
        const plan_op *op = &ph->ops[i];
        cr_assert_eq(op->stream, PLAN_STREAM_MAIN, "%s", op->name);
        if (i < PLAN_PROBE_EMPTY) {
            cr_assert_str_eq(op->name, "probe.empty");
            cr_assert(op->kind == PLAN_OP_ELEMENTWISE && op->m == 1 && op->n == 8);
            continue;
        }
        if (i == ph->n_ops - 1) { /* the L2 flush: 2 x 128 MiB (quick: 2 x 2 MiB) of bf16 */
            cr_assert_str_eq(op->name, "probe.flush");
            cr_assert(op->kind == PLAN_OP_ELEMENTWISE && op->m == 1 &&
                      (op->n == 64ll << 20 || op->n == 1ll << 20), "n = %lld", op->n);
            continue;
        }
        double rows = 0;
        const int c = plan_op_law_class(op, &rows);
        cr_assert(c >= 0 && c < CFG_LAW_COUNT, "%s has no law class", op->name);
        char want[64];
        if (c == CFG_LAW_SILU_MUL)
            snprintf(want, sizeof(want), "probe.r%.0f.", rows);
        else
            snprintf(want, sizeof(want), "probe.%s.r%.0f.", cfg_law_names[c], rows);
        cr_assert_eq(strncmp(op->name, want, strlen(want)), 0, "%s: plan_op_law_class says %s rows %.0f", op->name,
                     cfg_law_names[c], rows);
        n[c]++;
    }
}

/* Grid sizes by hand (plan_probe.h; GEMM shapes listed in the next test); every point 4 like ops, then the
 * flush op. configs/default.yaml's draft is GQA, so both attention classes are probed. Grouped: rows 1 and
 * 4 at 4, 16, 64, 128, 256 and Kimi-K2.5's 384 experts, rows 2 also at 192 and 320, rows 8 and 16 at the
 * first three; then the wider experts: w13 (narrow) at 2, 4 and 8 x its 512 columns, w2 (wide) at 2 and 4 x
 * its 256 depth (at 8 x, 2048 deep, it is narrow: 2016 < 2048, left out), each at rows 1, 2, 4 and 4, 16,
 * 64 experts. MLA: 8 rows values over 5 KV lengths, the 4 of one block (8, 16, 24, 32) also at 256k and
 * 512k. No other op stands between a point's ops (no neighbour ops: plan_probe.h): 1,453 ops in one part. */
Test(calibrate_measure, probe_plan_counts_per_class_and_names)
{
    cfg_scenario sc;
    load("configs/default.yaml", NULL, 0, NULL, &sc);
    plan p;
    char why[256] = "";
    int n[CFG_LAW_COUNT];
    const int full[CFG_LAW_COUNT] = {
        [CFG_LAW_GEMM_WIDE] = 8 * 6 * 4,   [CFG_LAW_GEMM_NARROW] = 8 * 9 * 4, [CFG_LAW_GEMM_BATCHED] = 6 * 3 * 4,
        [CFG_LAW_GROUPED_WIDE] = (6 + 8 + 6 + 3 + 3 + 2 * 9) * 4,
        [CFG_LAW_GROUPED_NARROW] = (6 + 8 + 6 + 3 + 3 + 3 * 9) * 4,
        [CFG_LAW_ATTENTION_MLA] = 9 * 7 * 4, [CFG_LAW_ATTENTION_GQA] = 4 * 5 * 4, [CFG_LAW_NORM] = 4 * 4 * 4,
        [CFG_LAW_ELEMENTWISE] = 4 * 4 * 4, [CFG_LAW_SILU_MUL] = 4 * 4 * 4,   [CFG_LAW_EMBEDDING] = 4 * 2 * 4,
    };
    cr_assert_eq(plan_probe_build(&sc, false, &p, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(plan_probe_parts(&p, 0, why, sizeof(why)), 1, "no budget: one part");
    count_classes(&p, n);
    int total = PLAN_PROBE_EMPTY + 1;
    for (int c = 0; c < CFG_LAW_COUNT; c++) {
        cr_expect_eq(n[c], full[c], "full grid, %s: %d ops", cfg_law_names[c], n[c]);
        total += full[c];
    }
    cr_assert_eq(p.phases[0].n_ops, total);
    cr_assert_eq(total, 1513);
    /* One part of no budget is the grid itself; a part past the last is refused. */
    plan one;
    cr_assert_eq(plan_probe_part(&p, 0, 0, &one, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(one.phases[0].n_ops, total);
    plan_free(&one);
    cr_assert_eq(plan_probe_part(&p, 0, 1, &one, why, sizeof(why)), -1);
    cr_assert(strstr(why, "probe part 1: there are 1 (0-0)"), "%s", why);
    plan_free(&p);
    /* quick: 2 rows values x 2 sizes (x 2 KV lengths for attention; embedding has only 2 widths), and one
     * wider point a grouped class (x 2 at 1 row and 4 experts). */
    cr_assert_eq(plan_probe_build(&sc, true, &p, why, sizeof(why)), 0, "%s", why);
    count_classes(&p, n);
    for (int c = 0; c < CFG_LAW_COUNT; c++)
        cr_expect_eq(n[c], (c == CFG_LAW_GROUPED_WIDE || c == CFG_LAW_GROUPED_NARROW ? 5 : 4) * 4,
                     "quick grid, %s: %d ops", cfg_law_names[c], n[c]);
    cr_assert_eq(p.phases[0].n_ops, PLAN_PROBE_EMPTY + (CFG_LAW_COUNT * 4 + 2) * 4 + 1);
    plan_free(&p);
    cfg_scenario_free(&sc);
}

/* The parts a budget cuts (plan_probe.h): each holds the empty ops, a run of points in grid order and the
 * flush, within the budget, and together they hold every point once. At 80 % of an H200 (139.8 GiB) two
 * parts, of an RTX PRO 6000 (95.6 GiB, the target box, which the 156 GiB grid would not fit) three; a budget below
 * the largest point (Kimi-K2.5's w13 at 384 experts, 4 x 793 MB) is refused, naming it. */
Test(calibrate_measure, a_budget_cuts_the_grid_into_parts_that_fit)
{
    cfg_scenario sc;
    load("configs/default.yaml", NULL, 0, NULL, &sc);
    plan grid, p;
    char why[256] = "";
    cr_assert_eq(plan_probe_build(&sc, false, &grid, why, sizeof(why)), 0, "%s", why);
    const double gib = 1073741824.0, budgets[] = {0.8 * 139.8 * gib, 0.8 * 95.6 * gib, 20 * gib};
    const int want_parts[] = {2, 3, 9};
    for (int k = 0; k < 3; k++) {
        const int parts = plan_probe_parts(&grid, budgets[k], why, sizeof(why));
        cr_assert_eq(parts, want_parts[k], "budget %.1f GiB: %d parts (%s)", budgets[k] / gib, parts, why);
        int points = 0;
        char last[PLAN_NAME_MAX] = "";
        for (int part = 0; part < parts; part++) {
            cr_assert_eq(plan_probe_part(&grid, budgets[k], part, &p, why, sizeof(why)), 0, "%s", why);
            const plan_phase *ph = &p.phases[0];
            cr_assert_leq(plan_probe_arena_bytes(&p), budgets[k]);
            cr_assert_str_eq(ph->ops[0].name, "probe.empty");
            cr_assert_str_eq(ph->ops[PLAN_PROBE_EMPTY - 1].name, "probe.empty");
            cr_assert_str_eq(ph->ops[ph->n_ops - 1].name, "probe.flush");
            cr_assert_eq((ph->n_ops - PLAN_PROBE_EMPTY - 1) % PLAN_PROBE_REPEAT, 0);
            cr_assert(strcmp(ph->ops[PLAN_PROBE_EMPTY].name, last), "%s: in two parts", last);
            snprintf(last, sizeof(last), "%s", ph->ops[ph->n_ops - 2].name);
            points += (ph->n_ops - PLAN_PROBE_EMPTY - 1) / PLAN_PROBE_REPEAT;
            plan_free(&p);
        }
        cr_assert_eq(points, (1513 - PLAN_PROBE_EMPTY - 1) / PLAN_PROBE_REPEAT, "budget %.1f GiB", budgets[k] / gib);
    }
    cr_assert_eq(plan_probe_parts(&grid, 2 * gib, why, sizeof(why)), -1);
    cr_assert(strstr(why, "probe point probe.grouped_narrow.r1.e384.0 needs 2.95 GiB of device memory, more than a "
                          "part may take (2.00 GiB)"), "%s", why);
    plan_free(&grid);
    cfg_scenario_free(&sc);
}

/* The wider experts' shapes and width coordinates: w13 at 4 x 512 = 2048 columns INT4 (replayed 2048 x
 * 0.5625 / 2 = 576 wide, 7168 deep: width 576), w2 at 2 x 256 = 512 deep (2016 wide: width 512); their
 * weights (7168 x (288 + 576 + 1152) + 2016 x (512 + 1024)) x 2 B x (4 + 16 + 64) experts x 3 rows x 4 ops
 * = 35.4 GB, which would not fit beside the rest's 105 GiB on a 140 GiB GPU: the probe runs in parts. */
Test(calibrate_measure, the_grid_ends_with_wider_experts)
{
    cfg_scenario sc;
    load("configs/default.yaml", NULL, 0, NULL, &sc);
    plan p;
    char why[256] = "";
    cr_assert_eq(plan_probe_build(&sc, false, &p, why, sizeof(why)), 0, "%s", why);
    const plan_phase *ph = &p.phases[0];
    const plan_op *n = th_find_op(ph, "probe.grouped_narrow.r2.x4e16.1", -1);
    th_assert_gemm(n, 2 * 16, 7168, 2048, 16);
    cr_assert(n->wdtype == CFG_DT_INT4);
    cr_assert_float_eq(plan_op_law_width(n), 576.0, 1e-9);
    const plan_op *w = th_find_op(ph, "probe.grouped_wide.r4.x2e64.0", -1);
    th_assert_gemm(w, 4 * 64, 512, 7168, 64);
    cr_assert_float_eq(plan_op_law_width(w), 512.0, 1e-9);
    double wider = 0;
    for (int i = 0; i < ph->n_ops; i++) {
        cr_assert(strstr(ph->ops[i].name, "grouped_wide.r1.x8") == NULL, "%s: would be narrow", ph->ops[i].name);
        if (strstr(ph->ops[i].name, ".x") && ph->ops[i].kind == PLAN_OP_GROUPED_GEMM)
            wider += 2.0 * ph->ops[i].k * (double)plan_op_effective_n(&ph->ops[i]) * ph->ops[i].batch;
    }
    cr_assert_float_eq(wider, (7168.0 * (288 + 576 + 1152) + 2016.0 * (512 + 1024)) * 2 * 84 * 3 * 4, 0.5, "%.0f",
                       wider);
    plan_free(&p);
    cfg_scenario_free(&sc);
}

/* gemm_wide at m = 4, (n, k) = (8192, 1024) bf16: reads 1024 x 8192 x 2 B of weights + 4 x 1024 x 2 B of
 * activations, writes 4 x 8192 x 2 B. MLA at the default target (Kimi-K2.5: kv_lora_rank 512, rope 64):
 * q_len 2 x 16 heads over 4096 tokens of one 576-wide latent. GQA: the draft's 64 heads and 64 KV heads
 * over tp = 8 ranks, 8 and 8 per rank (rows = q_len). Embedding: the vocab shard 163840 / 8. */
Test(calibrate_measure, probe_ops_have_the_shapes_of_real_plans)
{
    cfg_scenario sc;
    load("configs/default.yaml", NULL, 0, NULL, &sc);
    plan p;
    char why[256] = "";
    cr_assert_eq(plan_probe_build(&sc, false, &p, why, sizeof(why)), 0, "%s", why);
    const plan_phase *ph = &p.phases[0];
    /* GEMMs: the scenario's own shapes in plan order (the draft's phase first), then the generic sizes
     * outside their range. Wide s0 is the target's o_proj (7168 x 1024 at TP 8), narrow s0 the draft's
     * qkv_proj (3072 x 14336); the generic 2048 x 256 (1 MiB) is below every wide shape of Kimi, the
     * generic narrow 256 x 2048 too; the generic 8192 x 1024 (16 MiB) lies inside the range: left out. */
    const plan_op *g = th_find_op(ph, "probe.gemm_wide.r4.s0.1", -1);
    th_assert_gemm(g, 4, 1024, 7168, 1);
    cr_assert_float_eq(g->bytes_read + g->bytes_written, 1024.0 * 7168 * 2 + 4 * 1024 * 2 + 4 * 7168 * 2, 0.5);
    const plan_op *n = th_find_op(ph, "probe.gemm_narrow.r4.s0.0", -1);
    th_assert_gemm(n, 4, 14336, 3072, 1);
    th_assert_gemm(th_find_op(ph, "probe.gemm_wide.r8.2kx256.3", -1), 8, 256, 2048, 1);
    th_assert_gemm(th_find_op(ph, "probe.gemm_narrow.r1.256x2k.0", -1), 1, 2048, 256, 1);
    for (int i = 0; i < ph->n_ops; i++)
        cr_assert(strstr(ph->ops[i].name, ".8kx1k.") == NULL, "%s: inside the scenario's range", ph->ops[i].name);
    const plan_op *a = th_find_op(ph, "probe.attention_mla.r32.4k.2", -1);
    cr_assert(a->kv_shared && a->q_len == 2 && a->heads == 16 && a->kv_len == 4096 && a->qk_dim == 576 &&
              a->v_dim == 512 && a->batch == 1);
    const plan_op *q = th_find_op(ph, "probe.attention_gqa.r4.64k.0", -1);
    cr_assert(!q->kv_shared && q->q_len == 4 && q->heads == 8 && q->kv_heads == 8 && q->qk_dim == 128);
    const plan_op *e = th_find_op(ph, "probe.embedding.r16.7k.0", -1);
    cr_assert(e->kind == PLAN_OP_EMBEDDING && e->m == 16 && e->n == 7168 && e->k == 163840 / 8);
    const plan_op *s = th_find_op(ph, "probe.r64.16k.2.silu_mul", -1);
    cr_assert(s->kind == PLAN_OP_ELEMENTWISE && s->m == 64 && s->n == 16384);
    /* Grouped: the target's own per-expert shapes. Kimi-K2.5 at TP 8: w13 512 x 7168 INT4 (group 32:
     * 0.5 + 2 / 32 = 0.5625 B a weight, replayed 512 x 0.5625 / 2 = 144 wide: narrow), w2 7168 x 256
     * (2016 wide: wide). */
    const plan_op *gr = th_find_op(ph, "probe.grouped_narrow.r16.e64.0", -1);
    th_assert_gemm(gr, 16 * 64, 7168, 512, 64);
    cr_assert(gr->wdtype == CFG_DT_INT4 && gr->wgroup == 32);
    const plan_op *gw = th_find_op(ph, "probe.grouped_wide.r1.e4.3", -1);
    th_assert_gemm(gw, 4, 256, 7168, 4);
    /* The arena, class by class (every size a multiple of 256 B), 4 ops a point. GEMM weight bytes x 8 rows:
     * narrow qkv_proj 3072 x 14336, mlp.gate_up 4608 x 7168, draft lm_head 4000 x 7168, fused_qkv_a 2112 x
     * 7168, gate 384 x 7168, shared.gate_up 512 x 7168, fc 7168 x 21504 and generic 256 x 2048, 512 x 4096;
     * wide o_proj 7168 x 1024, mlp.down 7168 x 2304, q_b 1536 x 1536, shared.down 7168 x 256, lm_head 20480 x
     * 7168 and generic 2048 x 256 (x 2 B each); batched x 6 rows: w_kc 512 x 128 x 8 heads and generic 256 x
     * 256 x 32 and x 128 (w_vc has w_kc's bytes: one of them); grouped (7168 x 144 + 256 x 2016) x 2 B x
     * ((4+16+64) x 5 rows + (128+256+384) x 2 rows + (128+192+256+320+384) at 2 rows) x 4; embedding
     * 20480 x (2048+7168) x 2 B x 4 rows x 4; MLA 576 x 2 B per token, GQA 8 KV heads x 256 x 2 B per
     * token, over 1k+4k+16k+64k+128k tokens x 4 ops x 9 rows (MLA) and 4 rows (GQA), and 256k+512k x 4 ops
     * x 9 rows (MLA): 122.9 GiB; and the wider experts (the test before): 33.0 GiB more. */
    const double kv = 1024 + 4096 + 16384 + 65536 + 131072;
    const double narrow = 3072.0 * 14336 + 4608 * 7168 + 4000 * 7168 + 2112 * 7168 + 384 * 7168 + 512 * 7168 +
                          7168 * 21504 + 256 * 2048 + 512 * 4096;
    const double wide = 7168.0 * 1024 + 7168 * 2304 + 1536 * 1536 + 7168 * 256 + 20480 * 7168 + 2048 * 256;
    const double bmm = 512.0 * 128 * 8 + 256 * 256 * (32 + 128);
    const double want = (narrow + wide) * 2 * 8 * 4 + bmm * 2 * 6 * 4 +
                        (7168.0 * 144 + 256 * 2016) * 2 * (84 * 5 + 768 * 2 + 1280) * 4 + 20480.0 * 9216 * 2 * 4 * 4 +
                        1152 * kv * 36 + 1152 * (262144.0 + 524288) * 36 + 4096 * kv * 16 +
                        (7168.0 * (288 + 576 + 1152) + 2016.0 * (512 + 1024)) * 2 * 84 * 3 * 4;
    cr_assert_float_eq(plan_probe_arena_bytes(&p), want, 0.5, "%.0f", plan_probe_arena_bytes(&p));
    plan_free(&p);
    cfg_scenario_free(&sc);
}

/* Every law table of the file is sound by the model's own check (lengths, order, values); a grouped
 * class's table carries a width per point. Returns the points. */
static int check_table(const cfg_law_table *t, int c)
{
    cr_assert_str_eq(model_law_check(t), "", "%s", cfg_law_names[c]);
    const bool grouped = c == CFG_LAW_GROUPED_WIDE || c == CFG_LAW_GROUPED_NARROW;
    if (grouped && t->n_us) {
        cr_assert_eq(t->n_width, t->n_us, "%s: a width per point", cfg_law_names[c]);
    } else {
        cr_assert_eq(t->n_width, 0, "%s: no widths", cfg_law_names[c]);
    }
    return t->n_rows;
}

Test(calibrate_measure, quick_cpu_probe_writes_a_system_file_the_model_loads, .timeout = 120)
{
    char dir[] = "/tmp/vpsim-probe-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/sys.yaml", dir);
    /* tiny's base names an H200: the CPU device writes into it only when --base says so. */
    th_result r = th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --passes 2 --base "
                         "configs/systems/h200-1x.yaml --out %s", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "", "the file goes to --out");
    cr_assert_not_null(strstr(r.err, "probe part 1 of 1: 197 ops (quick grid)"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "gemm_wide"), "the summary names the classes:\n%s", r.err);
    th_free(&r);
    char *text = th_slurp(path);
    cr_assert_not_null(text);
    const char *gap = strstr(text, "\n  graph_node_us: ");
    cr_assert_not_null(gap, "%s", text);
    cr_assert_not_null(strstr(gap, "  # SELF-TEST (the CPU device: not a GPU's figures); measured: vpsim calibrate "
                                   "--measure, "), "%s", gap);
    /* The file describes the device that measured: its gpu.name is the CPU device's, tagged, and the header
     * names the mismatch with the base; the base's unmeasured values keep their own provenance. */
    cr_assert_not_null(strstr(text, "\n  name: \"CPU device ("), "%s", text);
    cr_assert_not_null(strstr(text, "#   MISMATCH, written because --base configs/systems/h200-1x.yaml was given:\n"
                                    "#     measured on CPU device ("), "%s", text);
    cr_assert_not_null(strstr(text, "but the base names NVIDIA H200;"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  mem_bw_gbs: 4800  # spec: HBM3e\n"), "%s", text);
    /* Every value the self-test wrote is tagged: each line of the compute tables, the CPU vendor too. */
    const char *compute = strstr(text, "\n  compute:\n");
    cr_assert_not_null(compute, "%s", text);
    int lines = 0;
    for (const char *l = compute + 1; *l && (l[0] == ' ' && l[1] == ' '); l = strchr(l, '\n') + 1) {
        const char *end = strchr(l, '\n');
        cr_assert_not_null(end);
        const bool leaf = memchr(l, '[', (size_t)(end - l)) || memmem(l, (size_t)(end - l), "source:", 7);
        if (leaf) {
            lines++;
            cr_assert(memmem(l, (size_t)(end - l), "# SELF-TEST (the CPU device", 27), "untagged: %.*s", (int)(end - l), l);
        }
    }
    cr_assert_gt(lines, 20, "%d table lines", lines);
    const char *vendor = strstr(text, "\n  cpu_vendor: ");
    if (vendor)
        cr_assert(!strncmp(strchr(vendor + 1, '#'), "# SELF-TEST", 11), "%.120s", vendor);
    cr_assert_not_null(strstr(text, "(t(16 empty ops) - t(1)) / 15, median of 2 eager passes"), "%s", text);
    cr_assert_not_null(strstr(text, "source: \"SELF-TEST (the CPU device: not a GPU's figures); measured: vpsim "
                                    "calibrate --measure, "), "%s", text);
    cr_assert_not_null(strstr(text, "(t(4 ops) - t(1)) / 3, median of 2 passes (eager, L2 flushed)"), "%s", text);
    free(text);
    /* Bound as the tiny scenario's system: every class its plan runs has a sound table. */
    cfg_scenario sc;
    load("configs/tiny.yaml", NULL, 0, path, &sc);
    cr_assert(sc.system.measured.use);
    plan p;
    char why[256] = "";
    cr_assert_eq(plan_build(&sc, &p, why, sizeof(why)), 0, "%s", why);
    bool used[CFG_LAW_COUNT] = {0};
    for (int ph = 0; ph < p.n_phases; ph++)
        for (int i = 0; i < p.phases[ph].n_ops; i++) {
            const int c = plan_op_law_class(&p.phases[ph].ops[i], NULL);
            if (c >= 0)
                used[c] = true;
        }
    for (int c = 0; c < CFG_LAW_COUNT; c++) {
        const int pts = check_table(&sc.system.measured.compute[c], c);
        if (used[c])
            cr_expect_gt(pts, 0, "the tiny plan runs %s ops but the probe wrote no points", cfg_law_names[c]);
    }
    cr_assert(used[CFG_LAW_GEMM_WIDE] && used[CFG_LAW_ATTENTION_MLA] && used[CFG_LAW_ATTENTION_GQA]);
    /* tiny-moe at TP 2: w13 128 x 256 INT4 (36, rounded up to 40 wide: narrow) also at 2 x its columns (72); w2 256 x 64 (72
     * wide, 64 deep: wide) has no wider point, as 128 deep it would be narrow (part 2's 21 ops: 16 empty,
     * one narrow point, the flush). */
    const cfg_law_table *gn = &sc.system.measured.compute[CFG_LAW_GROUPED_NARROW];
    cr_assert(gn->n_us == 5 && gn->width[0] == 40 && gn->width[3] == 40 && gn->width[4] == 72, "%d: %g .. %g",
              gn->n_us, gn->width[0], gn->width[gn->n_us - 1]);
    const cfg_law_table *gwd = &sc.system.measured.compute[CFG_LAW_GROUPED_WIDE];
    cr_assert(gwd->n_us == 4 && gwd->width[0] == 64 && gwd->width[3] == 64);
    /* gemm_wide quick points: rows 1 and 2 at (2048, 256) and (4096, 512), bytes by plan_op_finalize. */
    const cfg_law_table *gw = &sc.system.measured.compute[CFG_LAW_GEMM_WIDE];
    cr_assert_eq(gw->n_rows, 4);
    cr_assert_float_eq(gw->bytes[0], 256.0 * 2048 * 2 + 1 * 256 * 2 + 1 * 2048 * 2, 0.5);
    cr_assert_float_eq(gw->bytes[3], 512.0 * 4096 * 2 + 2 * 512 * 2 + 2 * 4096 * 2, 0.5);
    plan_free(&p);
    cfg_scenario_free(&sc);
    r = th_run("model configs/tiny.yaml --system %s --backend none", path);
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    th_free(&r);
    /* In parts (--part-gib 0.15 of the 0.41 GiB): three, one after the other, and the same tables: every
     * point once, at the same coordinates, whichever part timed it. */
    char parted[160];
    snprintf(parted, sizeof(parted), "%s/parts.yaml", dir);
    r = th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --passes 2 --part-gib 0.15 --base "
               "configs/systems/h200-1x.yaml --out %s", parted);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "probe part 3 of 3: "), "%s", r.err);
    cr_assert_null(strstr(r.err, "probe part 4 of"), "%s", r.err);
    th_free(&r);
    cfg_scenario one, three;
    load("configs/tiny.yaml", NULL, 0, path, &one);
    load("configs/tiny.yaml", NULL, 0, parted, &three);
    for (int c = 0; c < CFG_LAW_COUNT; c++) {
        const cfg_law_table *a = &one.system.measured.compute[c], *b = &three.system.measured.compute[c];
        cr_assert(a->n_us == b->n_us && a->n_width == b->n_width, "%s: %d / %d points", cfg_law_names[c], a->n_us,
                  b->n_us);
        for (int i = 0; i < a->n_us; i++)
            cr_assert(a->rows[i] == b->rows[i] && a->bytes[i] == b->bytes[i] &&
                      (!a->n_width || a->width[i] == b->width[i]), "%s point %d", cfg_law_names[c], i);
    }
    cfg_scenario_free(&one);
    cfg_scenario_free(&three);
    th_expect_bad(th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --part-gib 0.01 --base "
                         "configs/systems/h200-1x.yaml --out %s/none.yaml", dir),
                  "more than a part may take", "needs");
    r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}

Test(calibrate_measure, bad_inputs_exit_2_and_write_nothing, .timeout = 60)
{
    char dir[] = "/tmp/vpsim-probe-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/sys.yaml", dir);
    th_expect_bad(th_run("calibrate --measure configs/tiny.yaml --results x.json --out %s", path), "--results",
                  "without --measure");
    th_expect_bad(th_run("calibrate --measure configs/tiny.yaml --device tpu --out %s", path), "--device 'tpu'",
                  "valid choices: cuda, cpu");
    th_expect_bad(th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --out %s/no/such/f.yaml", dir),
                  "--out", "does not exist");
    th_expect_bad(th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --passes 0 --out %s", path),
                  "--passes", "0");
    th_expect_bad(th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --base %s/none.yaml --out %s",
                         dir, path),
                  "--base", "none.yaml");
    cr_assert_eq(access(path, F_OK), -1, "nothing may be written on a refusal");
    th_result r = th_run("calibrate --measure --help");
    cr_assert_eq(r.status, 0);
    cr_assert_not_null(strstr(r.out, "--quick"), "%s", r.out);
    th_free(&r);
    r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}

Test(calibrate_measure, more_than_one_rank_is_refused, .timeout = 150)
{
    th_need_mpirun();
    /* Through th_mpirun, so that the variant under test (VPSIM_BIN) is the one refusing. */
    th_result r = th_mpirun(2, "calibrate --measure configs/tiny.yaml --device cpu --quick");
    cr_assert_neq(r.status, 0);
    cr_assert_not_null(strstr(r.err, "the probe measures one GPU; run it without mpirun or with -np 1"), "%s", r.err);
    th_free(&r);
}

/* A CPU run measures no GPU: into a base naming one (the tiny scenario's H200) it is refused before
 * anything is measured, naming both devices and the way to write anyway; nothing is written. */
Test(calibrate_measure, a_cpu_run_into_a_gpu_base_is_refused_without_base, .timeout = 60)
{
    char path[] = "/tmp/vpsim-refuse-XXXXXX";
    cr_assert_neq(mkstemp(path), -1);
    unlink(path);
    th_result r = th_run("calibrate --measure configs/tiny.yaml --device cpu --quick --passes 1 --out %s", path);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "vpsim calibrate: base configs/systems/h200-1x.yaml: measured on CPU device ("),
                       "%s", r.err);
    cr_assert_not_null(strstr(r.err, "but the base names NVIDIA H200"), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "--base configs/systems/h200-1x.yaml to write into this base anyway"), "%s", r.err);
    cr_assert_null(strstr(r.err, "launch.graph_node_us"), "refused before measuring:\n%s", r.err);
    cr_assert_eq(access(path, F_OK), -1, "nothing may be written on a refusal");
    th_free(&r);
}

/* model: whole cycles of the shipped scenarios and systems (the must-show checks). */
#include "../../sim/model/model.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct loaded {
    cfg_scenario sc;
    plan p;
    model_ctx *ctx;
} loaded;

static void load(loaded *l, const char *scenario, const char *system, const char *const *sets, int n_sets)
{
    cfg_error err;
    int rc = cfg_scenario_load(th_path(scenario), sets, n_sets, system ? th_path(system) : NULL, &l->sc, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    char why[256];
    cr_assert_eq(plan_build(&l->sc, &l->p, why, sizeof(why)), 0, "%s", why);
    l->ctx = model_prepare(&l->sc, &l->p, why, sizeof(why));
    cr_assert_not_null(l->ctx, "%s", why);
}

static void unload(loaded *l)
{
    model_free(l->ctx);
    plan_free(&l->p);
    cfg_scenario_free(&l->sc);
}

static double within(double got, double want)
{
    return fabs(got - want) / want;
}

Test(model_cycle, target_box_with_measured_nccl_reproduces_30ms_verify_24ms_comm)
{
    loaded l;
    load(&l, "configs/default.yaml", NULL, NULL, 0);
    results_cycle r;
    model_eval(l.ctx, CFG_BACKEND_NCCL, false, &r);
    cr_assert(r.available);
    cr_assert_float_eq(r.allreduce_us, 200.0, 1e-9, "the measured table sets each verify allreduce");
    cr_assert(strstr(r.allreduce_method, "measured"), "%s", r.allreduce_method);
    cr_assert(within(r.verify_ms, 30.0) <= 0.15, "verify %.2f ms, want 30 +- 15%%", r.verify_ms);
    cr_assert(within(r.verify_class_ms[PLAN_CLASS_COMM], 24.0) <= 0.15, "comm %.2f ms, want 24 +- 15%%",
              r.verify_class_ms[PLAN_CLASS_COMM]);
    const double compute = r.verify_ms - r.verify_class_ms[PLAN_CLASS_COMM];
    cr_assert(compute > 4.5 && compute < 8.0, "verify compute %.2f ms, want near 6", compute);
    unload(&l);
}

Test(model_cycle, without_the_measured_table_nccl_comes_from_its_formula)
{
    const char *sets[] = {"system.measured.use=false"};
    loaded l;
    load(&l, "configs/default.yaml", NULL, sets, 1);
    results_cycle r;
    model_eval(l.ctx, CFG_BACKEND_NCCL, false, &r);
    /* Dual socket, AMD, NCCL 2.28, 8 GPUs: SHM on every ring link, Simple (NCCL's fallback graph). A step:
     * fence 1 + flag through host memory + load from host memory 1.2 = 4.0 within a socket, 4.4 across; mean
     * 4.1. 8.4 + 14 x 4.1 + 43008 B / (sysmem_load_gbs 0.56 x 8 / 14) = 65.8 + 134.4 = 200.2 */
    cr_assert_float_eq(r.allreduce_us, 200.2, 1e-3, "got %f", r.allreduce_us);
    cr_assert(strstr(r.allreduce_method, "formula: NCCL tuning model, ring/Simple over SHM (host memory)"), "%s",
              r.allreduce_method);
    util_buf out = {0};
    cfg_backend be = CFG_BACKEND_NCCL;
    model_explain(&out, l.ctx, &be, 1);
    cr_assert(strstr(out.s, "tuning ring/LL") && strstr(out.s, "nccl_formula") && strstr(out.s, "busBw"), "%s", out.s);
    util_buf_free(&out);
    unload(&l);
}

Test(model_cycle, totals_add_up_and_tok_per_s_follows_its_formula)
{
    loaded l;
    load(&l, "configs/default.yaml", NULL, NULL, 0);
    for (int b = 0; b < CFG_BACKEND_COUNT; b++) {
        results_cycle r;
        model_eval(l.ctx, (cfg_backend)b, false, &r);
        if (!r.available)
            continue;
        /* 1 + 0.75 + 0.75 x 0.6 */
        cr_assert_float_eq(r.tokens_per_cycle, 2.2, 1e-12);
        double phases = 0.0;
        for (int i = 0; i < r.n_phases; i++) {
            double cls = 0.0;
            for (int c = 0; c < PLAN_CLASS_COUNT; c++)
                cls += r.phases[i].class_ms[c];
            cr_assert_float_eq(cls, r.phases[i].ms, 1e-9, "%s %s: classes sum to the phase", r.backend,
                               r.phases[i].name);
            phases += r.phases[i].ms;
        }
        cr_assert_float_eq(r.cycle_ms, phases + r.host_ms, 1e-9);
        cr_assert_float_eq(r.host_ms, 0.8, 1e-12, "host.cycle_overhead_us 800 of the target system");
        cr_assert_float_eq(r.draft_ms, r.draft_steps_ms + r.draft_extend_ms, 1e-12);
        cr_assert_float_eq(r.tok_per_s, 2.2 / (r.cycle_ms / 1000.0), 1e-9);
    }
    unload(&l);
}

Test(model_cycle, no_communication_is_the_floor_and_costs_no_launches)
{
    loaded l;
    load(&l, "configs/default.yaml", NULL, NULL, 0);
    results_cycle none, nccl;
    model_eval(l.ctx, CFG_BACKEND_NONE, false, &none);
    model_eval(l.ctx, CFG_BACKEND_NCCL, false, &nccl);
    cr_assert_float_eq(none.verify_class_ms[PLAN_CLASS_COMM], 0.0, 1e-12);
    cr_assert_float_eq(none.verify_class_ms[PLAN_CLASS_GEMM], nccl.verify_class_ms[PLAN_CLASS_GEMM], 1e-9);
    cr_assert(none.cycle_ms < nccl.cycle_ms);
    unload(&l);
}

Test(model_cycle, per_op_durations_line_up_with_the_plan)
{
    loaded l;
    load(&l, "configs/default.yaml", NULL, NULL, 0);
    results_cycle r;
    model_eval(l.ctx, CFG_BACKEND_NCCL, true, &r);
    int total = 0, verify_first = 0;
    for (int i = 0; i < l.p.n_phases; i++) {
        if (!strcmp(l.p.phases[i].name, "verify"))
            verify_first = total;
        total += l.p.phases[i].n_ops;
    }
    cr_assert_eq(r.n_op_us, total);
    const plan_phase *v = plan_find_phase(&l.p, "verify");
    double sum = 0.0, side = 0.0;
    for (int i = 0; i < v->n_ops; i++) {
        const double us = r.op_us[verify_first + i];
        if (v->ops[i].kind == PLAN_OP_ALLREDUCE)
            cr_assert_float_eq(us, 200.0, 1e-9, "op %d %s", i, v->ops[i].name);
        cr_assert(us > 0.0, "op %d %s", i, v->ops[i].name);
        sum += us + l.sc.system.launch.graph_node_us;
        if (v->ops[i].stream == PLAN_STREAM_SIDE)
            side += us + l.sc.system.launch.graph_node_us;
    }
    /* CUDA graph: one launch, then every kernel and its gap, less what the side stream hides. */
    const double serial_ms = (l.sc.system.launch.graph_launch_us + sum) / 1000.0;
    cr_assert(r.verify_ms < serial_ms, "overlap saves time: %f vs %f", r.verify_ms, serial_ms);
    cr_assert(r.verify_ms >= serial_ms - side / 1000.0 - 1e-9, "it cannot hide more than the side stream");
    results_cycle_free(&r);
    unload(&l);
}

Test(model_cycle, eager_launches_cost_more_than_a_graph)
{
    const char *eager[] = {"run.graph=false"};
    loaded g, e;
    load(&g, "configs/default.yaml", NULL, NULL, 0);
    load(&e, "configs/default.yaml", NULL, eager, 1);
    results_cycle rg, re;
    model_eval(g.ctx, CFG_BACKEND_NONE, false, &rg);
    model_eval(e.ctx, CFG_BACKEND_NONE, false, &re);
    cr_assert(re.verify_ms > rg.verify_ms, "eager %f, graph %f", re.verify_ms, rg.verify_ms);
    unload(&g);
    unload(&e);
}

Test(model_cycle, host_staged_mpi_relaunches_the_graph_after_each_collective)
{
    loaded l;
    load(&l, "configs/default.yaml", NULL, NULL, 0);
    results_cycle r;
    model_eval(l.ctx, CFG_BACKEND_MPI, false, &r);
    const double per = r.allreduce_us + l.sc.system.launch.graph_launch_us;
    cr_assert(r.verify_class_ms[PLAN_CLASS_COMM] * 1000.0 >= 123 * per - 1e-6, "comm %f ms for 123 x %f us",
              r.verify_class_ms[PLAN_CLASS_COMM], per);
    unload(&l);
}

Test(model_cycle, a_tiny_cycle_fits_in_l2_and_the_default_does_not)
{
    loaded t, d;
    load(&t, "configs/tiny.yaml", "configs/systems/rtx-pro-6000-4x-pcie.yaml", NULL, 0);
    load(&d, "configs/default.yaml", NULL, NULL, 0);
    cr_assert(model_ctx_in_l2(t.ctx));
    cr_assert_not(model_ctx_in_l2(d.ctx));
    unload(&t);
    unload(&d);
}

/* Every backend on every shipped system: a number, or a reason. */
Test(model_cycle, every_backend_on_every_shipped_system_gives_a_number_or_a_reason)
{
    DIR *dir = opendir(th_path("configs/systems"));
    cr_assert_not_null(dir);
    struct dirent *e;
    int systems = 0;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml"))
            continue;
        char rel[512];
        snprintf(rel, sizeof(rel), "configs/systems/%s", e->d_name);
        for (int pass = 0; pass < 2; pass++) {
            /* Pass 0 at the scenario's TP=8, pass 1 at a TP the system can host. */
            char tp[64];
            loaded probe;
            load(&probe, "configs/default.yaml", rel, NULL, 0);
            int gpus = probe.sc.system.gpus;
            unload(&probe);
            snprintf(tp, sizeof(tp), "parallel.tp=%d", pass == 0 ? 8 : (gpus >= 8 ? 8 : gpus));
            const char *sets[] = {tp};
            loaded l;
            load(&l, "configs/default.yaml", rel, sets, 1);
            for (int b = 0; b < CFG_BACKEND_COUNT; b++) {
                results_cycle r;
                model_eval(l.ctx, (cfg_backend)b, false, &r);
                if (r.available) {
                    cr_assert(isfinite(r.cycle_ms) && r.cycle_ms > 0 && r.tok_per_s > 0, "%s on %s", r.backend, rel);
                } else {
                    cr_assert(strlen(r.reason) > 10, "%s on %s: no reason", r.backend, rel);
                }
                /* Kimi-K2.5 needs ~560 GiB over its ranks: on one or two GPUs it does not fit, which is
                 * then the reason (the memory account is there on every result). */
                cr_assert(r.mem_known, "%s on %s: no memory account", r.backend, rel);
                const bool no_fit = !r.fits && strstr(r.reason, "does not fit: needs");
                if (b == CFG_BACKEND_NONE)
                    cr_assert(r.available || no_fit, "none always runs when it fits (%s): %s", rel, r.reason);
                if (pass == 1 && b == CFG_BACKEND_NCCL)
                    cr_assert(r.available || no_fit, "nccl at a TP the system hosts (%s): %s", rel, r.reason);
            }
            unload(&l);
        }
        systems++;
    }
    closedir(dir);
    cr_assert_geq(systems, 5, "the five shipped systems");
}

/* Every number in a shipped system file says where it comes from. */
Test(model_systems, every_figure_carries_its_provenance)
{
    static const char *const tags[] = {"# spec", "# measured", "# assumed", "# calibrated", "# nccl", "# unused"};
    DIR *dir = opendir(th_path("configs/systems"));
    cr_assert_not_null(dir);
    struct dirent *e;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml"))
            continue;
        char rel[512];
        snprintf(rel, sizeof(rel), "configs/systems/%s", e->d_name);
        FILE *f = fopen(th_path(rel), "r");
        cr_assert_not_null(f);
        char line[1024];
        int no = 0;
        while (fgets(line, sizeof(line), f)) {
            no++;
            if (!strncmp(line, "measured:", 9))
                break; /* measured tables carry a `source` string instead */
            char *colon = strchr(line, ':');
            const char *first = line + strspn(line, " ");
            if (*first == '#' || !colon) /* a comment line (a value's comment continued) holds no value */
                continue;
            const char *v = colon + 1;
            while (*v == ' ')
                v++;
            if (!*v || *v == '\n' || *v == '#' || !strncmp(line, "name:", 5) || !strncmp(line, "description:", 12) ||
                strstr(line, "  name:"))
                continue;
            bool tagged = false;
            for (size_t t = 0; t < sizeof(tags) / sizeof(tags[0]); t++)
                tagged |= strstr(line, tags[t]) != NULL;
            cr_assert(tagged, "%s:%d has no provenance tag: %s", rel, no, line);
        }
        fclose(f);
    }
    closedir(dir);
}

/* plan.shapes lets model_prepare price each shape once. The cycle must be exactly what pricing every op
 * gives: the same plan with its shape index taken away prices op by op, and every figure of every
 * backend, per op included, must agree to the bit, on scenarios whose plans hold the unusual ops
 * (fused allreduce_norm, split allreduces, two micro-batches, eager launches, a topk tree). */
Test(model_cycle, pricing_each_shape_once_gives_what_pricing_every_op_gives)
{
    const char *cases[][3] = {
        {"run.graph=true", NULL, NULL},
        {"run.graph=false", "fusion.allreduce_residual_norm=true", NULL},
        {"collectives.allreduce_split=true", NULL, NULL},
        {"overlap.two_batch=true", "workload.batch=4", NULL},
        {"speculative.topk=4", "speculative.num_draft_tokens=8", "workload.context=131072"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *const *sets = cases[c];
        int n_sets = 0;
        while (n_sets < 3 && sets[n_sets])
            n_sets++;
        loaded l;
        load(&l, "configs/default.yaml", NULL, sets, n_sets);
        cr_assert(l.p.n_shapes > 0 && l.p.n_shapes < 100, "%s: %d shapes", sets[0], l.p.n_shapes);
        int **kept = calloc((size_t)l.p.n_phases, sizeof(int *));
        for (int ph = 0; ph < l.p.n_phases; ph++) {
            kept[ph] = l.p.phases[ph].shape;
            l.p.phases[ph].shape = NULL;
        }
        char why[256];
        model_ctx *each = model_prepare(&l.sc, &l.p, why, sizeof(why));
        cr_assert_not_null(each, "%s", why);
        for (int ph = 0; ph < l.p.n_phases; ph++)
            l.p.phases[ph].shape = kept[ph];
        free(kept);
        for (int be = 0; be < CFG_BACKEND_COUNT; be++) {
            results_cycle a, b;
            model_eval(l.ctx, (cfg_backend)be, true, &a);
            model_eval(each, (cfg_backend)be, true, &b);
            cr_assert_eq(a.available, b.available, "%s %s", sets[0], cfg_backend_names[be]);
            cr_assert(a.cycle_ms == b.cycle_ms && a.verify_ms == b.verify_ms && a.mem_gib == b.mem_gib,
                      "%s %s: cycle %.17g vs %.17g ms", sets[0], cfg_backend_names[be], a.cycle_ms, b.cycle_ms);
            cr_assert_eq(a.n_op_us, b.n_op_us);
            for (int i = 0; a.op_us && i < a.n_op_us; i++)
                cr_assert(a.op_us[i] == b.op_us[i], "%s %s op %d: %.17g vs %.17g us", sets[0], cfg_backend_names[be],
                          i, a.op_us[i], b.op_us[i]);
            results_cycle_free(&a);
            results_cycle_free(&b);
        }
        model_free(each);
        unload(&l);
    }
}

/* measured.collectives=false: the collectives' formulas, the compute tables kept (a variant that changes
 * NCCL's transports on a box whose ops were measured); measured.use=false drops both. Neither warns that
 * a table "is not applied": the scenario said so. */
Test(model_cycle, measured_collectives_off_keeps_the_compute_tables)
{
    const char *off[] = {"system.measured.collectives=false"};
    loaded l;
    load(&l, "configs/default.yaml", NULL, off, 1);
    results_cycle r;
    model_eval(l.ctx, CFG_BACKEND_NCCL, false, &r);
    cr_assert(strstr(r.allreduce_method, "formula"), "%s", r.allreduce_method);
    for (int i = 0; i < r.n_warnings; i++)
        cr_assert(strcmp(r.warnings[i].code, "table-not-applied"), "%s", r.warnings[i].text);
    unload(&l);

    const char *probed_sets[][2] = {{"system.measured.collectives=true", NULL},
                                    {"system.measured.collectives=false", NULL},
                                    {"system.measured.use=false", NULL}};
    double gemm[3];
    for (int k = 0; k < 3; k++) {
        load(&l, "configs/default.yaml", "configs/systems/h200-1x-probed.yaml", probed_sets[k], 1);
        model_eval(l.ctx, CFG_BACKEND_NONE, false, &r);
        cr_assert(r.available, "%s", r.reason);
        gemm[k] = r.verify_class_ms[PLAN_CLASS_GEMM];
        unload(&l);
    }
    cr_assert(gemm[0] == gemm[1], "the probed laws kept: %.6f vs %.6f ms", gemm[0], gemm[1]);
    cr_assert(fabs(gemm[2] - gemm[0]) > 0.01 * gemm[0], "measured.use=false drops them: %.6f vs %.6f ms", gemm[2],
              gemm[0]);
}

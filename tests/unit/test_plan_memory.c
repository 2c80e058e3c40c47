/* The per-rank memory account against values computed by hand from models/tiny-*.yaml (TP=2, bf16,
 * routed experts INT4 with a bf16 scale per 32: 0.5625 B per weight), and the must-show verdict: the
 * Kimi-K2.5 scenario does not fit one 96 GB card at TP=1. */
#include "../../sim/plan/plan_memory.h"
#include "test_helpers.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <string.h>

static double item(const plan_memory *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->items[i].name, name) == 0)
            return m->items[i].bytes;
    return -1.0;
}

Test(plan_memory, tiny_scenario_line_by_line)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", NULL, 0, &sc, &p);
    plan_memory m;
    plan_memory_account(&sc, &p, CFG_BACKEND_NCCL, &m);
    /* vocab 4096 / 2 x hidden 256 x 2 B */
    cr_assert_float_eq(item(&m, "embedding"), 1048576.0, 1e-6);
    cr_assert_float_eq(item(&m, "lm_head"), 1048576.0, 1e-6);
    /* per layer: 256 x (96 + 64 + 16) + 96 x 4 x 48 + 64 x 4 x 64 + 4 x 32 x 256 = 112,640; x 2 B x 4 */
    cr_assert_float_eq(item(&m, "attention weights"), 901120.0, 1e-6);
    /* one dense layer: 3 x 256 x 256 x 2 B */
    cr_assert_float_eq(item(&m, "dense MLP"), 393216.0, 1e-6);
    /* 3 MoE layers x 16 experts x 3 x 256 x 64 x 0.5625 B: every expert is stored */
    cr_assert_float_eq(item(&m, "routed experts"), 1327104.0, 1e-6);
    /* 3 x (3 x 256 x 64 x 2 + 256 x 16 x 2) */
    cr_assert_float_eq(item(&m, "shared experts + router"), 319488.0, 1e-6);
    /* fc 3 x 256 x 256 + qkv 512 x 12 x 32 + o 128 x 256 + MLP 3 x 256 x 256 + lm_head 512 x 256, x 2 B */
    cr_assert_float_eq(item(&m, "draft head"), 1507328.0, 1e-6);
    /* (256 + 3) tokens x 4 layers x (64 + 16) x 2 B; draft: 259 x 2 x 4 heads x 32 x 2 B */
    cr_assert_float_eq(item(&m, "KV cache (target)"), 165760.0, 1e-6);
    cr_assert_float_eq(item(&m, "KV cache (draft)"), 132608.0, 1e-6);
    /* 2 channels x 3 connections x (4 MiB + 512 KiB + 4,915,200 B) */
    cr_assert_float_eq(item(&m, "NCCL buffers"), 57802752.0, 1e-6);
    cr_assert_lt(item(&m, "custom allreduce"), 0.0, "NCCL needs no custom workspace");
    double sum = 0;
    for (int i = 0; i < m.n; i++)
        sum += m.items[i].bytes;
    cr_assert_float_eq(m.total_bytes, sum, 1e-6);
    cr_assert(m.fits);
    plan_memory_account(&sc, &p, CFG_BACKEND_ONESHOT, &m);
    cr_assert_float_eq(item(&m, "custom allreduce"), sc.system.memory.custom_workspace_mib * 1048576.0, 1e-6);
    th_plan_done(&sc, &p);
}

Test(plan_memory, context_and_batch_scale_the_kv_cache_only)
{
    const char *sets[] = {"workload.context=1021", "workload.batch=4"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", sets, 2, &sc, &p);
    plan_memory m;
    plan_memory_account(&sc, &p, CFG_BACKEND_NCCL, &m);
    /* 4 x (1021 + 3) = 4096 tokens x 320 elements x 2 B */
    cr_assert_float_eq(item(&m, "KV cache (target)"), 4096.0 * 320 * 2, 1e-6);
    cr_assert_float_eq(item(&m, "routed experts"), 1327104.0, 1e-6);
    th_plan_done(&sc, &p);
}

Test(plan_memory, kimi_at_tp1_does_not_fit_one_card)
{
    th_result r = th_run("plan --set parallel.tp=1 configs/default.yaml");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "does not fit: needs "), "%s", r.out);
    cr_assert(strstr(r.out, " GiB of 95.6"), "held against the RTX PRO 6000's memory");
    th_free(&r);
    r = th_run("plan configs/default.yaml");
    cr_assert(strstr(r.out, "memory per rank (fits: "), "TP=8 fits, as the seed box runs it");
    th_free(&r);
}

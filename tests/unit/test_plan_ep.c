/* Expert parallelism (parallel.ep, parallel.dp_attention): plan shapes on configs/tiny.yaml, the config's
 * refusals, the memory account and the all-to-all's cost, against values worked out by hand from
 * models/tiny-*.yaml (hidden 256, 8 heads, 16 experts of intermediate 128, top_k 2, 1 shared expert,
 * first_k_dense 1 of 4 layers) and the default system file. */
#include "../../sim/model/model.h"
#include "../../sim/plan/plan_ep.h"
#include "../../sim/plan/plan_memory.h"
#include "test_helpers.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int index_of(const plan_phase *ph, const char *name, int layer)
{
    for (int i = 0; i < ph->n_ops; i++)
        if (ph->ops[i].layer == layer && strcmp(ph->ops[i].name, name) == 0)
            return i;
    return -1;
}

static const plan_op *op_at(const plan_phase *ph, const char *name, int layer)
{
    const int i = index_of(ph, name, layer);
    cr_assert_geq(i, 0, "no op %s in layer %d of %s", name, layer, ph->name);
    return &ph->ops[i];
}

Test(plan_ep, helpers_round_up_and_pad)
{
    cr_assert_eq(plan_ep_rows_shard(3, 2), 2);
    cr_assert_eq(plan_ep_rows_shard(3, 8), 1, "batch 1 x 3 tokens over 8 ranks: the busiest has 1 row");
    cr_assert_eq(plan_ep_rows_shard(16, 8), 2);
    /* 1 row x top-3 x hidden 5 = 15 elements: padded to 16 for 2 equal blocks */
    cr_assert_eq(plan_ep_alltoall_count(1, 3, 5, 2), 16);
    cr_assert_eq(plan_ep_alltoall_count(1, 8, 7168, 8), 57344, "divisible: no padding");
    /* 23.3 expected distinct of 384 (3 rows x top-8) over 8 ranks: 23 / 8 rounds to 3 */
    cr_assert_eq(plan_ep_active_experts(23, 384, 8), 3);
    cr_assert_eq(plan_ep_active_experts(0, 384, 8), 1, "a rank with routed rows runs at least one expert");
    cr_assert_eq(plan_ep_active_experts(400, 16, 2), 8, "at most its experts / ep");
}

Test(plan_ep, tp_attention_moe_block_shapes_and_order)
{
    const char *sets[] = {"parallel.ep=2"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", sets, 1, &sc, &p);
    const plan_phase *v = th_phase(&p, "verify");
    /* verify: batch 1 x 3 tokens = 3 rows; each rank routes ceil(3 / 2) = 2 */
    const char *order[] = {"post_attention_layernorm", "moe.gate", "moe.topk", "shared.gate_up", "shared.silu_mul",
                           "shared.down", "alltoall.dispatch", "moe.w13", "moe.silu_mul", "moe.w2",
                           "alltoall.combine", "moe.combine", "allgather.moe"};
    const int first = index_of(v, order[0], 1);
    cr_assert_geq(first, 0);
    for (int i = 1; i < (int)(sizeof(order) / sizeof(*order)); i++)
        cr_assert_str_eq(v->ops[first + i].name, order[i], "op %d after post_attention_layernorm", i);
    cr_assert_str_eq(v->ops[first + 13].name, "input_layernorm", "the next layer starts after the all-gather");
    cr_assert_eq(index_of(v, "allreduce.moe", 1), -1, "the all-gather replaces allreduce.moe");

    th_assert_gemm(op_at(v, "moe.gate", 1), 2, 256, 16, 1);
    /* shared expert replicated (full intermediate 128) on the rank's 2 rows, side stream */
    const plan_op *sg = op_at(v, "shared.gate_up", 1);
    th_assert_gemm(sg, 2, 256, 256, 1);
    cr_assert_eq(sg->stream, PLAN_STREAM_SIDE);
    /* dispatch: 2 rows x top-2 x 256 = 1024 elements per rank, 2048 B */
    const plan_op *d = op_at(v, "alltoall.dispatch", 1), *c = op_at(v, "alltoall.combine", 1);
    cr_assert_eq(d->kind, PLAN_OP_ALLTOALL);
    cr_assert_eq(d->count, 1024);
    cr_assert_eq(d->payload_bytes, 2048);
    cr_assert_eq(d->ranks, 2);
    cr_assert_eq(c->count, 1024);
    /* 16 (1 - (14/16)^3) = 5.28 -> 5 distinct experts over both ranks; (5 + 1) / 2 = 3 of this rank's 8.
     * Routed rows: 2 x 2 = 4; whole experts: n = 2 x 128 (not 128 / TP). */
    cr_assert_eq(p.active_experts, 5);
    th_assert_gemm(op_at(v, "moe.w13", 1), 4, 256, 256, 3);
    th_assert_gemm(op_at(v, "moe.w2", 1), 4, 128, 256, 3);
    cr_assert_eq(op_at(v, "moe.w13", 1)->kind, PLAN_OP_GROUPED_GEMM);
    const plan_op *g = op_at(v, "allgather.moe", 1);
    cr_assert_eq(g->kind, PLAN_OP_ALLGATHER);
    cr_assert_eq(g->count, 512, "2 rows x 256");
    /* 3 MoE layers x 2 all-to-alls; allreduces: embedding, 4 attention, 1 dense MLP */
    cr_assert_eq(th_count_kind(v, PLAN_OP_ALLTOALL), 6);
    cr_assert_eq(th_count_kind(v, PLAN_OP_ALLREDUCE), 6);
    cr_assert_eq(th_count_kind(v, PLAN_OP_ALLGATHER), 4, "3 MoE layers + the logits");
    /* the dense layer and the draft stay TP */
    cr_assert_not_null(th_find_op(v, "allreduce.mlp", 0));
    cr_assert_eq(th_count_kind(th_phase(&p, "draft_1"), PLAN_OP_ALLTOALL), 0);
    th_plan_done(&sc, &p);
}

Test(plan_ep, dp_attention_shapes)
{
    const char *sets[] = {"parallel.ep=2", "parallel.dp_attention=true", "workload.batch=2"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", sets, 3, &sc, &p);
    const plan_phase *v = th_phase(&p, "verify");
    /* 2 requests x 3 tokens = 6 rows, 3 of them this rank's (its 1 request) */
    const plan_op *emb = op_at(v, "embedding", -1);
    cr_assert_eq(emb->m, 3);
    cr_assert_eq(emb->k, 4096, "replicated table");
    cr_assert_eq(index_of(v, "allreduce.embedding", -1), -1);
    /* whole attention: 8 heads x (32 nope + 16 rope) = 384 */
    th_assert_gemm(op_at(v, "q_b_proj", 1), 3, 96, 384, 1);
    th_assert_gemm(op_at(v, "o_proj", 1), 3, 8 * 32, 256, 1);
    const plan_op *at = op_at(v, "mla_attention", 1);
    cr_assert_eq(at->batch, 1);
    cr_assert_eq(at->heads, 8);
    cr_assert_eq(index_of(v, "allreduce.attn", 1), -1, "no attention allreduce");
    /* MoE: own 3 rows, 3 x 2 x 256 = 1536 per all-to-all, no all-gather after it */
    cr_assert_eq(op_at(v, "alltoall.dispatch", 1)->count, 1536);
    th_assert_gemm(op_at(v, "moe.gate", 1), 3, 256, 16, 1);
    cr_assert_eq(index_of(v, "allgather.moe", 1), -1);
    /* dense layer 0: gather 3 x 256, TP MLP over all 6 rows (512 / 2 = 256), allreduce 6 x 256 */
    cr_assert_eq(op_at(v, "allgather.mlp_in", 0)->count, 768);
    th_assert_gemm(op_at(v, "mlp.gate_up", 0), 6, 256, 512, 1);
    cr_assert_eq(op_at(v, "allreduce.mlp", 0)->count, 1536);
    /* lm_head vocab-parallel over all rows: 4096 / 2 */
    cr_assert_eq(op_at(v, "allgather.lm_in", -1)->count, 768);
    th_assert_gemm(op_at(v, "lm_head", -1), 6, 256, 2048, 1);
    cr_assert_eq(op_at(v, "allgather.logits", -1)->count, 6 * 2048);
    cr_assert_eq(th_count_kind(v, PLAN_OP_ALLREDUCE), 1, "only the dense MLP's");
    /* the draft head stays TP: its attention allreduce is there */
    cr_assert_not_null(th_find_op(th_phase(&p, "draft_extend"), "allreduce.attn", 0));
    th_plan_done(&sc, &p);
}

Test(plan_ep, plan_table_lists_the_alltoalls)
{
    th_result r = th_run("plan configs/tiny.yaml --set parallel.ep=2");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* 3 MoE layers x dispatch + combine, 1024 elements x 2 B */
    cr_assert_not_null(strstr(r.out, "verify        all-to-all (expert parallelism): 6 x 2048 B per rank"), "%s", r.out);
    cr_assert_null(strstr(r.out, "draft_1       all-to-all"), "the draft stays TP:\n%s", r.out);
    th_free(&r);
}

Test(plan_ep, config_refusals_name_the_keys)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set parallel.ep=4"), "parallel.ep=4", "must be 1 or parallel.tp=2");
    th_expect_bad(th_run("plan configs/tiny.yaml --set parallel.ep=2 --set model.moe.experts=15"),
                  "model.moe.experts=15", "parallel.ep=2 does not divide model moe.experts=15");
    th_expect_bad(th_run("plan configs/tiny.yaml --set parallel.dp_attention=true"), "parallel.dp_attention",
                  "needs parallel.ep > 1");
    th_expect_bad(th_run("plan configs/tiny.yaml --set parallel.ep=2 --set parallel.dp_attention=true"),
                  "workload.batch=1", "not a multiple of parallel.ep=2");
}

static double item(const plan_memory *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->items[i].name, name) == 0)
            return m->items[i].bytes;
    return -1.0;
}

Test(plan_ep, memory_account_by_hand)
{
    const char *sets[] = {"parallel.ep=2", "parallel.dp_attention=true", "workload.batch=2"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", sets, 1, &sc, &p);
    plan_memory m;
    plan_memory_account(&sc, &p, CFG_BACKEND_NCCL, &m);
    /* 3 MoE layers x 16 / 2 whole experts x 3 x 256 x 128 x 0.5625 B: the same bytes as TP's slices */
    cr_assert_float_eq(item(&m, "routed experts"), 1327104.0, 1e-6);
    /* replicated shared expert: 3 x (3 x 256 x 128 x 2 + router 256 x 16 x 2) */
    cr_assert_float_eq(item(&m, "shared experts + router"), 614400.0, 1e-6);
    /* (2 - 1) peers x 2 channels x (4 MiB + 512 KiB + 4,915,200 B) */
    cr_assert_float_eq(item(&m, "NCCL all-to-all buffers"), 19267584.0, 1e-6);
    /* attention stays TP: as in test_plan_memory.c */
    cr_assert_float_eq(item(&m, "attention weights"), 901120.0, 1e-6);
    th_plan_done(&sc, &p);

    th_plan_build("configs/tiny.yaml", sets, 3, &sc, &p);
    plan_memory_account(&sc, &p, CFG_BACKEND_NCCL, &m);
    /* whole attention: 256 x (96 + 64 + 16) + 96 x 8 x 48 + 64 x 8 x 64 + 8 x 32 x 256 = 180,224; x 2 B x 4 */
    cr_assert_float_eq(item(&m, "attention weights"), 1441792.0, 1e-6);
    cr_assert_float_eq(item(&m, "embedding"), 4096.0 * 256 * 2, 1e-6, "replicated");
    cr_assert_float_eq(item(&m, "lm_head"), 2048.0 * 256 * 2, 1e-6, "still vocab-parallel");
    /* own request: 2 x 259 / 2 tokens x 4 layers x 80 x 2 B; the draft (TP) caches both: 2 x 259 x 2 x 4 x 32 x 2 */
    cr_assert_float_eq(item(&m, "KV cache (target)"), 165760.0, 1e-6);
    cr_assert_float_eq(item(&m, "KV cache (draft)"), 265216.0, 1e-6);
    th_plan_done(&sc, &p);
}

/* Kimi-K2.5 at EP=8 on the 8 x 96 GB box: the experts still split 8 ways, the shared expert is whole. */
Test(plan_ep, kimi_ep8_memory)
{
    const char *sets[] = {"parallel.ep=8"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, 1, &sc, &p);
    plan_memory m;
    plan_memory_account(&sc, &p, CFG_BACKEND_NCCL, &m);
    const cfg_model *t = &sc.target;
    const double wb = cfg_dtype_weight_bytes((cfg_dtype)t->weights.routed_experts.dtype, t->weights.routed_experts.group);
    cr_assert_float_eq(item(&m, "routed experts"), 60.0 * 48 * 3 * 7168 * 2048 * wb, 1.0);
    const double sb = cfg_dtype_weight_bytes((cfg_dtype)t->weights.shared_expert.dtype, t->weights.shared_expert.group);
    const double rb = cfg_dtype_weight_bytes((cfg_dtype)t->weights.router.dtype, t->weights.router.group);
    cr_assert_float_eq(item(&m, "shared experts + router"), 60.0 * (3.0 * 7168 * 2048 * sb + 7168.0 * 384 * rb), 1.0);
    cr_assert(m.fits, "%s", m.verdict);
    th_plan_done(&sc, &p);
}

Test(plan_ep, alltoall_cost_by_hand)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", NULL, 0, &sc, &p);
    model_coll c;
    /* 114,688 B over 8 ranks: blocks of 14,336 B <= 16 KiB go by LL. NCCL 2.28 on the AMD target with 8
     * GPUs sends every pair through host memory (SHM). Each of a rank's 7 messages waits for its line there:
     * the store up (PCIe 0.2 + root complex 0.1 + DRAM 0.3 = 0.6) and the reader's poll round trip, 2 x 0.6
     * from the same socket, 2 x (0.6 + socket 0.1 + root complex 0.1) = 1.6 from the other: 3 x 1.8 + 4 x 2.2
     * = 14.2 after the base 6.6 = 20.8 us. Each GPU loads its 7 x 2 x 14,336 = 200,704 B (LL lines) back
     * from host memory at links.sysmem_load_gbs 0.56 GB/s with every GPU doing so: 358.4 us, slower than
     * the socket link's 4 x 4 pairs x 28,672 B at 30 GB/s (15.29 us). */
    model_collective(&sc.system, CFG_BACKEND_NCCL, PLAN_OP_ALLTOALL, 114688, 8, NULL, &c);
    cr_assert(c.available);
    cr_assert_float_eq(c.us, 20.8 + 200704.0 / 560.0, 1e-6, "%f", c.us);
    /* 524,288 B: blocks of 65,536 B by Simple: a step adds the fence 1.0 and the load from host memory
     * 1.2: 8.4 + 3 x 4.0 + 4 x 4.4 = 38.0 us + 7 x 65,536 B / 0.56 GB/s */
    model_collective(&sc.system, CFG_BACKEND_NCCL, PLAN_OP_ALLTOALL, 524288, 8, NULL, &c);
    cr_assert_float_eq(c.us, 38.0 + 458752.0 / 560.0, 1e-6, "%f", c.us);
    /* NCCL_P2P_LEVEL=SYS: every pair P2P, a message waits for its store to be seen: 0.5 us within a socket
     * (PCIe 0.2 + root complex 0.1 + PCIe 0.2), 0.7 across (+ socket 0.1 + root complex 0.1): 6.6 + 3 x 0.5
     * + 4 x 0.7 = 10.9 us; the socket link now bounds the bytes. */
    sc.system.nccl.p2p_level = CFG_NCCL_LEVEL_SYS;
    model_collective(&sc.system, CFG_BACKEND_NCCL, PLAN_OP_ALLTOALL, 114688, 8, NULL, &c);
    cr_assert_float_eq(c.us, 10.9 + 458752.0 / 30000.0, 1e-6, "%f", c.us);
    /* the custom allreduce has no all-to-all: NCCL's, said in the method */
    model_collective(&sc.system, CFG_BACKEND_ONESHOT, PLAN_OP_ALLTOALL, 114688, 8, NULL, &c);
    cr_assert_float_eq(c.us, 10.9 + 458752.0 / 30000.0, 1e-6);
    cr_assert_not_null(strstr(c.method, "oneshot has none"), "%s", c.method);
    /* host-staged: 2 x (10 + 114,688 / (63 x 0.85 x 1000)) + 7 x (1.5 + 2 x 14,336 / 8000) (fp32 on the host)
     * + 2 x 114,688 B converted at convert_gbs 3 */
    model_collective(&sc.system, CFG_BACKEND_MPI, PLAN_OP_ALLTOALL, 114688, 8, NULL, &c);
    cr_assert_float_eq(c.us, 2.0 * (10.0 + 114688.0 / 53550.0) + 7.0 * (1.5 + 28672.0 / 8000.0) + 229376.0 / 3000.0,
                       1e-6, "%f", c.us);
    th_plan_done(&sc, &p);
}

/* Through host memory NCCL stages every pair (SHM): each of a rank's 7 messages waits for a flag there,
 * the store to the writer's host memory and the reader's poll round trip. */
Test(plan_ep, alltoall_through_host_memory_pays_the_shm_steps)
{
    const char *sets[] = {"system.topology.p2p=sysmem"};
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/default.yaml", sets, 1, &sc, &p);
    model_terms t;
    t.n = 0;
    model_coll c, direct;
    model_collective(&sc.system, CFG_BACKEND_NCCL, PLAN_OP_ALLTOALL, 114688, 8, &t, &c);
    /* Store to host memory: PCIe 0.2 + root complex 0.1 + DRAM 0.3 = 0.6 us; the poll's round trip
     * from a GPU on the same socket 2 x 0.6, from the other socket 2 x (0.6 + socket 0.1 + root complex
     * 0.1) = 1.6: 1.8 us and 2.2 us. A rank: 3 x 1.8 + 4 x 2.2 = 14.2 us after the base 6.6. */
    cr_assert_float_eq(model_term_get(&t, "shm_transport"), 56.0, 1e-9);
    cr_assert_float_eq(model_term_get(&t, "p2p_latency"), 20.8, 1e-9);
    /* P2P everywhere (direct peer access and NCCL_P2P_LEVEL=SYS): 6.6 + 3 x 0.5 + 4 x 0.7 = 10.9 */
    sc.system.topology.p2p = CFG_P2P_DIRECT;
    sc.system.nccl.p2p_level = CFG_NCCL_LEVEL_SYS;
    model_terms td;
    td.n = 0;
    model_collective(&sc.system, CFG_BACKEND_NCCL, PLAN_OP_ALLTOALL, 114688, 8, &td, &direct);
    cr_assert_float_eq(model_term_get(&td, "p2p_latency"), 10.9, 1e-9);
    cr_assert(isnan(model_term_get(&td, "shm_transport")), "no SHM pair left");
    cr_assert_gt(c.us, direct.us + 20.8 - 10.9 - 1e-9, "host memory: %f vs %f", c.us, direct.us);
    th_plan_done(&sc, &p);
}

Test(plan_ep, model_costs_the_ep8_alltoalls)
{
    th_result r = th_run("model --set parallel.ep=8 --backend nccl --explain");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "one alltoall: alltoall.dispatch, layer 1, 114688 B per rank over 8 ranks"),
                       "%s", r.out);
    /* 20.8 + 200,704 / 560 = 379.2 us (alltoall_cost_by_hand) */
    cr_assert_not_null(strstr(r.out, "nccl = 379.20 us  (formula: NCCL grouped send/recv all-to-all)"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "alltoall.dispatch            60 x   379.20 us"), "%s", r.out);
    th_free(&r);
}

static th_result mpirun_vpsim(const char *args)
{
    return th_mpirun(2, "run %s", args);
}

/* The CPU replay of the EP plan (MPI_Alltoall on fp32 host buffers), every collective checked. */
Test(plan_ep_run, cpu_replay_checks_the_alltoalls, .timeout = 120)
{
    th_result r = mpirun_vpsim("configs/tiny.yaml --device cpu --backend mpi --set parallel.tp=2 --set parallel.ep=2 "
                               "--check --iters 2 --warmup 0");
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert_null(strstr(r.err, "check failed"), "%s", r.err);
    th_free(&r);
    r = mpirun_vpsim("configs/tiny.yaml --device cpu --backend mpi --set parallel.ep=2 --set parallel.dp_attention=true "
                     "--set workload.batch=2 --check --iters 1 --warmup 0");
    cr_assert_eq(r.status, 0, "dp attention: exit %d\n%s\n%s", r.status, r.out, r.err);
    th_free(&r);
}

/* A plan of one all-to-all: the check compares it with its host reference, and a corrupted result fails
 * naming it. */
Test(plan_ep_run, corrupted_alltoall_fails_the_check, .timeout = 120)
{
    static const char json[] =
        "{\"schema\": \"vpsim.plan/1\", \"scenario\": \"a2a\", \"ranks\": 2, \"batch\": 1, \"context\": 256,"
        " \"active_experts\": 5, \"expected_tokens\": 2, \"phases\": [{\"name\": \"draft_1\", \"kind\": \"draft\","
        " \"model\": \"draft\", \"tokens\": 1, \"batch\": 1, \"ops\": [{\"kind\": \"norm\", \"name\": \"norm\", \"m\": 1, \"n\": 256}]}, {\"name\": \"verify\", \"kind\": \"verify\","
        " \"model\": \"target\", \"tokens\": 3, \"batch\": 1, \"ops\": [{\"kind\": \"alltoall\", \"name\":"
        " \"alltoall.dispatch\", \"layer\": 3, \"stream\": \"main\", \"adtype\": \"bf16\", \"count\": 1024,"
        " \"ranks\": [0, 1]}]}, {\"name\": \"draft_extend\", \"kind\": \"draft_extend\", \"model\": \"draft\","
        " \"tokens\": 3, \"batch\": 1, \"ops\": [{\"kind\": \"norm\", \"name\": \"norm\", \"m\": 1, \"n\": 256}]}]}\n";
    char *path = th_write_temp(json, sizeof(json) - 1, ".json");
    char args[512];
    snprintf(args, sizeof(args), "configs/tiny.yaml --plan %s --device cpu --backend mpi --check --iters 1 --warmup 0",
             path);
    th_result r = mpirun_vpsim(args);
    cr_assert_eq(r.status, 0, "clean: exit %d\n%s\n%s", r.status, r.out, r.err);
    th_free(&r);
    strcat(args, " --debug-corrupt-rank 1");
    r = mpirun_vpsim(args);
    cr_assert_eq(r.status, 1, "corrupted: exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert_not_null(strstr(r.err, "alltoall 'alltoall.dispatch' (phase verify, op 0) wrong on rank 1"), "%s", r.err);
    th_free(&r);
    unlink(path);
    free(path);
}

Test(plan_ep_run, custom_backend_refuses_the_alltoall)
{
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend oneshot --set parallel.ep=2");
    cr_assert_eq(r.status, 2, "exit %d\n%s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, "backend oneshot has no alltoall"), "%s", r.err);
    th_free(&r);
}

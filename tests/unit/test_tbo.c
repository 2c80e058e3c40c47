/* Two-batch overlap: the config check, the split plan's shapes and order, the model's
 * critical path on a hand-computed schedule, and the CPU replay with --check. */
#include "../../sim/model/model_internal.h"
#include "../../sim/plan/plan_json.h"
#include "test_helpers.h"
#include "th_model.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(tbo_config, one_request_cannot_be_split)
{
    th_expect_bad(th_run("plan configs/tiny.yaml --set overlap.two_batch=true"), "overlap.two_batch",
                  "needs workload.batch >= 2");
    th_expect_bad(th_run("model configs/default.yaml --set overlap.two_batch=true --set workload.batch=1"),
                  "workload.batch=1", "micro-batches");
}

/* The op name without its ".a" / ".b" suffix equals `base`. */
static bool is_half_of(const char *name, const char *base, char mb)
{
    const size_t n = strlen(base);
    return strncmp(name, base, n) == 0 && name[n] == '.' && name[n + 1] == mb && name[n + 2] == '\0';
}

/* Batch 2 -> micro-batches of 1 and 1; batch 3 -> 2 and 1 (a takes the extra request). */
static void check_split(const char *batch, int part_a, int part_b)
{
    const char *sets_base[] = {batch};
    const char *sets_tbo[] = {batch, "overlap.two_batch=true"};
    cfg_scenario sb, st;
    plan pb, pt;
    th_plan_build("configs/tiny.yaml", sets_base, 1, &sb, &pb);
    th_plan_build("configs/tiny.yaml", sets_tbo, 2, &st, &pt);
    const int B = part_a + part_b;
    const plan_phase *vb = th_phase(&pb, "verify"), *vt = th_phase(&pt, "verify");
    cr_assert_eq(vt->n_ops, 2 * vb->n_ops);
    cr_assert(plan_phase_is_tbo(vt));
    cr_assert(!plan_phase_is_tbo(th_phase(&pt, "draft_1")), "draft phases are not split");
    cr_assert_eq(th_phase(&pt, "draft_extend")->n_ops, th_phase(&pb, "draft_extend")->n_ops);

    /* Walk the base phase stage by stage (a stage ends at a collective): a's copy, then b's. */
    int k = 0;
    double gemm_w_base = 0.0, gemm_w_tbo = 0.0;
    for (int start = 0; start < vb->n_ops;) {
        int end = start;
        while (end < vb->n_ops && !plan_op_is_collective(vb->ops[end].kind))
            end++;
        end += end < vb->n_ops;
        for (int mb = 1; mb <= 2; mb++) {
            const int part = mb == 1 ? part_a : part_b;
            for (int i = start; i < end; i++, k++) {
                const plan_op *o = &vb->ops[i], *h = &vt->ops[k];
                cr_assert(is_half_of(h->name, o->name, mb == 1 ? 'a' : 'b'), "op %d: %s for %s", k, h->name, o->name);
                cr_assert_eq(h->micro_batch, mb, "%s", h->name);
                cr_assert_eq(h->stream, PLAN_STREAM_MAIN, "%s", h->name);
                cr_assert_eq(h->m * B, o->m * part, "%s: m %lld of %lld", h->name, h->m, o->m);
                cr_assert_eq(h->count * B, o->count * part, "%s", h->name);
                cr_assert_eq(h->payload_bytes * B, o->payload_bytes * part, "%s", h->name);
                if (o->kind == PLAN_OP_ATTENTION)
                    cr_assert_eq(h->batch, part, "%s", h->name);
                if (o->kind == PLAN_OP_GROUPED_GEMM) {
                    /* tiny: 16 experts, top-2; E (1 - (1 - k/E)^tokens) for this half's tokens. */
                    const int E = st.target.moe.experts, top = st.target.moe.top_k;
                    const double t = (double)part * vt->tokens;
                    int want = (int)lround(E * (1.0 - pow(1.0 - (double)top / E, t)));
                    want = want < top ? top : want;
                    want = want > o->batch ? o->batch : want;
                    cr_assert_eq(h->batch, want, "%s: %d experts for %g tokens", h->name, h->batch, t);
                    cr_assert(h->batch <= o->batch);
                }
                if (o->kind == PLAN_OP_GEMM) {
                    gemm_w_tbo += h->weight_bytes;
                    if (mb == 1)
                        gemm_w_base += o->weight_bytes;
                }
            }
        }
        /* The op after a's collective is b's first op of the same stage: b's compute sits beside it. */
        if (end - start >= 2 && plan_op_is_collective(vb->ops[end - 1].kind)) {
            const int a_coll = k - 2 * (end - start) + (end - start) - 1;
            cr_assert_eq(vt->ops[a_coll].micro_batch, 1);
            cr_assert(plan_op_is_collective(vt->ops[a_coll].kind));
            cr_assert_eq(vt->ops[a_coll + 1].micro_batch, 2);
            cr_assert(plan_op_is_compute(vt->ops[a_coll + 1].kind), "%s", vt->ops[a_coll + 1].name);
        }
        start = end;
    }
    cr_assert_eq(k, vt->n_ops);
    /* Every dense weight is read once per micro-batch: TBO's cost at small batch. */
    cr_assert_float_eq(gemm_w_tbo, 2.0 * gemm_w_base, 1e-6 * gemm_w_base);
    th_plan_done(&sb, &pb);
    th_plan_done(&st, &pt);
}

Test(tbo_plan, batch_2_doubles_the_ops_with_halved_rows_stage_by_stage) { check_split("workload.batch=2", 1, 1); }
Test(tbo_plan, an_odd_batch_gives_micro_batch_a_the_extra_request) { check_split("workload.batch=3", 2, 1); }

Test(tbo_plan, micro_batch_survives_the_json_round_trip)
{
    char tmpl[] = "/tmp/vpsim-tbo-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    char path[300];
    snprintf(path, sizeof(path), "%s/plan.json", tmpl);
    th_result r = th_run("plan configs/tiny.yaml --set workload.batch=2 --set overlap.two_batch=true --format json "
                         "--out %s",
                         path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    const char *sets[] = {"workload.batch=2", "overlap.two_batch=true"};
    cfg_scenario sc;
    plan built, loaded;
    th_plan_build("configs/tiny.yaml", sets, 2, &sc, &built);
    cfg_error err = {{0}};
    cr_assert_eq(plan_json_load(path, &loaded, &err), 0, "%s", err.msg);
    const plan_phase *a = th_phase(&built, "verify"), *b = th_phase(&loaded, "verify");
    cr_assert_eq(a->n_ops, b->n_ops);
    for (int i = 0; i < a->n_ops; i++)
        cr_assert_eq(a->ops[i].micro_batch, b->ops[i].micro_batch, "op %d %s", i, a->ops[i].name);
    cr_assert(plan_phase_is_tbo(b));
    plan_free(&loaded);
    th_plan_done(&sc, &built);
    unlink(path);
    rmdir(tmpl);
}

/* Two stages per micro-batch in a CUDA graph: C1 = 10 us, C2 = 6 us of compute, every collective 8 us,
 * kernel gap (graph node) 1 us, graph launch 5 us. */
static model_ctx *hand_ctx(model_op *ops, model_phase_span *span)
{
    static const struct {
        int mb;
        bool coll;
        double us;
    } seq[8] = {{1, false, 10}, {1, true, 0}, {2, false, 10}, {2, true, 0},
                {1, false, 6},  {1, true, 0}, {2, false, 6},  {2, true, 0}};
    for (int i = 0; i < 8; i++) {
        memset(&ops[i], 0, sizeof(ops[i]));
        ops[i].mb = (unsigned char)seq[i].mb;
        ops[i].coll = seq[i].coll ? 0 : -1;
        ops[i].cls = seq[i].coll ? PLAN_CLASS_COMM : PLAN_CLASS_GEMM;
        ops[i].us = seq[i].us;
        ops[i].region = -1;
    }
    *span = (model_phase_span){.first = 0, .n = 8, .tbo = true};
    model_ctx *ctx = calloc(1, sizeof(*ctx));
    ctx->ops = ops;
    ctx->phases = span;
    ctx->graph = true;
    ctx->n_ops = 8;
    return ctx;
}

Test(tbo_model, the_critical_path_of_two_chains_matches_a_hand_schedule)
{
    model_op ops[8];
    model_phase_span span;
    model_ctx *ctx = hand_ctx(ops, &span);
    const double cost[1] = {8.0};
    const launch_costs L = {.graph_node = 1.0, .graph_launch = 5.0};
    double cls[PLAN_CLASS_COUNT] = {0}, op_us[8] = {0};
    model_tbo_sums s;
    /* stretch 2 (half the SMs left): by hand, [start, end) of each op:
     *   a.C1 [6,16)  a.AR1 [17,25)
     *   b.C1 [17,31): 8 us beside a.AR1 at half speed do 4 us of its 10, then 6 us
     *   b.AR1 [32,40)
     *   a.C2 [32,42): 8 us beside b.AR1 do 4 of 6, then 2
     *   a.AR2 [43,51)
     *   b.C2 [43,53): the same against a.AR2
     *   b.AR2 [54,62)                                   -> critical path 62 us */
    const double cp = model_tbo_phase(ctx, 0, cost, &L, 2.0, cls, op_us, &s);
    cr_assert_float_eq(cp, 62.0, 1e-9);
    cr_assert_float_eq(s.critical_path, 62.0, 1e-9);
    cr_assert_float_eq(s.compute, 11 + 11 + 7 + 7, 1e-9);
    cr_assert_float_eq(s.comm, 4 * 9.0, 1e-9);
    cr_assert_float_eq(s.serial, 5 + 36 + 36, 1e-9);
    cr_assert_float_eq(s.stretched, 12.0, 1e-9);
    cr_assert_float_eq(op_us[2], 14.0, 1e-9);
    cr_assert_float_eq(op_us[4], 10.0, 1e-9);
    cr_assert_float_eq(op_us[1], 8.0, 1e-9);
    double sum = 0.0;
    for (int c = 0; c < PLAN_CLASS_COUNT; c++)
        sum += cls[c];
    cr_assert_float_eq(sum, 62.0, 1e-9, "the classes share out the critical path");
    cr_assert_float_eq(cls[PLAN_CLASS_OTHER], 5.0, 1e-9, "the graph launch");
    /* stretch 1 (the collective takes no SMs): b.C1 [17,27), b.AR1 [28,36), a.C2 [28,34), a.AR2 [37,45),
     * b.C2 [37,43), b.AR2 [46,54). */
    memset(cls, 0, sizeof(cls));
    cr_assert_float_eq(model_tbo_phase(ctx, 0, cost, &L, 1.0, cls, NULL, &s), 54.0, 1e-9);
    /* No overlap at all: the serial walk, 5 + 36 + 36. */
    memset(cls, 0, sizeof(cls));
    cr_assert_float_eq(model_tbo_phase(ctx, 0, cost, &L, INFINITY, cls, NULL, &s), 77.0, 1e-9);
    free(ctx);
}

Test(tbo_model, stretch_comes_from_the_system_sms_and_channels)
{
    cfg_scenario sc;
    memset(&sc, 0, sizeof(sc));
    sc.system.gpu.sms = 132;
    sc.system.nccl.channels = 16;
    cr_assert_float_eq(model_tbo_stretch(&sc, CFG_BACKEND_NCCL, NULL), 132.0 / 116.0, 1e-12);
    sc.nccl.channels = 4; /* the scenario's tuning wins */
    cr_assert_float_eq(model_tbo_stretch(&sc, CFG_BACKEND_NCCL, NULL), 132.0 / 128.0, 1e-12);
    cr_assert(isinf(model_tbo_stretch(&sc, CFG_BACKEND_MPI, NULL)), "host-staged overlaps nothing");
    sc.nccl.channels = 132;
    cr_assert(isinf(model_tbo_stretch(&sc, CFG_BACKEND_NCCL, NULL)), "no SM left for compute");
}

static double verify_ms(const char *const *sets, int n, cfg_backend be)
{
    return th_model_cycle(sets, n, be, NULL, NULL).verify_ms;
}

Test(tbo_model, overlap_hides_communication_and_costs_a_second_weight_read)
{
    const char *base[] = {"workload.batch=8"};
    const char *tbo[] = {"workload.batch=8", "overlap.two_batch=true"};
    /* Nothing to hide without collectives: the split only adds the second weight read. */
    cr_assert(verify_ms(tbo, 2, CFG_BACKEND_NONE) > verify_ms(base, 1, CFG_BACKEND_NONE));
    /* twoshot (cheap collectives, compute-bound): TBO hides most of the communication, and the
     * phase can never beat its compute alone. */
    const double t = verify_ms(tbo, 2, CFG_BACKEND_TWOSHOT), none = verify_ms(tbo, 2, CFG_BACKEND_NONE);
    cr_assert(t < verify_ms(base, 1, CFG_BACKEND_TWOSHOT), "tbo %f", t);
    cr_assert(t >= none - 1e-9, "tbo %f below its compute %f", t, none);
}

Test(tbo_replay, cpu_check_passes_at_2_ranks_and_says_the_replay_is_serial, .timeout = 120)
{
    th_need_mpirun();
    char tmpl[] = "/tmp/vpsim-tbo-XXXXXX";
    cr_assert_not_null(mkdtemp(tmpl));
    char path[300];
    snprintf(path, sizeof(path), "%s/results.json", tmpl);
    th_result r = th_mpirun(2, "run configs/tiny.yaml --set workload.batch=3 --set overlap.two_batch=true --device cpu "
                               "--backend mpi --check --iters 2 --warmup 1 --out %s",
                            path);
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, "CHECK FAILED") == NULL, "%s", r.out);
    char *json = th_slurp(path);
    cr_assert_not_null(json);
    cr_assert(strstr(json, "\"two_batch_overlap\": \"micro-batches replayed serially") != NULL, "%s", json);
    cr_assert(strstr(json, "allreduce.attn.b") != NULL, "the per-op results name micro-batch b's ops");
    free(json);
    th_free(&r);
    unlink(path);
    rmdir(tmpl);
}

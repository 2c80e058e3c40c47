/* The probe plan of `vpsim calibrate --measure` (plan_probe.h). Its grid spans what decode and verify
 * passes run: the scenario's GEMM shapes at 1 to 128 rows, attention from one query row per KV head
 * to 512 and KV lengths to 128k, row-wise ops up to 64 rows of 16k. The law's rows coordinate of every
 * op is written into its name by the same rule plan_op_law_class applies (the unit test holds the two
 * together). */
#include "plan_probe.h"

#include "plan_emit.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The full grid. quick uses the first PROBE_QUICK entries of each list (two rows values, the two
 * smallest sizes) and kv_quick for the KV lengths. */
#define PROBE_QUICK 2
#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const long long gemm_nk[][2] = {{2048, 256}, {4096, 512}, {8192, 1024}, {16384, 2048}, {32768, 4096}};
static const long long gemm_rows[] = {1, 2, 4, 8, 16, 32, 64, 128};
static const long long bmm_shape = 256; /* per matrix n = k */
static const int bmm_batch[] = {8, 32, 128};
static const long long bmm_rows[] = {1, 2, 4, 8, 16, 32};
static const long long grouped_wide_nk[2] = {2048, 512};
static const int grouped_experts[] = {4, 16, 64};
static const long long grouped_rows[] = {1, 2, 4, 8, 16};
/* Past 64 experts: 128, 256 and all the target's routed experts at 1, 2 and 4 rows per expert, and at 2
 * rows every 64 experts between. How fast a grouped GEMM runs depends on how many experts share the
 * launch, not only on its bytes: Kimi-K2.5's INT4 w13 is 144 columns wide per expert, and its rate still
 * rose from 16 to 64 experts (2.2 -> 2.7 TB/s at one row, h200-1x-probed.yaml), so extending the 16 -> 64
 * segment priced every larger launch at a rate the GPU had not reached (the replay's w13 at 86 and 244
 * experts ran at 3.8 and 4.1 TB/s, at 188 at 3.0: bench/NOTES.md 2026-12-02, per-op times). A pass over
 * T tokens touches E (1 - (1 - k/E)^T) experts with ceil(T k / that) rows each: 2 rows from 128 experts
 * until T k passes 2 E (Kimi-K2.5 at 6 to about 70 tokens a pass, the common verify range), which is
 * why the rate is followed every 64 experts there (cuBLAS picks its kernel by the batch count too, so it
 * need not be smooth in it); 1 row at many experts is a wide expert's (bf16, low TP) at few tokens. */
static const int grouped_experts_more[] = {128, 192, 256, 320};
#define GROUPED_MORE_ROWS 4 /* the rows per expert the points past 64 experts are taken at: 1, 2, 4 */
#define GROUPED_EVERY_ROWS 2 /* ... and the rows at which every count of grouped_experts_more is */
/* (q_len, heads): query rows that share the latent, 8 to 512 in powers of two, and 24. The kernel's cost is
 * not log-linear in rows across a factor of 4 (a row tile fills, then compute grows), so every doubling is
 * a point. 24 is there because a block holds 8, 16, 24 or 32 rows (8-row tiles) and the law prices an op
 * whose splits fill the GPU at the rows of one block (model_attention_coords): 48 rows run as 2 x 24, and
 * 3 tokens x 8 heads is the default's own shape. 48 (3 tokens x 16 heads: TP=4 Kimi, TP=8 DeepSeek-V3)
 * is the MLA kernel's two chunks of 24, whose second chunk re-reads the first's keys from L2 when they
 * fit there, which no one-chunk point holds: the law reads an op at its own rows where the grid has them
 * (model_attention_coords). It was left out once (2026-12-02, session 16: the probe's time 4-12 % below
 * the replay's attention) when the replay's attention carried an empty fork's event nodes, 0.1 ms a
 * cycle (bench/NOTES.md, session 19). Timing attention after the op the plan runs before it was tried
 * and measured worse (session 17): it stays 4 like ops. */
static const int mla_qh[][2] = {{1, 8}, {1, 16}, {3, 8}, {2, 16}, {3, 16}, {4, 16}, {4, 32}, {8, 32}, {8, 64}};
static const int gqa_q[] = {1, 2, 4, 8};
static const long long kv_full[] = {1024, 4096, 16384, 65536, 131072}; /* to the longest context asked about */
/* Every MLA rows value also at 256k and 512k: the law prices a batch as one sequence at those rows (the
 * grid has points there) of the keys its busiest SM reads (model_attention_coords), and a batch at long
 * context gives an SM more keys than one 128k sequence does (2 x 128k at 48 rows: 4032 keys an SM, 128k
 * alone 1024); 512k is 4032. */
static const long long kv_long[] = {262144, 524288};
static const long long kv_quick[] = {256, 1024};
static const long long row_m[] = {1, 4, 16, 64};
static const long long row_n[] = {512, 2048, 7168, 16384};
static const long long embed_n[] = {2048, 7168};

typedef struct probe {
    plan_emit b;
    bool quick;
    const cfg_scenario *sc;
    const plan *real; /* the scenario's own plan (its GEMM shapes); NULL for the quick grid */
    char *why;
    size_t len;
    int rc;
} probe;

static int count(const probe *pr, int n) { return pr->quick && n > PROBE_QUICK ? PROBE_QUICK : n; }

/* "64k" for whole kibi-units of at least 1024, else the number: names must fit PLAN_NAME_MAX. */
static void num_label(char *buf, size_t len, long long v)
{
    if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, len, "%lldk", v / 1024);
    else
        snprintf(buf, len, "%lld", v);
}

/* A main-stream op of `kind` with bf16 weights, the scenario's activations and TP degree. */
static plan_op tmpl(const probe *pr, plan_op_kind kind)
{
    plan_op t;
    memset(&t, 0, sizeof(t));
    t.kind = kind;
    t.layer = -1;
    t.stream = PLAN_STREAM_MAIN;
    t.batch = 1;
    t.wdtype = CFG_DT_BF16;
    t.adtype = pr->b.act;
    t.ranks = pr->b.ranks;
    return t;
}

/* PLAN_PROBE_REPEAT copies of `t` as distinct ops of the point (class, rows, size). */
static void add_point(probe *pr, const plan_op *t, const char *cls, long long rows, const char *size)
{
    for (int i = 0; i < PLAN_PROBE_REPEAT && !pr->rc; i++) {
        char name[64];
        int n = strcmp(cls, "silu_mul") == 0 ? snprintf(name, sizeof(name), "probe.r%lld.%s.%d.silu_mul", rows, size, i)
                                             : snprintf(name, sizeof(name), "probe.%s.r%lld.%s.%d", cls, rows, size, i);
        if (n >= PLAN_NAME_MAX) {
            snprintf(pr->why, pr->len, "probe op name '%s' does not fit %d characters", name, PLAN_NAME_MAX - 1);
            pr->rc = -1;
            return;
        }
        plan_op *op = plan_emit_add(&pr->b, t->kind, name, -1);
        char keep[PLAN_NAME_MAX];
        memcpy(keep, op->name, sizeof(keep));
        *op = *t;
        memcpy(op->name, keep, sizeof(keep));
        plan_op_finalize(op);
    }
}

/* The scenario's own GEMM weight shapes (n, k, batch, dtype), each once, by class (plan_op_law_class's
 * rule: batched when batch > 1, else wide when the replayed width >= k). How well cuBLAS fills the GPU
 * at a few rows depends on the shape, not only on the bytes (on the H200 at 4 rows, Kimi-K2.5's 1536 x
 * 1536 q_b_proj, 4.7 MB, takes 5.3 us where a 4096 x 512 matrix of 4.2 MB takes 3.6: about 0.7 of the
 * rate; the first and third probes of bench/NOTES.md, 2026-12-01), so the probe measures the
 * shapes the scenario runs; another model or TP degree is priced by the law between them (bytes).
 * Shapes within 2 % of the weight bytes of one already kept in the class are left out (the law needs
 * bytes strictly increasing within a rows value). Returns how many it kept, at most `cap`. */
static int scenario_gemm_shapes(const probe *pr, int cls, plan_op *out, int cap)
{
    const plan *real = pr->real;
    int n = 0;
    for (int ph = 0; real && ph < real->n_phases; ph++)
        for (int i = 0; i < real->phases[ph].n_ops && n < cap; i++) {
            const plan_op *op = &real->phases[ph].ops[i];
            if (op->kind != PLAN_OP_GEMM || plan_op_law_class(op, NULL) != cls)
                continue;
            bool dup = false;
            for (int j = 0; j < n && !dup; j++)
                dup = op->weight_bytes > 0.98 * out[j].weight_bytes && op->weight_bytes < 1.02 * out[j].weight_bytes;
            if (dup)
                continue;
            plan_op t = tmpl(pr, PLAN_OP_GEMM);
            t.n = op->n;
            t.k = op->k;
            t.batch = op->batch;
            t.wdtype = op->wdtype;
            t.wgroup = op->wgroup;
            t.weight_bytes = op->weight_bytes;
            out[n++] = t;
        }
    return n;
}

/* gemm_wide, gemm_narrow, gemm_batched: m rows against the scenario's shapes of the class; a class the
 * scenario has no shape in takes the generic grid ((n, k) from (2048, 256) to (32768, 4096) and the
 * transposes; 256 x 256 at batch 8/32/128). quick: the generic grid. */
static void gemms(probe *pr)
{
    for (int cls = CFG_LAW_GEMM_WIDE; cls <= CFG_LAW_GEMM_BATCHED; cls++) {
        const bool bmm = cls == CFG_LAW_GEMM_BATCHED, wide = cls == CFG_LAW_GEMM_WIDE;
        plan_op shapes[64];
        const int own = scenario_gemm_shapes(pr, cls, shapes, LEN(shapes) - 8);
        double lo = 1e300, hi = 0.0;
        for (int s = 0; s < own; s++) {
            lo = shapes[s].weight_bytes < lo ? shapes[s].weight_bytes : lo;
            hi = shapes[s].weight_bytes > hi ? shapes[s].weight_bytes : hi;
        }
        /* The generic grid: all of it for a class the scenario has no shape in, else the sizes outside
         * the scenario's range, so the law has points to extrapolate from on both sides. */
        int n = own;
        const int ns = bmm ? count(pr, LEN(bmm_batch)) : count(pr, LEN(gemm_nk));
        for (int s = 0; s < ns; s++) {
            plan_op t = tmpl(pr, PLAN_OP_GEMM);
            if (bmm) {
                t.n = t.k = bmm_shape;
                t.batch = bmm_batch[s];
            } else {
                t.n = wide ? gemm_nk[s][0] : gemm_nk[s][1];
                t.k = wide ? gemm_nk[s][1] : gemm_nk[s][0];
            }
            const double w = 2.0 * t.n * t.k * t.batch;
            if (own == 0 || w < 0.98 * lo || w > 1.02 * hi)
                shapes[n++] = t;
        }
        const int nrows = bmm ? count(pr, LEN(bmm_rows)) : count(pr, LEN(gemm_rows));
        for (int r = 0; r < nrows; r++)
            for (int s = 0; s < n; s++) {
                plan_op t = shapes[s];
                t.m = bmm ? bmm_rows[r] : gemm_rows[r];
                char a[24], b[24], size[56];
                num_label(a, sizeof(a), t.n);
                num_label(b, sizeof(b), t.k);
                if (s < own) /* the scenario's shape number s: names must fit PLAN_NAME_MAX */
                    snprintf(size, sizeof(size), "s%d", s);
                else if (t.batch > 1)
                    snprintf(size, sizeof(size), "b%d", t.batch);
                else
                    snprintf(size, sizeof(size), "%sx%s", a, b);
                add_point(pr, &t, cfg_law_names[cls], t.m, size);
            }
    }
}

/* The expert counts of the grouped points at `rows` per expert, ascending: the base grid (quick: its
 * first two), then, at rows up to GROUPED_MORE_ROWS, the counts past it below the target's routed experts
 * (128 and 256 only, but every one at GROUPED_EVERY_ROWS) and those experts themselves (full grid only; a
 * dense target, or one with 64 experts or fewer, has none past the base). Returns how many. */
static int grouped_expert_counts(const probe *pr, long long rows, int *out)
{
    int n = 0;
    for (int s = 0; s < count(pr, LEN(grouped_experts)); s++)
        out[n++] = grouped_experts[s];
    const int e = pr->sc->target.moe.experts;
    if (pr->quick || rows > GROUPED_MORE_ROWS)
        return n;
    for (int s = 0; s < LEN(grouped_experts_more); s++)
        if (grouped_experts_more[s] < e && (rows == GROUPED_EVERY_ROWS || grouped_experts_more[s] % 128 == 0))
            out[n++] = grouped_experts_more[s];
    if (e > out[n - 1])
        out[n++] = e;
    return n;
}

/* Grouped GEMMs at the per-expert shapes of the scenario's target (w13: 2 x intermediate / TP by hidden;
 * w2: hidden by intermediate / TP; the routed experts' dtype, which the replay runs as a bf16 GEMM of the
 * same bytes): how well cuBLAS fills the GPU depends on the per-expert output width, which a quantised
 * w13 makes very narrow (Kimi-K2.5 INT4 at TP 8: 512 x 0.5625 / 2 = 144 wide, 7168 deep), and no generic
 * shape stands for that. A class the target has no shape for (a dense model, or both in one class) takes the generic
 * per-expert (2048, 512) / (512, 2048). shape: [1] wide, [0] narrow. */
static void grouped_shapes(const probe *pr, plan_op shape[2])
{
    const cfg_model *m = &pr->sc->target;
    const int tp = pr->b.ranks;
    bool have[2] = {false, false};
    if (m->moe.experts > 0 && m->moe.intermediate / tp > 0) {
        const long long inter = m->moe.intermediate / tp, h = m->hidden;
        const long long nk[2][2] = {{2 * inter, h}, {h, inter}};
        for (int i = 0; i < 2; i++) {
            plan_op t = tmpl(pr, PLAN_OP_GROUPED_GEMM);
            t.n = nk[i][0];
            t.k = nk[i][1];
            t.wdtype = (cfg_dtype)m->weights.routed_experts.dtype;
            t.wgroup = m->weights.routed_experts.group;
            const int wide = plan_op_law_class(&t, NULL) == CFG_LAW_GROUPED_WIDE;
            if (!have[wide]) {
                shape[wide] = t;
                have[wide] = true;
            }
        }
    }
    for (int wide = 1; wide >= 0; wide--)
        if (!have[wide]) {
            shape[wide] = tmpl(pr, PLAN_OP_GROUPED_GEMM);
            shape[wide].n = wide ? grouped_wide_nk[0] : grouped_wide_nk[1];
            shape[wide].k = wide ? grouped_wide_nk[1] : grouped_wide_nk[0];
        }
}

static void grouped(probe *pr)
{
    plan_op shape[2];
    grouped_shapes(pr, shape);
    for (int wide = 1; wide >= 0; wide--) {
        for (int r = 0; r < count(pr, LEN(grouped_rows)); r++) {
            int experts[LEN(grouped_experts) + LEN(grouped_experts_more) + 1];
            const int n_exp = grouped_expert_counts(pr, grouped_rows[r], experts);
            for (int s = 0; s < n_exp; s++) {
                plan_op t = shape[wide];
                t.batch = experts[s];
                t.m = grouped_rows[r] * t.batch;
                char size[24];
                snprintf(size, sizeof(size), "e%d", t.batch);
                add_point(pr, &t, wide ? "grouped_wide" : "grouped_narrow", grouped_rows[r], size);
            }
        }
    }
}

/* Last in the grid: the same two shapes at wider experts, the dimension tensor parallelism splits (w13's
 * columns, w2's depth) times grouped_width_mult, as long as the point stays in its class (Kimi-K2.5's
 * INT4 w2 at 8 x its depth, TP 1, is narrow). At equal bytes a wider expert runs faster: cuBLAS tiles each
 * expert's columns, and 144 of them (w13 at TP 8) fill a second tile only a little, 288 (TP 4) most of
 * it (the replay's w13 at 24 experts: 2.25 TB/s at 144 wide, 3.30 at 288; DeepSeek-V3 FP8's 264: 3.25;
 * bench/law-s17-notes.md 1b (ii)), which the bytes axis alone cannot see. Up to 64 experts: past that
 * every width runs near the same rate (3.6-4.3 TB/s in those replays). The widest points' 33 GiB and
 * the rest do not fit one H200 together (the probe runs in parts: plan_probe.h). quick: x2 at
 * 1 row and 4 experts. */
static const int grouped_width_mult[] = {2, 4, 8};
static const long long grouped_width_rows[] = {1, 2, 4};
static const int grouped_width_experts[] = {4, 16, 64};

static int qcount(const probe *pr, int n) { return pr->quick ? 1 : n; }

static void grouped_widths(probe *pr)
{
    plan_op shape[2];
    grouped_shapes(pr, shape);
    for (int wide = 1; wide >= 0; wide--)
        for (int w = 0; w < qcount(pr, LEN(grouped_width_mult)); w++) {
            plan_op base = shape[wide];
            if (wide)
                base.k *= grouped_width_mult[w];
            else
                base.n *= grouped_width_mult[w];
            if ((plan_op_law_class(&base, NULL) == CFG_LAW_GROUPED_WIDE) != (wide == 1))
                continue;
            for (int r = 0; r < qcount(pr, LEN(grouped_width_rows)); r++)
                for (int e = 0; e < qcount(pr, LEN(grouped_width_experts)); e++) {
                    plan_op t = base;
                    t.batch = grouped_width_experts[e];
                    t.m = grouped_width_rows[r] * t.batch;
                    char size[24]; /* the multiplier, not the width: the name must fit PLAN_NAME_MAX */
                    snprintf(size, sizeof(size), "x%de%d", grouped_width_mult[w], t.batch);
                    add_point(pr, &t, wide ? "grouped_wide" : "grouped_narrow", grouped_width_rows[r], size);
                }
        }
}

/* Attention as plan_build.c builds it: MLA reads one latent of kv_lora_rank + rope per token shared by
 * every head (values are the latent); GQA reads kv_heads keys and values of head_dim per token. */
static void attention(probe *pr)
{
    const cfg_scenario *sc = pr->sc;
    const int tp = pr->b.ranks;
    const long long *kv = pr->quick ? kv_quick : kv_full;
    const int n_kv = pr->quick ? LEN(kv_quick) : LEN(kv_full);
    const cfg_model *t = &sc->target;
    if (t->attention.kind == CFG_ATTN_MLA)
        for (int r = 0; r < count(pr, LEN(mla_qh)); r++) {
            for (int s = 0; s < n_kv + (pr->quick ? 0 : LEN(kv_long)); s++) {
                plan_op o = tmpl(pr, PLAN_OP_ATTENTION);
                o.q_len = mla_qh[r][0];
                o.heads = mla_qh[r][1];
                o.kv_heads = 1;
                o.kv_len = s < n_kv ? kv[s] : kv_long[s - n_kv];
                o.qk_dim = t->attention.kv_lora_rank + t->attention.qk_rope_head_dim;
                o.v_dim = t->attention.kv_lora_rank;
                o.kv_shared = true;
                char size[24];
                num_label(size, sizeof(size), o.kv_len);
                add_point(pr, &o, "attention_mla", o.q_len * o.heads, size);
            }
        }
    /* The draft's attention when there is a draft, else the target's. */
    const cfg_model *g = sc->speculative.algorithm != CFG_SPEC_NONE ? &sc->draft : t;
    if (g->attention.kind != CFG_ATTN_GQA)
        return;
    const int kv_all = g->attention.kv_heads ? g->attention.kv_heads : g->attention.heads;
    const int heads = g->attention.heads / tp, kvh = kv_all >= tp ? kv_all / tp : 1;
    if (heads < 1 || heads % kvh) {
        snprintf(pr->why, pr->len, "attention_gqa: %d heads over %d KV heads per rank at tp=%d do not group evenly",
                 heads, kvh, tp);
        pr->rc = -1;
        return;
    }
    for (int r = 0; r < count(pr, LEN(gqa_q)); r++)
        for (int s = 0; s < n_kv; s++) {
            plan_op o = tmpl(pr, PLAN_OP_ATTENTION);
            o.q_len = gqa_q[r];
            o.heads = heads;
            o.kv_heads = kvh;
            o.kv_len = kv[s];
            o.qk_dim = o.v_dim = g->attention.head_dim;
            char size[24];
            num_label(size, sizeof(size), o.kv_len);
            add_point(pr, &o, "attention_gqa", o.q_len * (heads / kvh), size);
        }
}

/* norm, elementwise (the replay's axpby), silu_mul over m x n; embedding over the vocab shard. */
static void rowwise(probe *pr)
{
    static const struct {
        plan_op_kind kind;
        const char *cls;
    } kinds[] = {{PLAN_OP_NORM, "norm"}, {PLAN_OP_ELEMENTWISE, "elementwise"}, {PLAN_OP_ELEMENTWISE, "silu_mul"}};
    for (int c = 0; c < LEN(kinds); c++)
        for (int r = 0; r < count(pr, LEN(row_m)); r++)
            for (int s = 0; s < count(pr, LEN(row_n)); s++) {
                plan_op t = tmpl(pr, kinds[c].kind);
                t.m = row_m[r];
                t.n = row_n[s];
                char size[24];
                num_label(size, sizeof(size), t.n);
                add_point(pr, &t, kinds[c].cls, t.m, size);
            }
    for (int r = 0; r < count(pr, LEN(row_m)); r++)
        for (int s = 0; s < count(pr, LEN(embed_n)); s++) {
            plan_op t = tmpl(pr, PLAN_OP_EMBEDDING);
            t.m = row_m[r];
            t.n = embed_n[s];
            t.k = pr->sc->target.vocab / pr->b.ranks;
            char size[24];
            num_label(size, sizeof(size), t.n);
            add_point(pr, &t, "embedding", t.m, size);
        }
}

int plan_probe_build(const cfg_scenario *sc, bool quick, plan *out, char *why, size_t len)
{
    memset(out, 0, sizeof(*out));
    const int tp = sc->parallel.tp > 0 ? sc->parallel.tp : 1;
    snprintf(out->scenario, sizeof(out->scenario), "probe of %s", sc->name ? sc->name : "");
    out->ranks = tp;
    out->batch = 1;
    out->context = (int)(quick ? kv_quick[LEN(kv_quick) - 1] : kv_full[LEN(kv_full) - 1]);
    out->phases = util_xcalloc(1, sizeof(plan_phase));
    out->n_phases = 1;
    plan_phase *ph = &out->phases[0];
    snprintf(ph->name, sizeof(ph->name), "probe");
    ph->kind = PLAN_PHASE_DECODE;
    snprintf(ph->model, sizeof(ph->model), "target");
    ph->tokens = 1;
    ph->batch = 1;
    plan real;
    char real_why[256];
    const bool have_real = !quick && plan_build(sc, &real, real_why, sizeof(real_why)) == 0;
    probe pr = {.b = {.ph = ph, .ranks = tp, .rows = 1, .act = (cfg_dtype)sc->target.activation_dtype},
                .quick = quick, .sc = sc, .real = have_real ? &real : NULL, .why = why, .len = len};
    /* The smallest kernel the replay launches: what it measures is the gap a graph node costs. */
    for (int i = 0; i < PLAN_PROBE_EMPTY; i++)
        plan_emit_rowwise(&pr.b, PLAN_OP_ELEMENTWISE, "probe.empty", -1, 1, 8);
    gemms(&pr);
    grouped(&pr);
    attention(&pr);
    rowwise(&pr);
    grouped_widths(&pr);
    plan_emit_rowwise(&pr.b, PLAN_OP_ELEMENTWISE, "probe.flush", -1, 1,
                     quick ? PLAN_PROBE_FLUSH_ELEMS_QUICK : PLAN_PROBE_FLUSH_ELEMS);
    if (have_real)
        plan_free(&real);
    if (pr.rc) {
        plan_free(out);
        return -1;
    }
    plan_summarize(out);
    return 0;
}

static double align256(double b) { return b > 0 ? (double)(((unsigned long long)b + 255) / 256 * 256) : 0.0; }

/* The device bytes of one op's private weights or KV cache (the CUDA device's arena, rounded to 256 B). */
static double op_arena_bytes(const plan_op *op)
{
    double b = 0.0;
    switch (op->kind) {
    case PLAN_OP_GEMM:
    case PLAN_OP_GROUPED_GEMM: b = 2.0 * op->k * (double)plan_op_effective_n(op) * op->batch; break;
    case PLAN_OP_EMBEDDING: b = 2.0 * op->k * op->n; break;
    case PLAN_OP_ATTENTION: {
        const double tok = (double)op->batch * op->kv_len * (op->kv_shared ? 1 : op->kv_heads);
        b = 2.0 * tok * (op->kv_shared ? op->qk_dim : op->qk_dim + op->v_dim);
        break;
    }
    default: break;
    }
    return align256(b);
}

double plan_probe_arena_bytes(const plan *p)
{
    double total = 0.0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++)
            total += op_arena_bytes(&p->phases[ph].ops[i]);
    return total;
}

/* The first point of each part, greedily in grid order, each part's points within `budget` bytes (0: one
 * part); first[n] is the number of points. Returns the parts, or -1 (why) when one point alone is over. */
static int split(const plan *all, double budget, int *first, int max_parts, char *why, size_t len)
{
    const plan_phase *ph = &all->phases[0];
    const int n_points = (ph->n_ops - PLAN_PROBE_EMPTY - 1) / PLAN_PROBE_REPEAT;
    int parts = 0;
    double in_part = 0.0;
    for (int pt = 0; pt < n_points; pt++) {
        double b = 0.0;
        for (int j = 0; j < PLAN_PROBE_REPEAT; j++)
            b += op_arena_bytes(&ph->ops[PLAN_PROBE_EMPTY + pt * PLAN_PROBE_REPEAT + j]);
        if (budget > 0 && b > budget) {
            char a[32], c[32];
            snprintf(why, len, "probe point %s needs %s of device memory, more than a part may take (%s)",
                     ph->ops[PLAN_PROBE_EMPTY + pt * PLAN_PROBE_REPEAT].name, util_fmt_bytes(b, a, sizeof(a)),
                     util_fmt_bytes(budget, c, sizeof(c)));
            return -1;
        }
        if (pt == 0 || (budget > 0 && in_part + b > budget)) {
            if (parts == max_parts) {
                snprintf(why, len, "the probe would need more than %d parts", max_parts);
                return -1;
            }
            first[parts++] = pt;
            in_part = 0.0;
        }
        in_part += b;
    }
    first[parts] = n_points;
    return parts;
}

int plan_probe_parts(const plan *grid, double budget, char *why, size_t len)
{
    int first[PLAN_PROBE_MAX_PARTS + 1];
    return split(grid, budget, first, PLAN_PROBE_MAX_PARTS, why, len);
}

int plan_probe_part(const plan *grid, double budget, int part, plan *out, char *why, size_t len)
{
    memset(out, 0, sizeof(*out));
    int first[PLAN_PROBE_MAX_PARTS + 1];
    const int parts = split(grid, budget, first, PLAN_PROBE_MAX_PARTS, why, len);
    if (parts < 0)
        return -1;
    if (part < 0 || part >= parts) {
        snprintf(why, len, "probe part %d: there are %d (0-%d)", part, parts, parts - 1);
        return -1;
    }
    /* The part: the grid's empty ops, its points, the flush; the grid's plan fields as they are. */
    const plan_phase *src = &grid->phases[0];
    out->ranks = grid->ranks;
    out->batch = grid->batch;
    out->context = grid->context;
    snprintf(out->scenario, sizeof(out->scenario), "%s", grid->scenario);
    if (parts > 1) {
        const size_t n = strlen(out->scenario);
        snprintf(out->scenario + n, sizeof(out->scenario) - n, ", part %d of %d", part + 1, parts);
    }
    out->phases = util_xcalloc(1, sizeof(plan_phase));
    out->n_phases = 1;
    plan_phase *ph = &out->phases[0];
    snprintf(ph->name, sizeof(ph->name), "%s", src->name);
    snprintf(ph->model, sizeof(ph->model), "%s", src->model);
    ph->kind = src->kind;
    ph->tokens = src->tokens;
    ph->batch = src->batch;
    const int lo = PLAN_PROBE_EMPTY + first[part] * PLAN_PROBE_REPEAT;
    const int hi = PLAN_PROBE_EMPTY + first[part + 1] * PLAN_PROBE_REPEAT;
    for (int i = 0; i < src->n_ops; i++)
        if (i < PLAN_PROBE_EMPTY || (i >= lo && i < hi) || i == src->n_ops - 1)
            *plan_phase_add_op(ph) = src->ops[i];
    plan_summarize(out);
    return 0;
}

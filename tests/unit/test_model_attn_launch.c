/* The decode attention kernel's launch computed on the host (sim/plan/plan_attn.c) against the plans the
 * kernel itself printed on an H200, and the probed attention law that reads it (model_attention_coords,
 * docs/model.md "Probed compute laws"). */
#include "../../sim/model/model.h"
#include "../../sim/plan/plan_attn.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* The H200 of the GPU suite: 132 SMs, 228 KiB of shared memory per SM, 227 KiB per block. */
static const plan_attn_device H200 = {.sms = 132, .smem_sm = 228 << 10, .smem_block = 227 << 10};

static plan_op attn(int batch, int q_len, int heads, int kv_heads, long long kv_len, int qk, int v, bool shared)
{
    plan_op op;
    memset(&op, 0, sizeof(op));
    op.kind = PLAN_OP_ATTENTION;
    op.batch = batch;
    op.q_len = q_len;
    op.heads = heads;
    op.kv_heads = kv_heads;
    op.kv_len = kv_len;
    op.qk_dim = qk;
    op.v_dim = v;
    op.kv_shared = shared;
    op.adtype = CFG_DT_BF16;
    plan_op_finalize(&op);
    return op;
}

static void describe(const plan_attn_launch *l, char *buf, size_t len)
{
    snprintf(buf, len, "splits=%d,keys_per_split=%lld,tn=%d,stages=%d,rows_blk=%d,row_chunks=%d,dv_chunks=%d,mt=%d,"
             "blocks_per_sm=%d,smem=%lld", l->splits, l->keys_per_split, l->tn, l->stages, l->rows_blk, l->row_chunks,
             l->dv_chunks, l->mt, l->blocks_per_sm, l->smem);
}

/* One plan the kernel printed: the shape (batch, q_len, heads, kv_heads, kv_len, qk_dim, v_dim, latent) and
 * vp_attention_describe's text for it. */
typedef struct printed_plan {
    int b, q, h, kvh;
    long long kv;
    int dk, dv;
    bool vink;
    const char *plan;
} printed_plan;

/* Every row of `rows` planned on `dev` as the kernel printed it, by the kernel numbered `kernel`. */
static void expect_printed(const printed_plan *rows, size_t n, const plan_attn_device *dev, int kernel)
{
    for (size_t i = 0; i < n; i++) {
        const printed_plan *r = &rows[i];
        const plan_op op = attn(r->b, r->q, r->h, r->kvh, r->kv, r->dk, r->dv, r->vink);
        plan_attn_launch l;
        cr_assert_eq(plan_attention_launch(&op, dev, &l), 0, "case %zu", i);
        char got[256];
        describe(&l, got, sizeof(got));
        cr_expect_str_eq(got, r->plan, "case %zu", i);
        cr_expect_eq(l.kernel, kernel, "case %zu", i);
    }
}

/* vp_attention_describe on nvidia-h200, 2026-12-02 (bench/lab.py get 2026-12-02-h200-s16a, gpu.log). */
static const printed_plan printed[] = {
    {1, 3, 8, 1, 8192, 576, 512, true, "splits=128,keys_per_split=64,tn=64,stages=2,rows_blk=24,row_chunks=1,"
                                       "dv_chunks=1,mt=4,blocks_per_sm=1,smem=193504"},
    {1, 3, 8, 1, 131072, 576, 512, true, "splits=128,keys_per_split=1024,tn=64,stages=2,rows_blk=24,row_chunks=1,"
                                         "dv_chunks=1,mt=4,blocks_per_sm=1,smem=193504"},
    {1, 1, 8, 1, 32768, 576, 512, true, "splits=128,keys_per_split=256,tn=64,stages=2,rows_blk=8,row_chunks=1,"
                                        "dv_chunks=1,mt=4,blocks_per_sm=1,smem=164512"},
    {1, 8, 8, 1, 32768, 576, 512, true, "splits=64,keys_per_split=512,tn=64,stages=2,rows_blk=32,row_chunks=2,"
                                        "dv_chunks=1,mt=4,blocks_per_sm=1,smem=209024"},
    {1, 1, 8, 8, 8192, 128, 128, false, "splits=32,keys_per_split=256,tn=64,stages=3,rows_blk=8,row_chunks=1,"
                                        "dv_chunks=1,mt=1,blocks_per_sm=2,smem=112288"},
    {1, 3, 8, 1, 8192, 128, 128, false, "splits=64,keys_per_split=128,tn=64,stages=2,rows_blk=24,row_chunks=1,"
                                        "dv_chunks=1,mt=1,blocks_per_sm=2,smem=92128"},
    {3, 2, 8, 1, 3000, 576, 512, true, "splits=24,keys_per_split=128,tn=64,stages=2,rows_blk=16,row_chunks=1,"
                                       "dv_chunks=1,mt=4,blocks_per_sm=1,smem=180032"},
    {1, 5, 8, 1, 4097, 576, 512, true, "splits=65,keys_per_split=64,tn=64,stages=2,rows_blk=24,row_chunks=2,"
                                       "dv_chunks=1,mt=4,blocks_per_sm=1,smem=193504"},
    {1, 3, 64, 1, 2048, 128, 128, false, "splits=16,keys_per_split=128,tn=64,stages=2,rows_blk=32,row_chunks=6,"
                                         "dv_chunks=1,mt=1,blocks_per_sm=2,smem=100480"},
    {1, 2, 4, 2, 1500, 256, 1280, false, "splits=12,keys_per_split=128,tn=64,stages=2,rows_blk=8,row_chunks=1,"
                                         "dv_chunks=3,mt=4,blocks_per_sm=1,smem=210592"},
    {1, 1, 2, 1, 1500, 128, 2560, false, "splits=24,keys_per_split=64,tn=64,stages=2,rows_blk=8,row_chunks=1,"
                                         "dv_chunks=5,mt=4,blocks_per_sm=1,smem=175776"},
    {40, 1, 8, 8, 512, 128, 128, false, "splits=1,keys_per_split=512,tn=64,stages=3,rows_blk=8,row_chunks=1,"
                                        "dv_chunks=1,mt=1,blocks_per_sm=2,smem=112288"},
    {1, 7, 6, 2, 4099, 64, 64, false, "splits=17,keys_per_split=256,tn=64,stages=4,rows_blk=24,row_chunks=1,"
                                      "dv_chunks=1,mt=1,blocks_per_sm=2,smem=93152"},
};

Test(attn_launch, the_host_computes_the_plans_the_kernel_printed)
{
    expect_printed(printed, sizeof(printed) / sizeof(printed[0]), &H200, 1);
}

/* The same on compute capability 9, where the wgmma MLA kernel takes the latent shapes (vp_attention_describe
 * on nvidia-h200, 2026-12-02, session 20 call 3: bench/lab.py get 2026-12-02-h200-s20, validate.txt); the
 * others keep the general plan above. */
static const plan_attn_device H200_CC90 = {.sms = 132, .smem_sm = 228 << 10, .smem_block = 227 << 10, .cc = 90};
static const printed_plan printed_wgmma[] = {
    {1, 3, 8, 1, 8192, 576, 512, true, "splits=128,keys_per_split=64,tn=64,stages=2,rows_blk=24,row_chunks=1,"
                                       "dv_chunks=1,mt=4,blocks_per_sm=1,smem=179608"},
    {1, 3, 8, 1, 131072, 576, 512, true, "splits=128,keys_per_split=1024,tn=64,stages=2,rows_blk=24,row_chunks=1,"
                                         "dv_chunks=1,mt=4,blocks_per_sm=1,smem=179608"},
    {1, 1, 8, 1, 32768, 576, 512, true, "splits=128,keys_per_split=256,tn=64,stages=2,rows_blk=8,row_chunks=1,"
                                        "dv_chunks=1,mt=4,blocks_per_sm=1,smem=159128"},
    {1, 3, 16, 1, 8192, 576, 512, true, "splits=128,keys_per_split=64,tn=64,stages=2,rows_blk=48,row_chunks=1,"
                                        "dv_chunks=1,mt=4,blocks_per_sm=1,smem=210712"},
    {1, 5, 8, 1, 4097, 576, 512, true, "splits=65,keys_per_split=64,tn=64,stages=2,rows_blk=48,row_chunks=1,"
                                       "dv_chunks=1,mt=4,blocks_per_sm=1,smem=210712"},
    {1, 8, 8, 1, 32768, 576, 512, true, "splits=64,keys_per_split=512,tn=64,stages=2,rows_blk=32,row_chunks=2,"
                                        "dv_chunks=1,mt=4,blocks_per_sm=1,smem=190232"},
    {3, 2, 8, 1, 3000, 576, 512, true, "splits=24,keys_per_split=128,tn=64,stages=2,rows_blk=16,row_chunks=1,"
                                       "dv_chunks=1,mt=4,blocks_per_sm=1,smem=169368"},
};

Test(attn_launch, on_compute_capability_9_the_wgmma_kernel_plans_the_latent_shapes)
{
    expect_printed(printed_wgmma, sizeof(printed_wgmma) / sizeof(printed_wgmma[0]), &H200_CC90, 3);
    /* GQA and a latent shape of other widths keep the general plan on the same device. */
    const plan_op gqa = attn(1, 3, 8, 1, 8192, 128, 128, false), other = attn(1, 3, 8, 1, 8192, 576, 448, true);
    plan_attn_launch l;
    cr_assert_eq(plan_attention_launch(&gqa, &H200_CC90, &l), 0);
    cr_expect_eq(l.kernel, 1);
    cr_assert_eq(plan_attention_launch(&other, &H200_CC90, &l), 0);
    cr_expect_eq(l.kernel, 1);
}

Test(attn_launch, a_batch_can_hold_more_blocks_than_the_gpu)
{
    /* Kimi-K2.5 plain decode at batch 32, TP=8 shapes, 2K: 32 groups of 8 rows; ceil(132 / 32) = 5 splits of
     * ceil(ceil(2048 / 5) / 64) x 64 = 448 keys: 160 blocks on 132 one-block SMs, the busiest SM reads 2 x 448. */
    plan_op op = attn(32, 1, 8, 1, 2048, 576, 512, true);
    plan_attn_launch l;
    cr_assert_eq(plan_attention_launch(&op, &H200, &l), 0);
    cr_assert(l.slot_limited);
    cr_assert_eq(l.splits, 5);
    cr_assert_eq(l.keys_per_split, 448);
    cr_assert_eq(l.blocks, 160);
    cr_assert_eq(l.slots, 132);
    cr_assert_float_eq(plan_attention_sm_keys(&l, H200.sms), 896.0, 1e-12);
    /* One sequence of 8K at 24 rows: 128 splits of one 64-key tile, set by the keys (ceil(132 / 1) > 128). */
    op = attn(1, 3, 8, 1, 8192, 576, 512, true);
    cr_assert_eq(plan_attention_launch(&op, &H200, &l), 0);
    cr_assert_not(l.slot_limited);
    cr_assert_eq(l.blocks, 128);
    /* Unknown shared memory: no launch. */
    const plan_attn_device none = {.sms = 132};
    cr_assert_eq(plan_attention_launch(&op, &none, &l), -1);
}

/* ---------------- the law's coordinates ---------------- */

static cfg_system h200(void)
{
    cfg_system s;
    memset(&s, 0, sizeof(s));
    s.gpu.sms = 132;
    s.gpu.smem_sm_kib = 228;
    s.gpu.smem_block_kib = 227;
    return s;
}

Test(attn_launch, the_law_reads_a_batch_at_the_keys_its_busiest_sm_reads)
{
    cfg_system s = h200();
    /* Batch 32 x 2K at 8 rows (above): 160 blocks, used = 132, the busiest SM 2 blocks against 1 in one
     * round: 448 x 132 / 1 x 2 / 1 = 118272 keys, one sequence at 8 rows: bytes 118272 x 576 x 2 + 8 x 576 x 2
     * + 8 x 512 x 2 = 136249344 + 17408 = 136266752. */
    plan_op op = attn(32, 1, 8, 1, 2048, 576, 512, true);
    double rows = 8, bytes = op.bytes_read + op.bytes_written;
    model_terms terms = {.n = 0};
    model_attention_coords(&s, NULL, &op, &rows, &bytes, &terms);
    cr_assert_float_eq(rows, 8.0, 1e-12);
    cr_assert_float_eq(bytes, 136266752.0, 1e-6);
    cr_assert_float_eq(model_term_get(&terms, "sm_keys"), 896.0, 1e-12);
    /* DeepSeek-V3 at batch 32, 3 tokens x 16 heads = 48 rows, 2 chunks of 24: 64 groups, 3 splits of 704,
     * 192 blocks; per block 24 rows: 704 x 132 x 2 = 185856 keys at rows 24. */
    op = attn(32, 3, 16, 1, 2048, 576, 512, true);
    rows = 48;
    bytes = op.bytes_read + op.bytes_written;
    model_attention_coords(&s, NULL, &op, &rows, &bytes, NULL);
    cr_assert_float_eq(rows, 24.0, 1e-12);
    cr_assert_float_eq(bytes, 185856.0 * 1152 + 24 * 1088 * 2, 1e-6);
    /* Batch 1 at 64K and 48 rows: 128 blocks of 1024 keys in one round: 1024 x 128 = 131072 keys at 24 rows. */
    op = attn(1, 3, 16, 1, 65536, 576, 512, true);
    rows = 48;
    model_attention_coords(&s, NULL, &op, &rows, &bytes, NULL);
    cr_assert_float_eq(rows, 24.0, 1e-12);
    cr_assert_float_eq(bytes, 131072.0 * 1152 + 24 * 1088 * 2, 1e-6);
    /* A GQA draft at TP=4 (16 KV heads) over 64K: 16 groups x 17 splits = 272 blocks on 264 slots (2 per
     * SM); the busiest SM 3 blocks against 2: 3904 x 264 / 16 x 3 / 2 = 96624 keys per KV head. */
    op = attn(1, 1, 16, 16, 65536, 128, 128, false);
    rows = 1;
    model_attention_coords(&s, NULL, &op, &rows, &bytes, NULL);
    cr_assert_float_eq(rows, 1.0, 1e-12);
    cr_assert_float_eq(bytes, 16.0 * 96624 * 512 + 16 * 256 * 2, 1e-6);
}

Test(attn_launch, a_law_with_points_at_the_ops_rows_keeps_its_chunks_sharing_the_keys)
{
    cfg_system s = h200();
    static cfg_law_table with48, without48;
    const double r48[] = {24, 48}, r_no[] = {24, 64};
    for (int i = 0; i < 2; i++) {
        with48.rows[i] = r48[i];
        without48.rows[i] = r_no[i];
        with48.bytes[i] = without48.bytes[i] = 1e6 * (i + 1);
        with48.us[i] = without48.us[i] = 10.0 * (i + 1);
    }
    with48.n_rows = with48.n_bytes = with48.n_us = without48.n_rows = without48.n_bytes = without48.n_us = 2;
    /* TP=4 bf16 at batch 2 x 8K, 3 tokens x 16 heads = 48 rows in 2 chunks of 24: 4 groups, 32 splits of
     * 256 keys, 128 blocks in one round. With 48-row points: one sequence at 48 rows of 256 x 128 / 2 =
     * 16384 keys, its two chunks reading them; without: one chunk of 24 rows and 32768 keys. */
    plan_op op = attn(2, 3, 16, 1, 8192, 576, 512, true);
    double rows = 48, bytes = op.bytes_read + op.bytes_written;
    model_terms terms = {.n = 0};
    model_attention_coords(&s, &with48, &op, &rows, &bytes, &terms);
    cr_assert_float_eq(rows, 48.0, 1e-12);
    cr_assert_float_eq(bytes, 16384.0 * 1152 + 48 * 1088 * 2, 1e-6);
    cr_assert_float_eq(model_term_get(&terms, "launch_rule"), 16384.0, 1e-9);
    rows = 48;
    model_attention_coords(&s, &without48, &op, &rows, &bytes, NULL);
    cr_assert_float_eq(rows, 24.0, 1e-12);
    cr_assert_float_eq(bytes, 32768.0 * 1152 + 24 * 1088 * 2, 1e-6);
    /* Batch 1 at 8K and 48 rows: the one sequence is the op itself (64 splits of 128 keys a chunk). */
    op = attn(1, 3, 16, 1, 8192, 576, 512, true);
    rows = 48;
    model_attention_coords(&s, &with48, &op, &rows, &bytes, NULL);
    cr_assert_float_eq(rows, 48.0, 1e-12);
    cr_assert_float_eq(bytes, op.bytes_read + op.bytes_written, 1e-6);
}

Test(attn_launch, splits_set_by_the_keys_or_an_unknown_device_leave_the_coordinates)
{
    cfg_system s = h200();
    plan_op op = attn(1, 3, 8, 1, 8192, 576, 512, true);
    double rows = 24, bytes = 123;
    model_terms terms = {.n = 0};
    model_attention_coords(&s, NULL, &op, &rows, &bytes, &terms);
    cr_assert_float_eq(rows, 24.0, 1e-12);
    cr_assert_float_eq(bytes, 123.0, 1e-12);
    cr_assert_float_eq(model_term_get(&terms, "launch"), 128.0, 1e-12);
    s.gpu.smem_sm_kib = 0;
    op = attn(32, 1, 8, 1, 2048, 576, 512, true);
    model_attention_coords(&s, NULL, &op, &rows, &bytes, NULL);
    cr_assert_float_eq(bytes, 123.0, 1e-12);
}

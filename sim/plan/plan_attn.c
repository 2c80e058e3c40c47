/* The decode attention kernel's launch structure on the host (plan_attn.h). Every constant and step below
 * is kernels/vp_attention_plan.cu's (make_plan, fit_tiles, layout, fit_wgmma) or kernels/vp_attention.cuh's; the
 * unit test holds this port to the plans the kernel printed on an H200 (vp_attention_describe). Only the
 * occupancy is not the CUDA runtime's: see blocks_per_sm(). */
#include "plan_attn.h"

#include <string.h>

enum {
    NWARPS = 8,  /* VP_ATTN_WARPS */
    MAX_NT = 4,  /* VP_ATTN_MAX_NT: n8 row tiles per block, 32 rows */
    PAD = 8,     /* bf16 padding per shared-memory row */
    MAX_SPLITS = 1024,
    RESERVED = 1024 /* shared memory the hardware keeps per resident block */
};
#define MIN_SPLIT_BYTES (64LL << 10) /* a split reads at least this much of the cache */

typedef struct tiles {
    int nt, mt, rows_blk, dv_w, dv_chunks, tn, stages, dkp;
    long long smem;
} tiles;

static long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
static long long align_up(long long x, long long a) { return (x + a - 1) / a * a; }

/* make_plan's shared-memory layout of one candidate: the byte size pl->smem. */
static void layout(tiles *t, bool v_in_k)
{
    const long long ldk = t->dkp + PAD, ldv = v_in_k ? ldk : t->dv_w + PAD;
    const long long ldp = 8 * (t->nt | 1), lds = 8 * t->nt + 1, ldo = t->dv_w + 4;
    const long long off_k = align_up((long long)t->rows_blk * ldk * 2, 128);
    const long long off_v = align_up(off_k + (long long)t->stages * t->tn * ldk * 2, 128);
    const long long end = off_v + (v_in_k ? 0 : (long long)t->stages * t->tn * ldv * 2);
    const long long end_o = off_k + (long long)t->rows_blk * ldo * 4;
    const long long off_s = align_up(end > end_o ? end : end_o, 128);
    const long long off_p = align_up(off_s + (long long)NWARPS * 16 * lds * 4, 128);
    const long long off_a = align_up(off_p + (long long)t->tn * ldp * 2, 128);
    t->smem = off_a + (long long)t->rows_blk * 4;
}

/* fit_tiles: the largest key tile (in two passes: at most half an SM's shared memory, then the block's
 * budget), with the most stages, that fits. */
static bool fit_tiles(tiles *t, bool v_in_k, int nt, int mt, int dv16, long long budget, long long half)
{
    t->nt = nt;
    t->rows_blk = 8 * nt;
    t->mt = mt;
    t->dv_w = 16 * (dv16 < NWARPS * mt ? dv16 : NWARPS * mt);
    t->dv_chunks = (int)ceil_div(dv16, NWARPS * mt);
    for (int tn = 64; tn >= 16; tn /= 2)
        for (int pass = 0; pass < 2; pass++) {
            const long long cap = pass == 0 && half < budget ? half : budget;
            for (int st = 4; st >= 2; st--) {
                t->tn = tn;
                t->stages = st;
                layout(t, v_in_k);
                if (t->smem <= cap)
                    return true;
            }
        }
    return false;
}

/* fit_wgmma: the wgmma MLA kernel where it applies -- compute capability 9, latent MLA with one KV head
 * at qk_dim 576 and v_dim 512 -- in as few row chunks of <= 48 as possible, each in one warpgroup
 * (<= 24 rows) or two; two 64-key stages of 9 x 64 x 128 bytes; one block per SM (its shared memory). */
static bool fit_wgmma(const plan_op *op, const plan_attn_device *dev, int rows, long long budget, tiles *t,
                      int *row_chunks)
{
    if (dev->cc != 90 || !op->kv_shared || op->qk_dim != 576 || op->v_dim != 512)
        return false;
    const int chunks = (int)ceil_div(rows, 48);
    const int per_chunk = (int)ceil_div(rows, chunks), wgs = per_chunk > 24 ? 2 : 1;
    t->nt = (int)ceil_div(ceil_div(per_chunk, wgs), 8);
    t->rows_blk = 8 * t->nt * wgs;
    t->mt = 4;
    t->dv_w = 512;
    t->dv_chunks = 1;
    t->tn = 64;
    t->stages = 2;
    /* alignment slack, the stages, the query rows, P, the row maxima / sums, 3 mbarriers */
    t->smem = 1024 + 2LL * 9 * 64 * 128 + 9LL * t->rows_blk * 128 + (long long)t->rows_blk * 128 + wgs * 4 * 24 * 4 + 24;
    if (t->smem > budget)
        return false;
    *row_chunks = chunks;
    return true;
}

/* Resident blocks per SM. The kernel asks the runtime (cudaOccupancyMaxActiveBlocksPerMultiprocessor);
 * the host can count the shared memory, and takes the registers from the kernel's __launch_bounds__(256,
 * MT >= 4 ? 1 : 2): the compiler may give a block of 4 value tiles the whole register file, one of fewer
 * tiles half of it. On the H200 the runtime said 1 and 2 for every MLA and GQA shape of the GPU suite
 * (bench/NOTES.md 2026-12-02; 3 once for a 35 KB toy shape, which no model has). */
static int blocks_per_sm(const tiles *t, long long smem_sm)
{
    const long long by_smem = smem_sm / (t->smem + RESERVED);
    const long long by_regs = t->mt >= 4 ? 1 : 2;
    const long long n = by_smem < by_regs ? by_smem : by_regs;
    return n < 1 ? 1 : (int)n;
}

int plan_attention_launch(const plan_op *op, const plan_attn_device *dev, plan_attn_launch *out)
{
    memset(out, 0, sizeof(*out));
    const int kv_heads = op->kv_shared ? 1 : op->kv_heads;
    if (op->kind != PLAN_OP_ATTENTION || !dev || dev->sms < 1 || dev->smem_sm <= 0 || dev->smem_block <= 0 ||
        op->batch < 1 || op->q_len < 1 || op->heads < 1 || kv_heads < 1 || op->heads % kv_heads || op->qk_dim < 1 ||
        op->v_dim < 1 || op->kv_len < 0)
        return -1;
    const bool v_in_k = op->kv_shared;
    const long long budget = dev->smem_block < dev->smem_sm ? dev->smem_block : dev->smem_sm;
    /* Two blocks per SM overlap one block's barriers with the other's copies: make_plan prefers a depth
     * at which they fit (1 KB per block reserved by the hardware). */
    const long long half = dev->smem_sm / 2 > 2048 ? dev->smem_sm / 2 - 2048 : 0;
    const int rows = (int)(op->q_len * (op->heads / kv_heads));
    const int dv16 = (int)ceil_div(op->v_dim, 16);
    tiles t = {.dkp = (int)ceil_div(op->qk_dim, 16) * 16};
    /* All rows in as few balanced chunks of <= 32 as possible, up to 512 value columns per block; when
     * no tile fits, fewer value columns, then fewer rows. */
    const int nt_want = (int)ceil_div(ceil_div(rows, ceil_div(rows, 8 * MAX_NT)), 8);
    const int mt_want = dv16 <= NWARPS ? 1 : dv16 <= 2 * NWARPS ? 2 : 4;
    bool fits = false;
    for (int nt = nt_want; nt >= 1 && !fits; nt--)
        for (int mt = mt_want; mt >= 1 && !fits; mt /= 2)
            fits = fit_tiles(&t, v_in_k, nt, mt, dv16, budget, half);
    if (!fits)
        return -1;
    int row_chunks = (int)ceil_div(rows, t.rows_blk);
    out->kernel = 1;
    tiles w = t;
    if (fit_wgmma(op, dev, rows, budget, &w, &row_chunks)) {
        t = w;
        out->kernel = 3;
    }
    out->rows = rows;
    out->rows_blk = t.rows_blk;
    out->row_chunks = row_chunks;
    out->dv_chunks = t.dv_chunks;
    out->mt = t.mt;
    out->tn = t.tn;
    out->stages = t.stages;
    out->smem = t.smem;
    out->blocks_per_sm = out->kernel == 3 ? 1 : blocks_per_sm(&t, dev->smem_sm);
    out->slots = (long long)dev->sms * out->blocks_per_sm;
    if (op->kv_len == 0)
        return 0; /* nothing to launch */
    /* Splits: enough blocks to fill every SM once, each reading at least MIN_SPLIT_BYTES in whole tiles. */
    const long long groups = (long long)op->batch * kv_heads * out->row_chunks * out->dv_chunks;
    const long long cache_per_key = 2LL * (op->qk_dim + (v_in_k ? 0 : t.dv_w));
    long long min_keys = ceil_div(MIN_SPLIT_BYTES, cache_per_key);
    min_keys = min_keys > t.tn ? min_keys : t.tn;
    const long long by_slots = ceil_div(out->slots, groups), by_keys = ceil_div(op->kv_len, min_keys);
    long long splits = by_slots < by_keys ? by_slots : by_keys;
    splits = splits > MAX_SPLITS ? MAX_SPLITS : splits < 1 ? 1 : splits;
    out->slot_limited = by_slots <= by_keys;
    out->keys_per_split = ceil_div(ceil_div(op->kv_len, splits), t.tn) * t.tn;
    out->splits = (int)ceil_div(op->kv_len, out->keys_per_split);
    out->blocks = groups * out->splits;
    return 0;
}

double plan_attention_sm_keys(const plan_attn_launch *l, int sms)
{
    if (sms < 1 || l->blocks < 1)
        return 0.0;
    return (double)ceil_div(l->blocks, sms) * (double)l->keys_per_split;
}

// Host side of the decode attention: the launch plan (row and value chunks, keys per tile, pipeline
// depth, shared-memory layout, KV splits) and the C interface of vp_kernels.h. The kernel and its
// shared-memory layout are described in vp_attention.cu.
#include "vp_attention.cuh"
#include "vp_kernels.h"

#include <math.h>
#include <stdio.h>

namespace {

constexpr int NWARPS = VP_ATTN_WARPS;
constexpr int MAX_NT = VP_ATTN_MAX_NT;
constexpr int PAD = 8; // bf16 padding per shared-memory row (16 bytes): ldmatrix rows hit distinct banks
constexpr long long MIN_SPLIT_BYTES = 64 << 10; // a split reading less costs more in the combine than it saves

size_t g_smem_budget = 0;                                 // vp_attention_set_smem_budget(); 0 = device limit
int g_force_stages = 0, g_force_splits = 0, g_force_tile = 0; // vp_attention_set_tuning / _set_tile; 0 = auto
int g_force_kernel = 0;                                       // vp_attention_set_kernel; 0 = VP_ATTN_DEFAULT_KERNEL
// The kernel a launch uses unless told: the wgmma MLA kernel where it applies, else the mma.sync MLA
// kernel where that fits, else the general one. The mma.sync MLA kernel ran 6-17 % faster than the
// general one on an H200 from 16K context up (bench/NOTES.md, session 17); the wgmma kernel's A/B
// against it is in bench/NOTES.md, session 20.
constexpr int VP_ATTN_DEFAULT_KERNEL = 3;
constexpr int VP_ATTN_MAX_KERNEL = 3;

long long ceil_div(long long a, long long b)
{
    return (a + b - 1) / b;
}

size_t align_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

struct DeviceInfo {
    int dev, sms, optin, sm_smem, cc_major;
};

// Device limits, cached: after the first call (the workspace query) a launch makes no device
// queries, which keeps it cheap and safe inside a stream capture.
int device_info(DeviceInfo *d)
{
    static DeviceInfo cached[64];
    VP_TRY(cudaGetDevice(&d->dev));
    if (d->dev < 64 && cached[d->dev].sms) {
        *d = cached[d->dev];
        return 0;
    }
    VP_TRY(cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, d->dev));
    VP_TRY(cudaDeviceGetAttribute(&d->optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, d->dev));
    VP_TRY(cudaDeviceGetAttribute(&d->sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, d->dev));
    VP_TRY(cudaDeviceGetAttribute(&d->cc_major, cudaDevAttrComputeCapabilityMajor, d->dev));
    if (d->dev < 64)
        cached[d->dev] = *d;
    return 0;
}

// Shared-memory layout of a candidate (nt, tn, stages, dv_w): strides, offsets and pl->smem.
void layout(AttnPlan *pl, int v_in_k)
{
    pl->ldk = pl->dkp + PAD;
    pl->ldv = v_in_k ? pl->ldk : pl->dv_w + PAD;
    pl->ldp = 8 * (pl->nt | 1);
    pl->lds = 8 * pl->nt + 1;
    pl->ldo = pl->dv_w + 4;
    pl->off_k = align_up((size_t)pl->rows_blk * pl->ldk * 2, 128);
    pl->off_v = align_up(pl->off_k + (size_t)pl->stages * pl->tn * pl->ldk * 2, 128);
    size_t end = pl->off_v + (v_in_k ? 0 : (size_t)pl->stages * pl->tn * pl->ldv * 2);
    const size_t end_o = pl->off_k + (size_t)pl->rows_blk * pl->ldo * 4; // sO reuses the stages
    pl->off_s = align_up(end > end_o ? end : end_o, 128);
    pl->off_p = align_up(pl->off_s + (size_t)NWARPS * 16 * pl->lds * 4, 128);
    pl->off_a = align_up(pl->off_p + (size_t)pl->tn * pl->ldp * 2, 128);
    pl->smem = pl->off_a + (size_t)pl->rows_blk * 4;
}

// The first (largest tile, in two passes: at most half an SM's shared memory, then the budget; most
// stages) that fits, for nt row tiles and mt value tiles per warp. Fills pl; false if none fits.
bool fit_tiles(AttnPlan *pl, int v_in_k, int nt, int mt, int dv16, size_t budget, size_t half)
{
    pl->nt = nt;
    pl->rows_blk = 8 * nt;
    pl->mt = mt;
    pl->dv_w = 16 * (dv16 < NWARPS * mt ? dv16 : NWARPS * mt);
    pl->dv_chunks = (int)ceil_div(dv16, NWARPS * mt);
    const int st_hi = g_force_stages ? g_force_stages : 4, st_lo = g_force_stages ? g_force_stages : 2;
    for (int tn = 64; tn >= 16; tn /= 2) {
        if (g_force_tile && tn != g_force_tile)
            continue;
        for (int pass = 0; pass < 2; pass++) {
            const size_t cap = pass == 0 && half < budget ? half : budget;
            for (int st = st_hi; st >= st_lo; st--) {
                pl->tn = tn;
                pl->stages = st;
                layout(pl, v_in_k);
                if (pl->smem <= cap)
                    return true;
            }
        }
    }
    return false;
}

// The MLA kernel (vp_attention_mla.cu) where it applies: latent MLA at qk_dim 576 (18 k-steps in each
// of the two shares of a 64-key tile), values in one chunk of at most 512 columns, row chunks of at most
// 24 rows (NT <= 3: the query fragments fit in registers), and its three 64-key stages within the
// shared memory allowed. Fills the layout fields of pl (tile, stages, offsets, smem) and returns true.
bool fit_mla(const vp_attn_args *a, AttnPlan *pl, size_t budget)
{
    if (!a->v_in_k || a->qk_dim != VP_ATTN_MLA_DIM || a->v_dim % 16 || a->v_dim <= 256 || a->v_dim > 512 ||
        pl->nt > 3 || pl->mt != 4 || pl->dv_chunks != 1)
        return false;
    pl->tn = 64;
    pl->stages = VP_ATTN_MLA_STAGES;
    pl->ldk = pl->dkp + PAD; // the query rows, staged in the last stage's buffer, keep the padded rows
    pl->ldp = 8 * (pl->nt | 1);
    pl->ldo = pl->dv_w + 4;
    pl->off_k = 0;
    const size_t stages_end = (size_t)pl->stages * pl->tn * VP_ATTN_MLA_DIM * 2;
    pl->off_s = stages_end; // the shares of the scores: 1 share x 4 key tiles x NT x 32 lanes x 16 B
    pl->off_p = align_up(pl->off_s + (size_t)4 * pl->nt * 32 * 16, 128);
    pl->off_r = align_up(pl->off_p + (size_t)pl->tn * pl->ldp * 2, 128);
    pl->smem = pl->off_r + 2 * 4 * 32 * sizeof(float);
    return pl->smem <= budget && (size_t)pl->rows_blk * pl->ldo * 4 <= stages_end &&
           (size_t)pl->rows_blk * pl->ldk * 2 <= (size_t)pl->tn * VP_ATTN_MLA_DIM * 2;
}

// The wgmma MLA kernel (vp_attention_wgmma.cu) where it applies: sm_90a code built and a compute
// capability 9 device, latent MLA (one KV head: the tensor maps read contiguous rows) at qk_dim 576 and
// v_dim 512, and its two stages within the shared memory allowed. Rows: as few chunks of at most 48 as
// possible, each in one warpgroup (<= 24 rows) or two. Fills pl's kernel-3 fields and returns true.
bool fit_wgmma(const vp_attn_args *a, const DeviceInfo &di, AttnPlan *pl, size_t budget)
{
    if (!VP_ATTN_HAVE_WGMMA || di.cc_major != 9 || !a->v_in_k || a->kv_heads != 1 || a->qk_dim != VP_ATTN_MLA_DIM ||
        a->v_dim != VP_ATTN_WG_VDIM)
        return false;
    const int rows = a->q_len * (a->heads / a->kv_heads);
    pl->row_chunks = (int)ceil_div(rows, 48);
    const int per_chunk = (int)ceil_div(rows, pl->row_chunks);
    pl->wgs = per_chunk > 24 ? 2 : 1;
    pl->nt = (int)ceil_div(ceil_div(per_chunk, pl->wgs), 8);
    pl->rows_blk = 8 * pl->nt * pl->wgs;
    pl->mt = 4;
    pl->tn = 64;
    pl->stages = 2;
    pl->dv_w = a->v_dim;
    pl->dv_chunks = 1;
    pl->dkp = VP_ATTN_MLA_DIM;
    pl->ldk = pl->ldv = pl->ldp = pl->lds = pl->ldo = 0; // panels: the kernel's own layout
    pl->off_k = pl->off_v = pl->off_s = pl->off_p = pl->off_a = pl->off_r = 0;
    // 1,024 bytes of alignment slack, the stages, sQ, sP, the row maxima / sums and 3 mbarriers.
    pl->smem = 1024 + 2 * (size_t)VP_ATTN_WG_STAGE_BYTES + (size_t)9 * pl->rows_blk * 128 +
               (size_t)pl->rows_blk * 128 + (size_t)pl->wgs * 4 * 24 * sizeof(float) + 3 * 8;
    return pl->smem <= budget;
}

// want: 1 the general kernel, 2 the MLA kernel where it applies (else the general one), 3 the wgmma
// kernel where it applies (else as 2).
int make_plan(const vp_attn_args *a, AttnPlan *pl, int want)
{
    if (!a || a->batch < 1 || a->q_len < 1 || a->kv_len < 0 || a->heads < 1 || a->kv_heads < 1 ||
        a->heads % a->kv_heads != 0 || a->qk_dim < 1 || a->v_dim < 1 || (a->v_in_k && a->v_dim > a->qk_dim) ||
        (long long)a->batch * a->kv_heads > 65535 || (long long)a->q_len * a->heads > (1 << 24) ||
        (long long)a->batch * a->q_len * a->heads > 0x7fffffffLL || a->qk_dim > (1 << 20) || a->v_dim > (1 << 20) ||
        !isfinite(a->scale))
        return (int)cudaErrorInvalidValue;
    DeviceInfo di;
    VP_TRY((cudaError_t)device_info(&di));
    const size_t budget = g_smem_budget && g_smem_budget < (size_t)di.optin ? g_smem_budget : (size_t)di.optin;
    // Two blocks per SM overlap one block's barriers and softmax with the other's copies; prefer a
    // pipeline depth at which they fit (1 KB per block is reserved by the hardware).
    const size_t half = di.sm_smem / 2 > 2048 ? (size_t)di.sm_smem / 2 - 2048 : 0;

    *pl = AttnPlan{};
    const int rows = a->q_len * (a->heads / a->kv_heads);
    const int dv16 = (int)ceil_div(a->v_dim, 16);
    pl->dkp = (int)ceil_div(a->qk_dim, 16) * 16;
    // Wanted: all rows in as few balanced chunks of <= 32 as possible (40 rows = 2 x 24) and up to 512
    // value columns per block. When no tile size fits, fewer value columns per block, then fewer rows
    // (each extra chunk re-reads the keys, mostly from L2: the chunks of a split run side by side).
    const int nt_want = (int)ceil_div(ceil_div(rows, ceil_div(rows, 8 * MAX_NT)), 8);
    const int mt_want = dv16 <= NWARPS ? 1 : dv16 <= 2 * NWARPS ? 2 : 4;
    bool fits = false;
    for (int nt = nt_want; nt >= 1 && !fits; nt--)
        for (int mt = mt_want; mt >= 1 && !fits; mt /= 2)
            fits = fit_tiles(pl, a->v_in_k, nt, mt, dv16, budget, half);
    if (!fits)
        return (int)cudaErrorInvalidValue; // qk_dim (or v_dim) too large for this device's shared memory
    pl->row_chunks = (int)ceil_div(rows, pl->rows_blk);
    pl->kernel = 1;
    pl->wgs = 1;
    if (want >= 2 && !g_force_tile && !g_force_stages) {
        AttnPlan w = *pl, m = *pl; // candidates; pl stays the general plan unless one fits
        if (want == 3 && fit_wgmma(a, di, &w, budget)) {
            *pl = w;
            pl->kernel = 3;
        } else if (fit_mla(a, &m, budget)) {
            *pl = m;
            pl->kernel = 2;
        }
    }
    VP_TRY((cudaError_t)vp_attention_kernel_setup(di.dev, pl, &pl->blocks_per_sm));
    if (a->kv_len == 0)
        return 0; // splits = 0: nothing to launch

    // Splits: enough blocks to fill every SM once (a second round would only add partial traffic),
    // but each split reads at least MIN_SPLIT_BYTES, in whole tiles. (Each split also had to read twice
    // its partial output while the combine made two dependent rounds of loads; since the combine makes
    // one, MLA 8K runs faster on 128 splits of one tile than on 64 of two, 18.0 against 18.7 us on an
    // H200, bench/NOTES.md 2026-11-30 #13.)
    const long long groups = (long long)a->batch * a->kv_heads * pl->row_chunks * pl->dv_chunks;
    const long long slots = (long long)di.sms * pl->blocks_per_sm;
    const long long cache_per_key = 2LL * (a->qk_dim + (a->v_in_k ? 0 : pl->dv_w));
    long long min_keys = ceil_div(MIN_SPLIT_BYTES, cache_per_key);
    min_keys = min_keys > pl->tn ? min_keys : pl->tn;
    long long splits = ceil_div(slots, groups);
    splits = splits < ceil_div(a->kv_len, min_keys) ? splits : ceil_div(a->kv_len, min_keys);
    if (g_force_splits)
        splits = g_force_splits;
    splits = splits > VP_ATTN_MAX_SPLITS ? VP_ATTN_MAX_SPLITS : splits < 1 ? 1 : splits;
    pl->keys_per_split = (int)(ceil_div(ceil_div(a->kv_len, splits), pl->tn) * pl->tn);
    pl->splits = (int)ceil_div(a->kv_len, pl->keys_per_split);
    if (pl->splits > 1)
        pl->workspace = (size_t)pl->splits * a->batch * a->q_len * a->heads * ((size_t)a->v_dim + 2) * sizeof(float);
    return 0;
}

// 16-byte copies are legal for a: dims a multiple of 8 and the pointers aligned. The MLA kernels copy
// nothing else, so without it a launch takes the general kernel (vp_attention_decode).
bool args_vec(const vp_attn_args *a)
{
    return a->qk_dim % 8 == 0 && vp_aligned16(a->q) && vp_aligned16(a->k) &&
           (a->v_in_k || (a->v_dim % 8 == 0 && vp_aligned16(a->v)));
}

} // namespace

extern "C" size_t vp_attention_workspace_bytes(const vp_attn_args *a)
{
    // make_plan also opts the kernel in to its shared memory, so a graph capture that follows makes no
    // attribute calls.
    AttnPlan pl;
    if (make_plan(a, &pl, g_force_kernel ? g_force_kernel : VP_ATTN_DEFAULT_KERNEL) != 0)
        return 0;
    return pl.workspace;
}

extern "C" void vp_attention_set_smem_budget(size_t bytes)
{
    g_smem_budget = bytes;
}

extern "C" int vp_attention_set_tuning(int stages, int splits)
{
    if ((stages != 0 && (stages < 2 || stages > 4)) || splits < 0 || splits > VP_ATTN_MAX_SPLITS)
        return (int)cudaErrorInvalidValue;
    g_force_stages = stages;
    g_force_splits = splits;
    return 0;
}

extern "C" int vp_attention_set_kernel(int kernel)
{
    if (kernel < 0 || kernel > VP_ATTN_MAX_KERNEL)
        return (int)cudaErrorInvalidValue;
    g_force_kernel = kernel;
    return 0;
}

extern "C" int vp_attention_set_tile(int keys)
{
    if (keys != 0 && keys != 16 && keys != 32 && keys != 64)
        return (int)cudaErrorInvalidValue;
    g_force_tile = keys;
    return 0;
}

extern "C" int vp_attention_kernel_of(const vp_attn_args *a)
{
    AttnPlan pl;
    if (make_plan(a, &pl, g_force_kernel ? g_force_kernel : VP_ATTN_DEFAULT_KERNEL) != 0)
        return 0;
    return pl.kernel >= 2 && !args_vec(a) ? 1 : pl.kernel;
}

extern "C" int vp_attention_describe(const vp_attn_args *a, char *buf, size_t len)
{
    AttnPlan pl;
    VP_TRY((cudaError_t)make_plan(a, &pl, g_force_kernel ? g_force_kernel : VP_ATTN_DEFAULT_KERNEL));
    if (buf && len)
        snprintf(buf, len,
                 "splits=%d,keys_per_split=%d,tn=%d,stages=%d,rows_blk=%d,row_chunks=%d,dv_chunks=%d,mt=%d,"
                 "blocks_per_sm=%d,smem=%zu,ws=%zu,kernel=%d,wgs=%d",
                 pl.splits, pl.keys_per_split, pl.tn, pl.stages, pl.rows_blk, pl.row_chunks, pl.dv_chunks, pl.mt,
                 pl.blocks_per_sm, pl.smem, pl.workspace, pl.kernel, pl.wgs);
    return 0;
}

extern "C" int vp_attention_decode(const vp_attn_args *a, void *stream)
{
    AttnPlan pl;
    VP_TRY((cudaError_t)make_plan(a, &pl, g_force_kernel ? g_force_kernel : VP_ATTN_DEFAULT_KERNEL));
    cudaStream_t s = (cudaStream_t)stream;
    const long long total_rows = (long long)a->batch * a->q_len * a->heads;
    if (!a->out || (a->kv_len > 0 && (!a->q || !a->k || (!a->v_in_k && !a->v) || (pl.splits > 1 && !a->workspace))))
        return (int)cudaErrorInvalidValue;
    if (a->kv_len == 0) // softmax over no keys: defined here as a zero output
        return (int)cudaMemsetAsync(a->out, 0, (size_t)total_rows * a->v_dim * 2, s);

    AttnParams p;
    p.q = (const bf16 *)a->q;
    p.k = (const bf16 *)a->k;
    p.v = (const bf16 *)a->v;
    p.out = (bf16 *)a->out;
    p.part_o = (float *)a->workspace;
    p.part_ml = p.part_o + (size_t)pl.splits * total_rows * a->v_dim;
    p.q_len = a->q_len;
    p.kv_len = a->kv_len;
    p.heads = a->heads;
    p.kv_heads = a->kv_heads;
    p.qk_dim = a->qk_dim;
    p.v_dim = a->v_dim;
    p.v_in_k = a->v_in_k != 0;
    p.group = a->heads / a->kv_heads;
    p.rows = a->q_len * p.group;
    p.total_rows = (int)total_rows;
    p.scale_log2 = a->scale * 1.4426950408889634f;
    p.vec = args_vec(a);
    if (pl.kernel >= 2 && !p.vec) { // the MLA kernels copy 16 bytes at a time: the general one instead
        AttnPlan p1;
        VP_TRY((cudaError_t)make_plan(a, &p1, 1));
        if (p1.splits > 1 && (p1.splits > pl.splits || p1.workspace > pl.workspace))
            return (int)cudaErrorInvalidValue; // not for the workspace the caller sized
        pl = p1;
        p.part_ml = p.part_o + (size_t)pl.splits * total_rows * a->v_dim;
    }
    p.vec_out = vp_aligned16(a->out) && (pl.splits == 1 || vp_aligned16(a->workspace));
    p.pl = pl;
    p.trace = g_vp_attn_trace;

    const int stage = pl.splits > 1 ? g_vp_attn_probe_stage : 0;
    if (stage != 2)
        VP_TRY((cudaError_t)vp_attention_launch(p, a->batch, s));
    if (pl.splits > 1 && stage != 1)
        VP_TRY((cudaError_t)vp_attention_combine(p.out, p.part_o, p.part_ml, pl.splits, p.total_rows, a->v_dim,
                                                 stage != 3,
                                                 p.trace ? p.trace + (size_t)VP_ATTN_TRACE_SLOTS * pl.row_chunks *
                                                                         pl.dv_chunks * pl.splits * a->batch *
                                                                         a->kv_heads
                                                         : nullptr,
                                                 s));
    return 0;
}

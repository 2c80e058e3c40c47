// The wgmma MLA kernel's building blocks outside its tile loop (vp_attention_wgmma.cu): the shared-memory
// panels, the tensor memory accelerator's copies into them and the epilogue's row stores, for the kernel
// and for variants of it (session 21 built one, kept in the lab: bench/NOTES.md). Device code for sm_90a
// only (VP_WGMMA_ARCH); the constants for every pass.
#pragma once

#include "vp_attention_tiles.cuh"
#include "vp_wgmma.cuh"

namespace {

constexpr int DIM = VP_ATTN_MLA_DIM;
constexpr int PANELS = DIM / 64;
constexpr int TN = 64;
constexpr int STAGE_BYTES = PANELS * TN * 128;
constexpr int LDO = VP_ATTN_WG_VDIM + 4; // sO's row stride (fp32): 4 mod 32, rows 2t of a fragment 8 banks apart
static_assert(DIM % 64 == 0, "the latent row splits into 128-byte panels");
static_assert(STAGE_BYTES == VP_ATTN_WG_STAGE_BYTES, "the planner's stage size");
static_assert(48 * (VP_ATTN_WG_VDIM + 4) * 4 <= 2 * STAGE_BYTES, "the epilogue's output rows fit over the stages");

#if VP_WGMMA_ARCH // the other architectures' passes compile empty kernels
// One box of a 2-D tensor map (columns c0.., rows c1..) into shared memory, completing on bar.
__device__ __forceinline__ void tma_load_2d(unsigned char *dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3}], [%4];\n" ::"r"(vp_smem_addr(dst)),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(vp_smem_addr(bar))
                 : "memory");
}

// Panel by panel: `rows` rows from row `row0` of the map into dst (panel stride rows x 128 bytes). Rows
// past the tensor's end arrive as zeros; the bytes complete on bar, which this thread arms first.
__device__ __forceinline__ void tma_panels(unsigned char *dst, const CUtensorMap *map, int row0, int rows, uint64_t *bar)
{
    vp_mbar_arrive_expect_tx(bar, (unsigned)(PANELS * rows * 128));
#pragma unroll
    for (int pn = 0; pn < PANELS; pn++)
        tma_load_2d(dst + pn * rows * 128, map, 64 * pn, row0, bar);
}

// The epilogue's row stores: the block's rows out of sO [rows][LDO] fp32 (unnormalised) with each row's
// (m, l) in sML, one warp a row (store_row_bf16 / _f32): normalised bf16 with a single split, else the
// split's fp32 partial and its (m, l). nwarps: the block's warps.
__device__ __forceinline__ void wg_store_rows(const AttnParams &p, const Block &k, const float *sO, const float2 *sML,
                                              int nwarps)
{
    const int lane = threadIdx.x & 31;
    const bool direct = p.pl.splits == 1;
#pragma unroll 1
    for (int br = threadIdx.x >> 5; br < k.nrows; br += nwarps) {
        const long long grow = global_row(p, k, br);
        const float *src = sO + br * LDO;
        const float2 ml = sML[br];
        if (direct) {
            store_row_bf16(p.out + grow * p.v_dim, src, VP_ATTN_WG_VDIM, 1.0f / ml.y, p.vec_out, lane);
        } else {
            store_row_f32(p.part_o + ((long long)k.split * p.total_rows + grow) * p.v_dim, src, VP_ATTN_WG_VDIM,
                          p.vec_out, lane);
            if (lane == 0) {
                float *pml = p.part_ml + ((long long)k.split * p.total_rows + grow) * 2;
                pml[0] = ml.x;
                pml[1] = ml.y;
            }
        }
    }
}
#endif

} // namespace

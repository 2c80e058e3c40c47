// Device-side pieces shared by the custom collective kernels (vp_allreduce.cu, vp_allreduce_norm.cu):
// flag and data memory ops, timeouts, epochs, per-block barriers, data units and push landing lines.
// The protocol is described at the top of vp_allreduce.cu. Internal linkage: each kernel file gets
// its own copy, and nothing here is part of an interface.
#ifndef VPSIM_VP_AR_DEVICE_CUH
#define VPSIM_VP_AR_DEVICE_CUH

#include "vp_allreduce.h"
#include "vp_cuda.cuh"
#include "vp_sys_ops.cuh"

namespace {

// ------------------------------------------------------------------------------------ memory ops
// (now_ns, st_release_sys, ld_acquire_sys: vp_sys_ops.cuh)

// Loads of buffers that other ranks write (or wrote in an earlier call): volatile is relaxed at system
// scope, never served from a stale L1 line, and never the non-coherent texture path.
__device__ __forceinline__ uint4 ld_volatile_v4(const void *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ unsigned short ld_volatile_u16(const void *p)
{
    unsigned short v;
    asm volatile("ld.volatile.global.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}

// Push lines: two 64-bit words, each (flag << 32 | 4 bytes of data). Vector accesses are sets of
// element accesses, and each 64-bit element is single-copy atomic, so each word arrives whole.
__device__ __forceinline__ void st_volatile_v2u64(void *p, u64 a, u64 b)
{
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

__device__ __forceinline__ void ld_volatile_v2u64(const void *p, u64 *a, u64 *b)
{
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}

// ------------------------------------------------------------------------------- errors, epochs

__device__ __forceinline__ bool rank_failed(const vp_ar_args &a)
{
    return *(volatile unsigned *)&a.self->error_claim != 0u;
}

// First timeout of this rank wins the claim (a local atomic) and fills the host-mapped record; `code`
// is written last so the host never reads a half-written record.
__device__ void record_timeout(const vp_ar_args &a, int peer, int phase, unsigned want, unsigned seen,
                               long long index, u64 waited)
{
    if (atomicCAS(&a.self->error_claim, 0u, 1u) != 0u)
        return;
    volatile vp_ar_error *e = a.error;
    e->rank = a.rank;
    e->peer = peer;
    e->block = (int)blockIdx.x;
    e->phase = phase;
    e->expected = want;
    e->seen = seen;
    e->index = index;
    e->waited_ns = waited;
    __threadfence_system();
    e->code = VP_AR_ERR_TIMEOUT;
    __threadfence_system();
}

// Flags are epochs; a slot only ever moves forward, and a peer cannot be a whole call ahead on the
// same slot (it must first pass this call's barriers with us). Wrap-safe comparison anyway.
__device__ __forceinline__ bool reached(unsigned seen, unsigned want) { return (int)(seen - want) >= 0; }

__device__ bool wait_flag(const vp_ar_args &a, const unsigned *flag, unsigned want, int peer, int phase)
{
    unsigned seen = ld_acquire_sys(flag);
    if (reached(seen, want))
        return true;
    const u64 t0 = now_ns();
    for (unsigned spin = 1;; spin++) {
        seen = ld_acquire_sys(flag);
        if (reached(seen, want))
            return true;
        if ((spin & 63u) == 0u) {
            const u64 waited = now_ns() - t0;
            if (waited > a.timeout_ns) {
                record_timeout(a, peer, phase, want, seen, -1, waited);
                return false;
            }
            if (rank_failed(a)) // another block already gave up: stop early
                return false;
        }
    }
}

// Start of every call, in every block: nothing to do once this rank has failed; else read the epoch
// (advanced by the previous call's last block, visible across the kernel boundary). Block-uniform.
__device__ __forceinline__ bool call_begin(const vp_ar_args &a, unsigned *epoch)
{
    if (__syncthreads_or(rank_failed(a)))
        return false;
    *epoch = *(volatile unsigned *)&a.self->epoch + 1u;
    return true;
}

// End of every call: the last block to finish advances the epoch for the next call (local atomic).
__device__ __forceinline__ void call_end(const vp_ar_args &a, unsigned epoch)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        vp_ar_signal *self = a.self;
        if (atomicAdd(&self->done, 1u) == gridDim.x - 1) {
            self->done = 0;
            self->epoch = epoch;
        }
    }
}

__device__ __forceinline__ unsigned *flag_slot(vp_ar_signal *s, int phase, int block, int rank)
{
    unsigned(*arr)[VP_AR_MAX_RANKS] = phase == VP_AR_WAIT_START ? s->start : phase == VP_AR_WAIT_MID ? s->mid : s->end;
    return &arr[block][rank];
}

// Block b of every rank meets here. Thread p (< world, != rank) publishes this block's arrival in peer
// p's signal and waits for peer p's block b in ours. Returns false (block-uniform) after a timeout.
__device__ bool block_barrier(const vp_ar_args &a, int phase, unsigned epoch)
{
    __syncthreads();
    bool ok = true;
    const int p = (int)threadIdx.x;
    if (p < a.world && p != a.rank) {
        st_release_sys(flag_slot(a.signal[p], phase, (int)blockIdx.x, a.rank), epoch);
        ok = wait_flag(a, flag_slot(a.signal[a.rank], phase, (int)blockIdx.x, p), epoch, p, phase);
    }
    return __syncthreads_and(ok) != 0;
}

// ------------------------------------------------------------------------------------ data units

// A unit is 8 elements (16 bytes) on the vector path, 1 element otherwise; a partial last unit
// (count not a multiple of 8) takes the scalar loop. `n` = elements in this unit.

template <bool VEC>
__device__ __forceinline__ void acc_unit(float acc[8], const void *buf, long long e0, int n)
{
    const char *p = (const char *)buf + e0 * 2;
    if (VEC && n == 8) {
        const uint4 raw = ld_volatile_v4(p);
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&raw);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float2 f = __bfloat1622float2(h[j]);
            acc[2 * j] += f.x;
            acc[2 * j + 1] += f.y;
        }
    } else {
#pragma unroll // static indices keep acc[] in registers
        for (int j = 0; j < 8; j++)
            if (j < n)
                acc[j] += __bfloat162float(__ushort_as_bfloat16(ld_volatile_u16(p + 2 * j)));
    }
}

// Stores go to local memory only (output, own scratch). The destination's alignment is tested here,
// not folded into VEC, because VEC must be the same on every rank (it fixes the unit size, which the
// two-shot slices depend on) and only the inputs and scratch are guaranteed to agree across ranks.
template <bool VEC>
__device__ __forceinline__ void store_unit(void *buf, long long e0, int n, const float acc[8])
{
    bf16 *p = (bf16 *)buf + e0;
    if (VEC && n == 8 && ((uintptr_t)p & 15u) == 0) {
        uint4 raw;
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&raw);
#pragma unroll
        for (int j = 0; j < 4; j++)
            h[j] = __floats2bfloat162_rn(acc[2 * j], acc[2 * j + 1]);
        *reinterpret_cast<uint4 *>(p) = raw;
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < n)
                p[j] = __float2bfloat16(acc[j]);
    }
}

template <bool VEC>
__device__ __forceinline__ void copy_unit(void *dst, const void *src, long long e0, int n)
{
    char *d = (char *)dst + e0 * 2;
    if (VEC && n == 8) {
        const uint4 v = ld_volatile_v4((const char *)src + e0 * 2);
        if (((uintptr_t)d & 15u) == 0) {
            *reinterpret_cast<uint4 *>(d) = v;
        } else {
            const unsigned short *h = reinterpret_cast<const unsigned short *>(&v);
            for (int j = 0; j < 8; j++)
                ((unsigned short *)d)[j] = h[j];
        }
    } else {
        for (int j = 0; j < n; j++)
            ((unsigned short *)dst)[e0 + j] = ld_volatile_u16((const char *)src + (e0 + j) * 2);
    }
}

__device__ __forceinline__ int unit_len(long long e0, int unit, long long count)
{
    const long long left = count - e0;
    return left < unit ? (int)left : unit;
}

// Units in a call of `count` elements (the vector path's last one may be partial).
template <bool VEC>
__device__ __forceinline__ long long unit_count(long long count)
{
    return VEC ? (count + 7) / 8 : count;
}

// Grid-stride walk over units [lo, hi): f(e0, n) for each unit this thread owns (e0 = first element, n =
// elements in the unit). Unit lo + k goes to the same thread on every rank (same grid everywhere), which
// the two-shot slices rely on. first and stride are hoisted: with them in the loop header nvcc gives the
// scalar two-shot kernel 64 registers on sm_90 instead of 40.
template <bool VEC, typename F>
__device__ __forceinline__ void for_each_unit(long long count, long long lo, long long hi, F &&f)
{
    const int unit = VEC ? 8 : 1;
    const long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
    for (long long u = lo + first; u < hi; u += stride) {
        const long long e0 = u * unit;
        f(e0, unit_len(e0, unit, count));
    }
}

// fp32 sum of every rank's unit, in the fixed order 0..N-1: bit-identical on every rank.
template <bool VEC>
__device__ __forceinline__ void sum_inputs(float acc[8], const vp_ar_args &a, long long e0, int n)
{
#pragma unroll
    for (int j = 0; j < 8; j++)
        acc[j] = 0.f;
    for (int r = 0; r < a.world; r++)
        acc_unit<VEC>(acc, a.in[r], e0, n);
}

// ------------------------------------------------------------------------- call prologue, epilogue

// Start of the barrier kernels: false (block-uniform) when this rank has failed or a peer did not
// arrive; peers' inputs are complete once they pass the start barrier (their kernel started, so their
// stream's earlier work is done).
__device__ __forceinline__ bool call_start(const vp_ar_args &a, unsigned *epoch)
{
    return call_begin(a, epoch) && block_barrier(a, VP_AR_WAIT_START, *epoch);
}

// End barrier, then the epoch advance: nobody overwrites its input while a peer may still be reading
// it. A timed-out barrier leaves the epoch alone (the rank has failed; later calls return at once).
__device__ __forceinline__ void call_finish(const vp_ar_args &a, unsigned epoch)
{
    if (block_barrier(a, VP_AR_WAIT_END, epoch))
        call_end(a, epoch);
}

// ------------------------------------------------------------------------------- push lines

// Landing buffer of rank q: [parity 2][source world][push_lines] lines of 16 bytes; a line carries the
// 4 bf16 elements [4j, 4j+4) of one source. Parity = epoch & 1 double-buffers back-to-back calls: a
// rank can write call e+2 into a slot only after finishing call e+1, which needed every peer's e+1
// data, which a peer sends only after its call e (and its reads of that parity) completed.
__device__ __forceinline__ char *landing(const vp_ar_args &a, int owner, int parity, int source, long long line)
{
    return (char *)a.scratch[owner] + (((long long)parity * a.world + source) * a.push_lines + line) * 16;
}

__device__ bool wait_line(const vp_ar_args &a, const char *slot, unsigned epoch, int peer, long long line, u64 *w0,
                          u64 *w1)
{
    u64 t0 = 0;
    for (unsigned spin = 0;; spin++) {
        ld_volatile_v2u64(slot, w0, w1);
        if ((unsigned)(*w0 >> 32) == epoch && (unsigned)(*w1 >> 32) == epoch)
            return true;
        if ((spin & 63u) == 0u) {
            const u64 now = now_ns();
            if (spin == 0)
                t0 = now;
            else if (now - t0 > a.timeout_ns) {
                const unsigned seen = (unsigned)(*w0 >> 32) != epoch ? (unsigned)(*w0 >> 32) : (unsigned)(*w1 >> 32);
                record_timeout(a, peer, VP_AR_WAIT_DATA, epoch, seen, line, now - t0);
                return false;
            } else if (rank_failed(a)) {
                return false;
            }
        }
    }
}

__device__ __forceinline__ void add_word(float *acc, unsigned d)
{
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&d));
    acc[0] += f.x;
    acc[1] += f.y;
}

// Line j of this rank (its 4 bf16 elements as the pairs d0, d1), tagged with the epoch, stored into every
// peer's landing buffer; then every rank's copy of the line added into acc[0..3] in the fixed order
// 0..N-1, so the sum is bit-identical on every rank. False when a wait failed (timeout or a failed rank).
__device__ __forceinline__ bool push_line(const vp_ar_args &a, int parity, unsigned epoch, long long j, unsigned d0,
                                          unsigned d1, float *acc)
{
    const u64 tag = (u64)epoch << 32, w0 = tag | d0, w1 = tag | d1;
    for (int k = 1; k < a.world; k++)
        st_volatile_v2u64(landing(a, (a.rank + k) % a.world, parity, a.rank, j), w0, w1);
    bool ok = true;
    for (int r = 0; r < a.world && ok; r++) {
        u64 g0 = w0, g1 = w1;
        if (r != a.rank)
            ok = wait_line(a, landing(a, a.rank, parity, r, j), epoch, r, j, &g0, &g1);
        add_word(acc, (unsigned)g0);
        add_word(acc + 2, (unsigned)g1);
    }
    return ok;
}

} // namespace

#endif

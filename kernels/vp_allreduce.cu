// Custom allreduce kernels: one-shot, two-shot and push (bf16 sum, fp32 accumulation).
//
// Every rank sums the ranks' contributions in the fixed order 0, 1, ..., N-1 in fp32 and rounds once
// to bf16, so all ranks produce bit-identical output whatever the interconnect's timing.
//
// Synchronisation across ranks uses only plain stores and loads to mapped peer memory:
//   - barrier flags: block b of rank r stores the call's epoch into flag[b][r] of each peer's signal
//     block with st.release.sys and polls its own flag[b][p] with ld.acquire.sys. One writer per slot,
//     so no peer atomics are needed (PCIe peer atomics are not available on every platform; this is
//     the same scheme as vLLM/SGLang's custom allreduce, written here from its description);
//   - push: the flag travels inside each 8-byte word next to 4 bytes of data (NCCL's LL idea), and a
//     64-bit access is single-copy atomic, so a reader that sees the flag also sees the data.
// The epoch (call counter) lives in device memory and the kernels advance it, so a captured CUDA
// graph replays correctly. Every spin is bounded by %globaltimer: on timeout the first waiter records
// rank, peer, flag and values in a host-mapped error record and the kernel exits; later calls of the
// same rank see error_claim and return at once, so a queue of calls drains instead of each timing out.
#include "vp_allreduce.h"
#include "vp_cuda.cuh"

typedef unsigned long long u64;

// ------------------------------------------------------------------------------------ memory ops

__device__ __forceinline__ u64 now_ns()
{
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Flag store. The preceding bar.sync makes the whole block's earlier accesses visible to this thread
// (CTA scope); release at system scope is cumulative, so a peer that acquires the flag on another GPU
// (or another process on this GPU) sees them.
__device__ __forceinline__ void st_release_sys(unsigned *p, unsigned v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned ld_acquire_sys(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

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
    return *(volatile unsigned *)&a.signal[a.rank]->error_claim != 0u;
}

// First timeout of this rank wins the claim (a local atomic) and fills the host-mapped record; `code`
// is written last so the host never reads a half-written record.
__device__ void record_timeout(const vp_ar_args &a, int peer, int phase, unsigned want, unsigned seen,
                               long long index, u64 waited)
{
    if (atomicCAS(&a.signal[a.rank]->error_claim, 0u, 1u) != 0u)
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
    *epoch = *(volatile unsigned *)&a.signal[a.rank]->epoch + 1u;
    return true;
}

// End of every call: the last block to finish advances the epoch for the next call (local atomic).
__device__ __forceinline__ void call_end(const vp_ar_args &a, unsigned epoch)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        vp_ar_signal *self = a.signal[a.rank];
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

// --------------------------------------------------------------------------------------- one-shot

// Every rank reads all N inputs and writes the whole sum. grid = vp_ar_blocks_oneshot, block = 512.
template <bool VEC>
__global__ void __launch_bounds__(VP_AR_THREADS) oneshot_kernel(const vp_ar_args a)
{
    unsigned epoch;
    if (!call_start(a, &epoch))
        return;
    for_each_unit<VEC>(a.count, 0, unit_count<VEC>(a.count), [&](long long e0, int n) {
        float acc[8];
        sum_inputs<VEC>(acc, a, e0, n);
        store_unit<VEC>(a.out, e0, n, acc);
    });
    call_finish(a, epoch);
}

// --------------------------------------------------------------------------------------- two-shot

// Reduce-scatter then all-gather. The units are cut into N slices of `per` units; rank r sums slice r
// from every input (rank order) into its scratch and its output, then copies slice p from rank p's
// scratch. Both loops map slice-relative unit j to the same thread on every rank, so block b of this
// rank only reads scratch that block b of the owner wrote before its mid flag (barrier pairs by block).
// No end barrier: once every block has passed `mid`, every peer has finished reading our input; our
// scratch is next written after the next call's start barrier, which peers pass only after finishing.
template <bool VEC>
__global__ void __launch_bounds__(VP_AR_THREADS) twoshot_kernel(const vp_ar_args a)
{
    unsigned epoch;
    if (!call_start(a, &epoch))
        return;
    const long long units = unit_count<VEC>(a.count);
    const long long per = (units + a.world - 1) / a.world;
    auto slice_end = [&](long long lo) { return lo + per < units ? lo + per : units; };
    for_each_unit<VEC>(a.count, a.rank * per, slice_end(a.rank * per), [&](long long e0, int n) {
        float acc[8];
        sum_inputs<VEC>(acc, a, e0, n);
        store_unit<VEC>(a.scratch[a.rank], e0, n, acc);
        store_unit<VEC>(a.out, e0, n, acc);
    });
    if (!block_barrier(a, VP_AR_WAIT_MID, epoch))
        return;
    for (int k = 1; k < a.world; k++) {
        const int p = (a.rank + k) % a.world; // staggered so the peers are not all read in the same order
        for_each_unit<VEC>(a.count, p * per, slice_end(p * per),
                           [&](long long e0, int n) { copy_unit<VEC>(a.out, a.scratch[p], e0, n); });
    }
    call_end(a, epoch);
}

// ------------------------------------------------------------------------------------------- push

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

// grid = vp_ar_blocks_push, block = 512; thread handles lines j = first, first + stride, ...
// VEC: input and output are 8-byte aligned (one 8-byte load / store per full line).
template <bool VEC>
__global__ void __launch_bounds__(VP_AR_THREADS) push_kernel(const vp_ar_args a)
{
    unsigned epoch;
    if (!call_begin(a, &epoch))
        return;
    const int parity = (int)(epoch & 1u);
    const long long lines = (a.count + 3) / 4;
    const u64 tag = (u64)epoch << 32;
    bool ok = true;
    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; ok && j < lines;
         j += (long long)gridDim.x * blockDim.x) {
        const long long e0 = 4 * j;
        const int n = unit_len(e0, 4, a.count);
        const unsigned short *src = (const unsigned short *)a.in[a.rank] + e0;
        unsigned d[2] = {0u, 0u}; // elements 0,1 | 2,3; missing tail elements stay 0
        if (VEC && n == 4) {
            const uint2 v = *reinterpret_cast<const uint2 *>(src);
            d[0] = v.x;
            d[1] = v.y;
        } else {
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (k < n)
                    d[k >> 1] |= (unsigned)src[k] << (16 * (k & 1));
        }
        const u64 w0 = tag | d[0], w1 = tag | d[1];
        for (int k = 1; k < a.world; k++)
            st_volatile_v2u64(landing(a, (a.rank + k) % a.world, parity, a.rank, j), w0, w1);
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        for (int r = 0; r < a.world && ok; r++) { // fixed order: bit-identical on every rank
            u64 g0 = w0, g1 = w1;
            if (r != a.rank)
                ok = wait_line(a, landing(a, a.rank, parity, r, j), epoch, r, j, &g0, &g1);
            add_word(acc, (unsigned)g0);
            add_word(acc + 2, (unsigned)g1);
        }
        if (!ok)
            break;
        bf16 *dst = (bf16 *)a.out + e0;
        if (VEC && n == 4) {
            uint2 v;
            *reinterpret_cast<__nv_bfloat162 *>(&v.x) = __floats2bfloat162_rn(acc[0], acc[1]);
            *reinterpret_cast<__nv_bfloat162 *>(&v.y) = __floats2bfloat162_rn(acc[2], acc[3]);
            *reinterpret_cast<uint2 *>(dst) = v;
        } else {
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (k < n)
                    dst[k] = __float2bfloat16(acc[k]);
        }
    }
    call_end(a, epoch);
}

// ------------------------------------------------------------------------------------- all-gather

// out[r * count + i] = in[r][i]: every rank copies every input through the mappings (one-shot
// pattern, same barriers; plain copies, so the result is trivially identical on every rank).
template <bool VEC>
__global__ void __launch_bounds__(VP_AR_THREADS) allgather_kernel(const vp_ar_args a)
{
    unsigned epoch;
    if (!call_start(a, &epoch))
        return;
    for_each_unit<VEC>(a.count, 0, unit_count<VEC>(a.count), [&](long long e0, int n) {
        for (int k = 0; k < a.world; k++) {
            const int r = (a.rank + k) % a.world;
            copy_unit<VEC>((bf16 *)a.out + r * a.count, a.in[r], e0, n);
        }
    });
    call_finish(a, epoch);
}

// ------------------------------------------------------------------------------------------ probe

// One block, thread p: write our probe word into peer p's signal and read peer p's probe_src, both
// through the IPC mapping; the host compares after a barrier (a real write and read per pair).
__global__ void probe_kernel(const vp_ar_args a)
{
    const int p = (int)threadIdx.x;
    if (p >= a.world)
        return;
    vp_ar_signal *self = a.signal[a.rank];
    if (p == a.rank) {
        self->probe_seen[p] = self->probe_src;
        return;
    }
    st_release_sys(&a.signal[p]->probe_in[a.rank], vp_ar_probe_value(a.rank, p));
    self->probe_seen[p] = ld_acquire_sys(&a.signal[p]->probe_src);
}

// --------------------------------------------------------------------------------------- launchers

static int clamp_blocks(long long work_items)
{
    long long b = (work_items + VP_AR_THREADS - 1) / VP_AR_THREADS;
    return (int)(b < 1 ? 1 : b > VP_AR_MAX_BLOCKS ? VP_AR_MAX_BLOCKS : b);
}

// Grids depend only on (count, world): every rank launches the same grid, which the per-block
// barrier pairing and the two-shot slice mapping rely on.
extern "C" int vp_ar_blocks_oneshot(long long count, int world)
{
    (void)world;
    return clamp_blocks((count + 7) / 8);
}

extern "C" int vp_ar_blocks_twoshot(long long count, int world)
{
    const long long units = (count + 7) / 8;
    return clamp_blocks((units + world - 1) / world);
}

extern "C" int vp_ar_blocks_push(long long count, int world)
{
    (void)world;
    return clamp_blocks((count + 3) / 4);
}

extern "C" size_t vp_ar_twoshot_scratch_bytes(long long max_count)
{
    return (size_t)((max_count + 7) / 8 * 16);
}

extern "C" long long vp_ar_push_lines(long long max_count) { return (max_count + 3) / 4; }

extern "C" size_t vp_ar_push_scratch_bytes(long long max_count, int world)
{
    return (size_t)(2 * world * vp_ar_push_lines(max_count) * 16);
}

static bool valid(const vp_ar_args *a)
{
    if (!a || a->world < 1 || a->world > VP_AR_MAX_RANKS || a->rank < 0 || a->rank >= a->world || a->count < 0 ||
        !a->error || !a->out)
        return false;
    for (int r = 0; r < a->world; r++)
        if (!a->signal[r])
            return false;
    return true;
}

// Vector path when every rank's input (and scratch) is 16-byte aligned: the same answer on every rank,
// since all ranks pass the same registered buffers at the same offsets.
static bool all_aligned(const vp_ar_args *a, bool scratch, unsigned mask)
{
    bool ok = true;
    for (int r = 0; r < a->world; r++) {
        ok = ok && ((uintptr_t)a->in[r] & mask) == 0;
        if (scratch)
            ok = ok && ((uintptr_t)a->scratch[r] & mask) == 0;
    }
    return ok;
}

// Every collective launches the same grid on every rank; the 16-byte vector path needs aligned buffers.
// `blocks` is evaluated only for a valid, non-empty call.
typedef void (*ar_kernel_fn)(const vp_ar_args);

static int launch(const vp_ar_args *a, void *stream, int (*blocks)(long long, int), bool vec,
                  ar_kernel_fn vec_kernel, ar_kernel_fn scalar_kernel)
{
    if (a->count == 0)
        return 0;
    (vec ? vec_kernel : scalar_kernel)<<<blocks(a->count, a->world), VP_AR_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int vp_allreduce_oneshot(const vp_ar_args *a, void *stream)
{
    if (!valid(a))
        return (int)cudaErrorInvalidValue;
    return launch(a, stream, vp_ar_blocks_oneshot, all_aligned(a, false, 15u), oneshot_kernel<true>,
                  oneshot_kernel<false>);
}

extern "C" int vp_allreduce_twoshot(const vp_ar_args *a, void *stream)
{
    if (!valid(a))
        return (int)cudaErrorInvalidValue;
    return launch(a, stream, vp_ar_blocks_twoshot, all_aligned(a, true, 15u), twoshot_kernel<true>,
                  twoshot_kernel<false>);
}

extern "C" int vp_allreduce_push(const vp_ar_args *a, void *stream)
{
    if (!valid(a) || a->push_lines < (a->count + 3) / 4)
        return (int)cudaErrorInvalidValue;
    // Only the local input and output matter for the vector path; the landing lines are 16-byte slots.
    const bool vec = (((uintptr_t)a->in[a->rank] | (uintptr_t)a->out) & 7u) == 0;
    return launch(a, stream, vp_ar_blocks_push, vec, push_kernel<true>, push_kernel<false>);
}

extern "C" int vp_allgather_oneshot(const vp_ar_args *a, void *stream)
{
    if (!valid(a))
        return (int)cudaErrorInvalidValue;
    return launch(a, stream, vp_ar_blocks_oneshot, all_aligned(a, false, 15u), allgather_kernel<true>,
                  allgather_kernel<false>);
}

// The grid depends only on the block's size, the same on every rank; the vector path may differ per
// rank (the shifted inputs' alignment), which one-shot allows: it has no slices to agree on.
extern "C" int vp_reduce_scatter_oneshot(const vp_ar_args *a, void *stream)
{
    if (!valid(a) || a->count % a->world != 0)
        return (int)cudaErrorInvalidValue;
    vp_ar_args b = *a;
    b.count = a->count / a->world;
    for (int r = 0; r < a->world; r++)
        b.in[r] = (const bf16 *)a->in[r] + a->rank * b.count;
    return launch(&b, stream, vp_ar_blocks_oneshot, all_aligned(&b, false, 15u), oneshot_kernel<true>,
                  oneshot_kernel<false>);
}

extern "C" int vp_ar_probe(const vp_ar_args *a, void *stream)
{
    if (!valid(a))
        return (int)cudaErrorInvalidValue;
    probe_kernel<<<1, 32, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

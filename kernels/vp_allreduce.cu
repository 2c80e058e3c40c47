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
#include "vp_ar_device.cuh"

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
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        ok = push_line(a, parity, epoch, j, d[0], d[1], acc);
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
        !a->error || !a->self || !a->out)
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

/* The link probe's kernels (kernels/vp_links.cu) on one GPU: the pointer chase visits every node of a
 * chain and lands where a host walk of the same chain lands (device and host-mapped memory); a flag
 * ping-pong between two single-thread kernels on two streams finishes and gives a plausible latency
 * (flags in host-mapped memory, then in device memory); the store kernel writes exactly its pattern
 * into several targets (device and host-mapped) and the load kernel reads every word (their sum); the
 * spin and stamp kernels that the launch costs rest on keep time. Peer (IPC) paths need two processes
 * and are exercised by `vpsim probe` itself. */
#include "kt.h"
#include "../../kernels/vp_links.h"
#include "../../sim/exec/exec_links_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_HOPS 256

static unsigned walk(const unsigned *next, unsigned from, int hops)
{
    for (int h = 0; h < hops; h++)
        from = next[from];
    return from;
}

/* Chase `hops` hops on line `line` of a chain in `chain` (device-visible), result through mapped memory. */
static int chase(const void *chain, int hops, int line, vp_links_res *res, const vp_links_res *res_dev)
{
    memset(res, 0, sizeof(*res));
    res->aux = ~0ull;
    int ok = kt_launch_ok(vp_links_chase(chain, hops, EXEC_LINKS_NODE_BYTES, (long long)line * EXEC_LINKS_LINE_BYTES,
                                         (vp_links_res *)res_dev, kt_stream),
                          "vp_links_chase");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    return ok;
}

static void run_chase(vp_links_res *res, vp_links_res *res_dev)
{
    const size_t bytes = (size_t)KT_HOPS * EXEC_LINKS_NODE_BYTES;
    unsigned next[KT_HOPS];
    exec_links_chain(next, KT_HOPS, 42);
    char *img = kt_malloc(bytes);
    memset(img, 0xff, bytes); /* a hop off the chain's lines would read 0xffffffff and fault or mismatch */
    exec_links_chain_fill(img, next, KT_HOPS);
    void *dev = kt_dev_malloc(bytes), *host = NULL, *host_dev = NULL;
    CUDA_CHECK(cudaMemcpy(dev, img, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
    memcpy(host, img, bytes);
    CUDA_CHECK(cudaHostGetDevicePointer(&host_dev, host, 0));
    const void *where[2] = {dev, host_dev};
    const char *names[2] = {"chase_device", "chase_host"};
    for (int w = 0; w < 2; w++) {
        int ok = 1;
        char info[160] = "";
        double us = 0;
        /* A full cycle returns to node 0 on every line; a partial walk lands where the host's lands. */
        for (int line = 0; line < EXEC_LINKS_CHAIN_LINES && ok; line += EXEC_LINKS_CHAIN_LINES - 1) {
            ok = chase(where[w], KT_HOPS, line, res, res_dev) && res->aux == 0 && res->ns > 0;
            us = (double)res->ns / 1e3 / KT_HOPS;
            if (ok)
                ok = chase(where[w], 101, line, res, res_dev) && res->aux == walk(next, 0, 101);
            if (!ok)
                snprintf(info, sizeof(info), "line=%d reached=%llu want=%u", line, res->aux, walk(next, 0, 101));
        }
        if (ok)
            snprintf(info, sizeof(info), "us_per_hop=%.3f", us);
        kt_report("links", names[w], "hops256_stride4096", ok && us > 0 && us < 100, 0.0, NULL, 0.0, info);
    }
    CUDA_CHECK(cudaFree(dev));
    CUDA_CHECK(cudaFreeHost(host));
    free(img);
}

/* Responder first (it waits), then the initiator, on two streams: both single-thread kernels are
 * resident together on one GPU. */
static void run_pingpong(int host_flags)
{
    const int rounds = 200;
    unsigned *flags = NULL, *flags_dev = NULL;
    vp_links_res *res = NULL, *res_dev = NULL;
    if (host_flags) {
        CUDA_CHECK(cudaHostAlloc((void **)&flags, 4096, cudaHostAllocMapped));
        memset(flags, 0, 4096);
        CUDA_CHECK(cudaHostGetDevicePointer((void **)&flags_dev, flags, 0));
    } else {
        flags_dev = kt_dev_malloc(4096);
        CUDA_CHECK(cudaMemset(flags_dev, 0, 4096));
    }
    CUDA_CHECK(cudaHostAlloc((void **)&res, 2 * sizeof(*res), cudaHostAllocMapped));
    memset(res, 0, 2 * sizeof(*res));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&res_dev, res, 0));
    cudaStream_t other;
    CUDA_CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    CUDA_CHECK(cudaDeviceSynchronize());
    const unsigned base = 1000;
    unsigned *a_in = flags_dev, *b_in = flags_dev + 32; /* each on its own 128-byte line */
    int ok = kt_launch_ok(vp_links_pingpong(a_in, b_in, 0, base, rounds, 2000000000ull, &res_dev[1], other),
                          "vp_links_pingpong responder") &&
             kt_launch_ok(vp_links_pingpong(b_in, a_in, 1, base, rounds, 2000000000ull, &res_dev[0], kt_stream),
                          "vp_links_pingpong initiator");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    CUDA_CHECK(cudaStreamSynchronize(other));
    const double one_way = (double)res[0].ns / 1e3 / rounds / 2.0;
    /* Both finished, the echo of the last round came back, and one-way is between 10 ns and 100 us. */
    ok = ok && res[0].status == 0 && res[1].status == 0 && res[0].aux == base + rounds + 1u && one_way > 0.01 &&
         one_way < 100.0;
    char info[160];
    snprintf(info, sizeof(info), "one_way_us=%.3f status=%u/%u last_seen=%llu", one_way, res[0].status,
             res[1].status, res[0].aux);
    kt_report("links", host_flags ? "pingpong_host_flags" : "pingpong_device_flags", "rounds200", ok, 0.0, NULL, 0.0,
              info);
    CUDA_CHECK(cudaStreamDestroy(other));
    CUDA_CHECK(cudaFreeHost(res));
    if (host_flags)
        CUDA_CHECK(cudaFreeHost(flags));
    else
        CUDA_CHECK(cudaFree(flags_dev));
}

/* The sum (mod 2^32) of the store kernel's pattern, which (unlike an XOR over an even count) depends on
 * the seed. */
static unsigned pattern_sum(long long words, unsigned seed)
{
    unsigned x = 0;
    for (long long i = 0; i < words; i++)
        x += (unsigned)i ^ seed;
    return x;
}

typedef struct bw_ctx {
    vp_links_targets t;
    long long bytes;
    unsigned *sink;
    int store;
} bw_ctx;

static int bw_launch(void *p)
{
    bw_ctx *c = p;
    return c->store ? vp_links_store(c->t, c->bytes, 7u, 528, kt_stream)
                    : vp_links_load(c->t, c->bytes, 528, c->sink, kt_stream);
}

/* Store into two device buffers and one host-mapped buffer at once, each word checked; load them back,
 * the sum of every word read checked. */
static void run_bandwidth(const kt_opts *o)
{
    const long long bytes = (1ll << 20) + 48; /* not a multiple of the grid's stride: the tail */
    const long long words = bytes / 4;
    void *d0 = kt_dev_malloc((size_t)bytes), *d1 = kt_dev_malloc((size_t)bytes), *h = NULL, *h_dev = NULL;
    CUDA_CHECK(cudaHostAlloc(&h, (size_t)bytes, cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer(&h_dev, h, 0));
    vp_links_targets t = {.p = {d0, d1, h_dev}, .n = 3};
    const unsigned seed = 0x5eedu;
    int ok = kt_launch_ok(vp_links_store(t, bytes, seed, 100, kt_stream), "vp_links_store");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    unsigned *got = kt_malloc((size_t)bytes);
    long long bad = -1;
    for (int k = 0; k < 3 && ok && bad < 0; k++) {
        if (k < 2)
            CUDA_CHECK(cudaMemcpy(got, t.p[k], (size_t)bytes, cudaMemcpyDeviceToHost));
        else
            memcpy(got, h, (size_t)bytes);
        for (long long i = 0; i < words && bad < 0; i++)
            if (got[i] != ((unsigned)i ^ seed))
                bad = (long long)k * words + i;
    }
    char info[96];
    snprintf(info, sizeof(info), "targets=3 first_bad=%lld", bad);
    kt_report("links", "store_pattern", "3x1048624B", ok && bad < 0, 0.0, NULL, 0.0, info);

    /* Different contents per target, so that a target left unread changes the sum: rewrite d1 and h with other seeds. */
    vp_links_targets one = {.p = {d1}, .n = 1}, other = {.p = {h_dev}, .n = 1};
    unsigned *sink = kt_dev_malloc(sizeof(unsigned)), sum = 0;
    CUDA_CHECK(cudaMemset(sink, 0, sizeof(unsigned)));
    ok = kt_launch_ok(vp_links_store(one, bytes, 99u, 64, kt_stream), "vp_links_store") &&
         kt_launch_ok(vp_links_store(other, bytes, 123u, 64, kt_stream), "vp_links_store") &&
         kt_launch_ok(vp_links_load(t, bytes, 96, sink, kt_stream), "vp_links_load");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    CUDA_CHECK(cudaMemcpy(&sum, sink, sizeof(sum), cudaMemcpyDeviceToHost));
    const unsigned want = pattern_sum(words, seed) + pattern_sum(words, 99u) + pattern_sum(words, 123u);
    snprintf(info, sizeof(info), "sum=0x%08x want=0x%08x", sum, want);
    kt_report("links", "load_every_word", "3x1048624B", ok && sum == want, 0.0, NULL, 0.0, info);

    /* Local bandwidth, for scale (the probe's figures are peer and host paths). */
    const long long big = o->quick ? (16ll << 20) : (256ll << 20);
    void *b = kt_dev_malloc((size_t)big);
    bw_ctx c = {.t = {.p = {b}, .n = 1}, .bytes = big, .sink = sink};
    for (c.store = 1; c.store >= 0; c.store--) {
        kt_timing tm;
        kt_time(o, bw_launch, &c, &tm);
        kt_report("links", c.store ? "store_local_bw" : "load_local_bw", big >= (256ll << 20) ? "256MiB" : "16MiB",
                  1, 0.0, &tm, (double)big, "");
    }
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(sink));
    CUDA_CHECK(cudaFree(d0));
    CUDA_CHECK(cudaFree(d1));
    CUDA_CHECK(cudaFreeHost(h));
    free(got);
}

/* The spin kernel lasts at least what it was asked; stamps of back-to-back kernels never go back. */
static void run_launch_kernels(void)
{
    enum { N = 32 };
    unsigned long long *st = kt_dev_malloc(N * sizeof(*st)), host[N];
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    CUDA_CHECK(cudaEventRecord(a, kt_stream));
    int ok = kt_launch_ok(vp_links_spin(200000ull, kt_stream), "vp_links_spin");
    CUDA_CHECK(cudaEventRecord(b, kt_stream));
    for (int i = 0; i < N && ok; i++)
        ok = kt_launch_ok(vp_links_stamp(st, i, kt_stream), "vp_links_stamp");
    ok = ok && kt_launch_ok(vp_links_empty(kt_stream), "vp_links_empty");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    CUDA_CHECK(cudaMemcpy(host, st, sizeof(host), cudaMemcpyDeviceToHost));
    int mono = 1;
    for (int i = 1; i < N; i++)
        mono = mono && host[i] >= host[i - 1] && host[i - 1] > 0;
    const double period_us = (double)(host[N - 1] - host[0]) / 1e3 / (N - 1);
    char info[96];
    snprintf(info, sizeof(info), "spin_ms=%.3f stamp_period_us=%.3f", ms, period_us);
    kt_report("links", "spin_and_stamps", "spin200us_n32", ok && ms >= 0.2 && ms < 50 && mono, 0.0, NULL, 0.0, info);
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    CUDA_CHECK(cudaFree(st));
}

int kt_run_links(const kt_opts *o)
{
    vp_links_res *res = NULL, *res_dev = NULL;
    CUDA_CHECK(cudaHostAlloc((void **)&res, sizeof(*res), cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&res_dev, res, 0));
    if (kt_selected(o, "links", "chase"))
        run_chase(res, res_dev);
    if (kt_selected(o, "links", "pingpong_host_flags"))
        run_pingpong(1);
    if (kt_selected(o, "links", "pingpong_device_flags"))
        run_pingpong(0);
    if (kt_selected(o, "links", "store_pattern"))
        run_bandwidth(o);
    if (kt_selected(o, "links", "spin_and_stamps"))
        run_launch_kernels();
    CUDA_CHECK(cudaFreeHost(res));
    return 0;
}

/* Test-data kernels and the collective check: fill_pattern, fill_poison, fill_random, check_collective
 * (allreduce and all-gather layouts, a corrupted element, a poisoned buffer, inside a CUDA graph), and
 * the delay kernel's duration. */
#include "kt.h"
#include "../../kernels/vp_pattern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t *download_raw(const void *dev, long long n)
{
    uint16_t *h = kt_malloc((size_t)n * 2);
    CUDA_CHECK(cudaMemcpy(h, dev, (size_t)n * 2, cudaMemcpyDeviceToHost));
    return h;
}

static void run_fill_pattern(void)
{
    const long long n = 1000003; /* not a multiple of the block: the grid-stride tail */
    void *d = kt_dev_malloc((size_t)n * 2);
    int ok = kt_launch_ok(vp_fill_pattern(d, n, 5, 3, kt_stream), "vp_fill_pattern");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    long long bad = -1;
    if (ok) {
        uint16_t *h = download_raw(d, n);
        for (long long i = 0; i < n && bad < 0; i++)
            if (kt_bf2f(h[i]) != vp_pattern_value(5, i, 3))
                bad = i;
        free(h);
        ok = bad < 0;
    }
    char info[64];
    snprintf(info, sizeof info, "first_bad=%lld", bad);
    kt_report("fill", "pattern", "n1000003", ok, 0.0, NULL, 0.0, info);
    CUDA_CHECK(cudaFree(d));
}

static void run_fill_poison_random(const kt_opts *o)
{
    const long long n = 1 << 20;
    void *a = kt_dev_malloc((size_t)n * 2), *b = kt_dev_malloc((size_t)n * 2);
    int ok = kt_launch_ok(vp_fill_poison(a, n, kt_stream), "vp_fill_poison");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    uint16_t *h = download_raw(a, n);
    for (long long i = 0; i < n && ok; i++)
        ok = h[i] == 0x7fc1;
    free(h);
    kt_report("fill", "poison", "n1048576", ok, 0.0, NULL, 0.0, "bits=0x7fc1");

    /* Same seed twice -> identical; values in [-1, 1); mean and spread of a uniform distribution. */
    ok = kt_launch_ok(vp_fill_random(a, n, o->seed, kt_stream), "vp_fill_random") &&
         kt_launch_ok(vp_fill_random(b, n, o->seed, kt_stream), "vp_fill_random");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    uint16_t *ha = download_raw(a, n), *hb = download_raw(b, n);
    double sum = 0.0, sq = 0.0, lo = 1.0, hi = -1.0;
    for (long long i = 0; i < n && ok; i++) {
        const double v = kt_bf2f(ha[i]);
        ok = ha[i] == hb[i] && v >= -1.0 && v < 1.0;
        sum += v;
        sq += v * v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    ok = ok && fabs(mean) < 0.01 && fabs(var - 1.0 / 3.0) < 0.01 && lo < -0.99 && hi > 0.99;
    char info[96];
    snprintf(info, sizeof info, "mean=%.4f,var=%.4f,min=%.4f,max=%.4f", mean, var, lo, hi);
    kt_report("fill", "random", "n1048576", ok, 0.0, NULL, 0.0, info);
    free(ha);
    free(hb);
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
}

/* Builds the buffer a correct collective leaves behind, on the host, from vp_pattern_value. */
static void *expected_buffer(long long n, int ranks, int salt, int gather)
{
    uint16_t *h = kt_malloc((size_t)n * 2);
    const long long seg = gather ? n / ranks : 0;
    for (long long i = 0; i < n; i++) {
        float want = 0.0f;
        if (gather)
            want = vp_pattern_value((int)(i / seg), i % seg, salt);
        else
            for (int r = 0; r < ranks; r++)
                want += vp_pattern_value(r, i, salt);
        h[i] = kt_f2bf(want);
    }
    void *d = kt_dev_malloc((size_t)n * 2);
    CUDA_CHECK(cudaMemcpy(d, h, (size_t)n * 2, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static long long check(const void *buf, long long n, int ranks, int salt, int gather, long long *first_bad_dev,
                       int *ok)
{
    long long got = -2;
    *ok = *ok && kt_launch_ok(vp_check_collective(buf, n, ranks, salt, gather, first_bad_dev, kt_stream),
                              "vp_check_collective");
    CUDA_CHECK(cudaMemcpyAsync(&got, first_bad_dev, sizeof got, cudaMemcpyDeviceToHost, kt_stream));
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    return got;
}

typedef struct check_ctx {
    void *buf;
    long long n, *first_bad;
    int ranks, salt, gather;
} check_ctx;

static int launch_check(void *ctx)
{
    check_ctx *c = ctx;
    return vp_check_collective(c->buf, c->n, c->ranks, c->salt, c->gather, c->first_bad, kt_stream);
}

static void run_check(const kt_opts *o, int ranks, int gather)
{
    const long long n = 3LL * 7168 * 8; /* an all-gather of 8 ranks' [3 x 7168]; also a large allreduce */
    const int salt = 7;
    long long *first_bad = kt_dev_malloc(sizeof(long long));
    void *buf = expected_buffer(n, ranks, salt, gather);
    int ok = 1;
    const long long clean = check(buf, n, ranks, salt, gather, first_bad, &ok);
    /* Corrupt two elements: the first one must be reported. */
    const uint16_t wrong = kt_f2bf(0.5f); /* expected values are integers */
    CUDA_CHECK(cudaMemcpy((uint16_t *)buf + 4321, &wrong, 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy((uint16_t *)buf + 20000, &wrong, 2, cudaMemcpyHostToDevice));
    const long long corrupt = check(buf, n, ranks, salt, gather, first_bad, &ok);
    /* Poisoned (a collective that wrote nothing): element 0 is bad. */
    CUDA_CHECK(vp_fill_poison(buf, n, kt_stream));
    const long long poisoned = check(buf, n, ranks, salt, gather, first_bad, &ok);

    /* Inside a graph, as the executor runs it: capture, then replay on a clean buffer. */
    CUDA_CHECK(cudaFree(buf));
    buf = expected_buffer(n, ranks, salt, gather);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(kt_stream, cudaStreamCaptureModeGlobal));
    const int rc = vp_check_collective(buf, n, ranks, salt, gather, first_bad, kt_stream);
    CUDA_CHECK(cudaStreamEndCapture(kt_stream, &graph));
    ok = ok && kt_launch_ok(rc, "vp_check_collective (captured)");
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const long long junk = 12345;
    CUDA_CHECK(cudaMemcpy(first_bad, &junk, sizeof junk, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaGraphLaunch(exec, kt_stream));
    long long in_graph = -2;
    CUDA_CHECK(cudaMemcpyAsync(&in_graph, first_bad, sizeof in_graph, cudaMemcpyDeviceToHost, kt_stream));
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));

    ok = ok && clean == -1 && corrupt == 4321 && poisoned == 0 && in_graph == -1;
    kt_timing t = {0};
    check_ctx c = {buf, n, first_bad, ranks, salt, gather};
    if (ok)
        kt_time(o, launch_check, &c, &t);
    char name[32], shape[48], info[96];
    snprintf(name, sizeof name, "%s-r%d", gather ? "allgather" : "allreduce", ranks);
    snprintf(shape, sizeof shape, "n%lld_ranks%d", n, ranks);
    snprintf(info, sizeof info, "clean=%lld,corrupt=%lld,poisoned=%lld,graph=%lld", clean, corrupt, poisoned, in_graph);
    kt_report("check", name, shape, ok, 0.0, &t, 2.0 * (double)n, info);
    CUDA_CHECK(cudaFree(buf));
    CUDA_CHECK(cudaFree(first_bad));
}

typedef struct delay_ctx {
    unsigned long long ns;
} delay_ctx;

static int launch_delay(void *ctx)
{
    return vp_launch_delay(((delay_ctx *)ctx)->ns, kt_stream);
}

/* The delay must last at least its nominal time and not much more (launch overhead aside). */
static void run_delay(const kt_opts *o)
{
    delay_ctx c = {200000}; /* 200 us: about what NCCL takes per 42 KB allreduce on the PCIe box */
    kt_opts timed = *o;
    timed.bench = 1;
    timed.iters = o->iters < 10 ? 10 : o->iters;
    kt_timing t;
    kt_time(&timed, launch_delay, &c, &t);
    const int ok = t.median_us >= 199.0 && t.median_us < 260.0;
    char info[64];
    snprintf(info, sizeof info, "nominal_us=%.0f", c.ns / 1e3);
    kt_report("delay", "200us", "ns200000", ok, fabs(t.median_us - 200.0) / 200.0, &t, 0.0, info);
}

int kt_run_fill(const kt_opts *o)
{
    if (kt_selected(o, "fill", "pattern"))
        run_fill_pattern();
    if (kt_selected(o, "fill", "poison-random"))
        run_fill_poison_random(o);
    static const int ranks[] = {1, 2, 8, 16};
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
        if (kt_selected(o, "check", "allreduce"))
            run_check(o, ranks[i], 0);
        if (kt_selected(o, "check", "allgather"))
            run_check(o, ranks[i], 1);
    }
    if (kt_selected(o, "delay", "200us"))
        run_delay(o);
    return 0;
}

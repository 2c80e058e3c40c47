/* Shared pieces of vpsim-kernel-tests: error checks, bf16 on the host, comparison, timing, reporting. */
#include "kt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cudaStream_t kt_stream;
int kt_failures, kt_cases;

void kt_cuda_check(cudaError_t err, const char *expr, const char *file, int line)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "%s:%d: CUDA error %d (%s): %s\n  in %s\n", file, line, (int)err, cudaGetErrorName(err),
            cudaGetErrorString(err), expr);
    exit(2);
}

uint16_t kt_f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float kt_bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float kt_round_bf(float f)
{
    return kt_bf2f(kt_f2bf(f));
}

void *kt_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "vpsim-kernel-tests: out of host memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

void *kt_dev_malloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 16));
    return p;
}

float *kt_download_bf(const void *dev, long long n)
{
    uint16_t *raw = kt_malloc((size_t)n * 2);
    CUDA_CHECK(cudaMemcpy(raw, dev, (size_t)n * 2, cudaMemcpyDeviceToHost));
    float *f = kt_malloc((size_t)n * sizeof(float));
    for (long long i = 0; i < n; i++)
        f[i] = kt_bf2f(raw[i]);
    free(raw);
    return f;
}

void *kt_dev_random(long long n, unsigned long long seed, float **host)
{
    void *d = kt_dev_malloc((size_t)n * 2);
    CUDA_CHECK(vp_fill_random(d, n, seed, kt_stream));
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    if (host)
        *host = kt_download_bf(d, n);
    return d;
}

int kt_compare(const float *got, const float *want, long long n, double floor, double tol, double *max_err)
{
    double worst = 0.0;
    for (long long i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - (double)want[i]) / (fabs((double)want[i]) + floor);
        if (!(e <= worst)) /* also catches NaN */
            worst = isnan(e) ? INFINITY : e;
    }
    *max_err = worst;
    return worst <= tol;
}

int kt_launch_ok(int rc, const char *what)
{
    if (rc == 0)
        return 1;
    fprintf(stderr, "vpsim-kernel-tests: %s returned %d (%s)\n", what, rc, cudaGetErrorString((cudaError_t)rc));
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentile of sorted samples with linear interpolation between ranks. */
static double percentile(const double *s, int n, double q)
{
    const double pos = q * (n - 1);
    const int lo = (int)pos;
    const int hi = lo + 1 < n ? lo + 1 : lo;
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

void kt_time(const kt_opts *o, kt_launch_fn fn, void *ctx, kt_timing *t)
{
    static void *flush, *sink;
    static size_t flush_bytes;
    memset(t, 0, sizeof *t);
    if (!o->bench || o->iters < 1)
        return;
    if (!flush) {
        /* A buffer several times the L2 evicts the op's inputs, so every timed run reads them from DRAM,
         * as a server does between layers. Written (memset), it leaves the L2 full of dirty lines that
         * the op's first reads must write back, which a server's attention, after GEMMs that read
         * weights, does not pay; read (vp_read_sweep), it leaves clean lines (--flush clean). */
        int dev, l2 = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
        flush_bytes = (size_t)4 * (size_t)l2;
        if (flush_bytes < ((size_t)256 << 20))
            flush_bytes = (size_t)256 << 20;
        flush = kt_dev_malloc(flush_bytes);
        sink = kt_dev_malloc(16);
        CUDA_CHECK(cudaMemsetAsync(flush, 0x5a, flush_bytes, kt_stream));
    }
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < o->warmup; i++)
        CUDA_CHECK(fn(ctx));
    double *samples = kt_malloc((size_t)o->iters * sizeof(double));
    for (int i = 0; i < o->iters; i++) {
        if (o->flush_clean)
            CUDA_CHECK(vp_read_sweep(flush, flush_bytes, sink, kt_stream));
        else
            CUDA_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, kt_stream));
        CUDA_CHECK(cudaEventRecord(start, kt_stream));
        CUDA_CHECK(fn(ctx));
        CUDA_CHECK(cudaEventRecord(stop, kt_stream));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        samples[i] = (double)ms * 1e3;
    }
    qsort(samples, (size_t)o->iters, sizeof(double), cmp_double);
    t->median_us = percentile(samples, o->iters, 0.5);
    t->p10_us = percentile(samples, o->iters, 0.1);
    t->p90_us = percentile(samples, o->iters, 0.9);
    t->valid = 1;
    free(samples);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
}

int kt_selected(const kt_opts *o, const char *kernel, const char *name)
{
    if (o->kernel && strcmp(o->kernel, "all") != 0 && strcmp(o->kernel, kernel) != 0)
        return 0;
    return !o->filter || strstr(name, o->filter) != NULL;
}

void kt_report(const char *kernel, const char *name, const char *shape, int ok, double max_err, const kt_timing *t,
               double bytes, const char *info)
{
    kt_cases++;
    if (!ok)
        kt_failures++;
    printf("kernel=%s case=%s shape=%s ok=%d max_err=%.3e", kernel, name, shape, ok ? 1 : 0, max_err);
    if (t && t->valid)
        printf(" median_us=%.2f p10_us=%.2f p90_us=%.2f gbps=%.1f", t->median_us, t->p10_us, t->p90_us,
               t->median_us > 0 ? bytes / (t->median_us * 1e3) : 0.0);
    else
        printf(" median_us=- p10_us=- p90_us=- gbps=-");
    printf(" info=%s\n", info && *info ? info : "-");
    fflush(stdout);
}

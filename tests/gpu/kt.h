/* vpsim-kernel-tests: self-validating tests and benchmarks of the kernels in kernels/ (llm.c style:
 * CPU reference in fp32/fp64, validate within bf16 tolerance before timing, then time with events,
 * L2 flushed before every timed run). One output line per case:
 *   kernel=NAME case=NAME shape=... ok=0|1 max_err=E median_us=T p10_us=T p90_us=T gbps=B info=...
 * where gbps = (bytes read + bytes written by the op, counted once) / median time. */
#ifndef VPSIM_KT_H
#define VPSIM_KT_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "../../kernels/vp_kernels.h"

/* Every CUDA runtime call goes through this: file:line, the call and the error string, then exit 2. */
#define CUDA_CHECK(call) kt_cuda_check((cudaError_t)(call), #call, __FILE__, __LINE__)
void kt_cuda_check(cudaError_t err, const char *expr, const char *file, int line);

typedef struct kt_opts {
    int iters, warmup;
    int bench;            /* 0: validate only (timing fields print as "-") */
    int quick;            /* skip the largest cases */
    const char *kernel;   /* NULL or "all": every family */
    const char *filter;   /* NULL or a substring of the case name */
    unsigned long long seed;
    /* Attention launch settings (vp_attention_set_tile / _set_tuning; 0 = automatic): the command line's
     * one setting, or --attn-sweep's list, each validated and timed against one reference per case. */
    int flush_clean; /* 1: the L2 flush reads a buffer (clean lines), 0: writes it (dirty lines) */
    int attn_n;
    int attn_cfg[32][4]; /* keys per tile, stages, splits, kernel (vp_attention_set_kernel) */
} kt_opts;

extern cudaStream_t kt_stream;
extern int kt_failures, kt_cases;

/* bf16 on the host: round to nearest even, as __float2bfloat16 does. */
uint16_t kt_f2bf(float f);
float kt_bf2f(uint16_t h);
/* Round a float through bf16 (what the GPU stores). */
float kt_round_bf(float f);

void *kt_malloc(size_t bytes);              /* host, exits on failure */
void *kt_dev_malloc(size_t bytes);          /* device */
/* Device buffer of n bf16 filled by vp_fill_random(seed), plus its host copy as float (caller frees). */
void *kt_dev_random(long long n, unsigned long long seed, float **host);
float *kt_download_bf(const void *dev, long long n); /* device bf16 -> host float */

/* Compare got with want: err_i = |got - want| / (|want| + floor); ok when max err <= tol. */
int kt_compare(const float *got, const float *want, long long n, double floor, double tol, double *max_err);

typedef int (*kt_launch_fn)(void *ctx);
typedef struct kt_timing {
    double median_us, p10_us, p90_us;
    int valid;
} kt_timing;
/* Warm up, then `iters` timed launches, each after an L2 flush (o->flush_clean: read or written); fills t
 * (t->valid = 0 without bench). */
void kt_time(const kt_opts *o, kt_launch_fn fn, void *ctx, kt_timing *t);

/* Whether case `name` of `kernel` is selected by --kernel / --case. */
int kt_selected(const kt_opts *o, const char *kernel, const char *name);
/* Print the result line; counts a failure when !ok. */
void kt_report(const char *kernel, const char *name, const char *shape, int ok, double max_err, const kt_timing *t,
               double bytes, const char *info);

/* Launcher return codes are cudaError_t values: a non-zero one fails the case with its name. */
int kt_launch_ok(int rc, const char *what);

int kt_run_attention(const kt_opts *o);
int kt_run_ops(const kt_opts *o);  /* rmsnorm, silu_mul, axpby, embedding */
int kt_run_fill(const kt_opts *o); /* fill_pattern / poison / random, check_collective, delay */
/* allreduce_norm_oneshot, allreduce_norm_push (fused, world 1), residual_rmsnorm (kt_fused.c). */
int kt_run_fused(const kt_opts *o);
/* The link probe's kernels on one GPU: chase, ping-pong, store/load, launch-cost kernels (kt_links.c). */
int kt_run_links(const kt_opts *o);
/* Attention launch-floor probes (--kernel probe only; timings, no validation). */
int kt_run_probe(const kt_opts *o);

#endif

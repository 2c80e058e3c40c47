/* allreduce_norm kernels (fusion.allreduce_residual_norm): the fused one-shot and push kernels at world 1
 * (the cross-rank protocol is run_comm_tests.sh's job; here the row walk, the residual add and the norm,
 * on the vector and scalar paths) and the unfused vp_residual_rmsnorm. Each case validates both outputs
 * (the normalised rows and the updated residual) against a CPU reference from the same bf16 inputs, then
 * times the launch. */
#include "kt.h"

#include "../../kernels/vp_allreduce_norm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUSED_TOL (1.0 / 128) /* bf16 rounding of the output plus the row statistics' order, as kt_ops.c */

typedef struct fused_ctx {
    int which; /* 0 oneshot, 1 push, 2 residual_rmsnorm (unfused) */
    vp_ar_args a;
    vp_ar_norm nm;
    void *x; /* residual_rmsnorm: the reduced rows in, the normalised rows out */
} fused_ctx;

static int launch_fused(void *ctx)
{
    fused_ctx *c = ctx;
    if (c->which == 0)
        return vp_allreduce_norm_oneshot(&c->a, &c->nm, kt_stream);
    if (c->which == 1)
        return vp_allreduce_norm_push(&c->a, &c->nm, kt_stream);
    return vp_residual_rmsnorm(c->x, c->nm.residual, c->nm.weight, c->nm.rows, c->nm.width, c->nm.eps, kt_stream);
}

/* residual' = bf16(in + residual); out = residual' x rstd(residual') x weight. */
static void reference(const float *in, const float *res, const float *w, int rows, int cols, float *want_res,
                      float *want_out)
{
    for (int r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int j = 0; j < cols; j++) {
            const long long i = (long long)r * cols + j;
            want_res[i] = kt_round_bf(in[i] + res[i]);
            ss += (double)want_res[i] * want_res[i];
        }
        const double rstd = 1.0 / sqrt(ss / cols + 1e-6);
        for (int j = 0; j < cols; j++)
            want_out[(long long)r * cols + j] = (float)(want_res[(long long)r * cols + j] * rstd * w[j]);
    }
}

static void run_case(const kt_opts *o, int which, const char *name, int rows, int cols)
{
    static const char *const kernels[] = {"allreduce_norm_oneshot", "allreduce_norm_push", "residual_rmsnorm"};
    const long long n = (long long)rows * cols;
    float *hin, *hres, *hw;
    fused_ctx c = {.which = which};
    void *in = kt_dev_random(n, o->seed + 31, &hin);
    c.nm = (vp_ar_norm){.residual = kt_dev_random(n, o->seed + 32, &hres),
                        .weight = kt_dev_random(cols, o->seed + 33, &hw),
                        .rows = rows,
                        .width = cols,
                        .eps = 1e-6f};
    void *out = kt_dev_malloc((size_t)n * 2), *signal = kt_dev_malloc(sizeof(vp_ar_signal)), *scratch = NULL;
    vp_ar_error *err_host = NULL, *err_dev = NULL;
    CUDA_CHECK(cudaMemset(signal, 0, sizeof(vp_ar_signal)));
    CUDA_CHECK(cudaHostAlloc((void **)&err_host, sizeof(*err_host), cudaHostAllocMapped));
    memset(err_host, 0, sizeof(*err_host));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&err_dev, err_host, 0));
    if (which == 2) {
        CUDA_CHECK(cudaMemcpy(out, in, (size_t)n * 2, cudaMemcpyDeviceToDevice)); /* the allreduce's result */
        c.x = out;
    } else {
        CUDA_CHECK(vp_fill_poison(out, n, kt_stream));
        scratch = kt_dev_malloc(vp_ar_push_scratch_bytes(n, 1));
        c.a = (vp_ar_args){.rank = 0, .world = 1, .count = n, .out = out, .error = err_dev, .timeout_ns = 2000000000ull,
                           .push_lines = vp_ar_push_lines(n)};
        c.a.in[0] = in;
        c.a.scratch[0] = scratch;
        c.a.signal[0] = signal;
        c.a.self = signal;
    }
    float *want_res = kt_malloc((size_t)n * sizeof(float)), *want_out = kt_malloc((size_t)n * sizeof(float));
    reference(hin, hres, hw, rows, cols, want_res, want_out);

    double e_out = INFINITY, e_res = INFINITY;
    int ok = kt_launch_ok(launch_fused(&c), kernels[which]);
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    ok = ok && err_host->code == 0;
    if (ok) {
        float *got = kt_download_bf(out, n), *res = kt_download_bf(c.nm.residual, n);
        ok = kt_compare(got, want_out, n, 1e-2, FUSED_TOL, &e_out) && kt_compare(res, want_res, n, 1e-2, 0.0, &e_res);
        free(got);
        free(res);
    }
    kt_timing t = {0};
    if (ok)
        kt_time(o, launch_fused, &c, &t);
    char shape[64], info[64];
    snprintf(shape, sizeof shape, "%dx%d", rows, cols);
    snprintf(info, sizeof info, "%s residual_err=%.2g blocks=%d", which != 1 && cols % 8 == 0 ? "vec8" : "scalar",
             e_res, which == 2 ? rows : vp_ar_blocks_norm(rows, cols, which == 1));
    /* Read residual + input (+ weight), write residual + output. */
    kt_report(kernels[which], name, shape, ok, e_out, &t, 2.0 * (4.0 * (double)n + cols), info);
    free(want_res);
    free(want_out);
    free(hin);
    free(hres);
    free(hw);
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(c.nm.residual));
    CUDA_CHECK(cudaFree((void *)c.nm.weight));
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(signal));
    if (scratch)
        CUDA_CHECK(cudaFree(scratch));
    CUDA_CHECK(cudaFreeHost(err_host));
}

int kt_run_fused(const kt_opts *o)
{
    /* The replay's verify rows (3 x hidden 7168: clusters of 2 one-shot / 4 push blocks), a draft step's
     * one row, more rows than blocks (clusters of 1 walk rows), odd widths (scalar paths; push needs whole
     * 4-element lines per row; 8196: clusters of 3 / 5 with a partial last block), and wide rows (clusters
     * at the cap of 8, each cluster walking two rows, so both slot parities and several units per thread). */
    static const struct {
        const char *name;
        int rows, cols, push_ok;
    } cases[] = {{"t3-hidden", 3, 7168, 1}, {"t1-hidden", 1, 7168, 1}, {"t100-rows", 100, 1024, 1},
                 {"odd-1001", 5, 1001, 0}, {"odd-1004", 5, 1004, 1},
                 {"odd-8196", 3, 8196, 1},   {"t8-wide", 8, 32768, 1}};
    static const char *const kernels[] = {"allreduce_norm_oneshot", "allreduce_norm_push", "residual_rmsnorm"};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if ((k != 1 || cases[i].push_ok) && kt_selected(o, kernels[k], cases[i].name))
                run_case(o, k, cases[i].name, cases[i].rows, cases[i].cols);
    return 0;
}

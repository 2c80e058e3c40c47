/* Attention tests: vp_attention_decode against a double-precision CPU reference, then timed. */
#include "kt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct attn_case {
    const char *name;
    int batch, q_len, kv_len, heads, kv_heads, qk_dim, v_dim, v_in_k;
    /* Softmax scale as a target standard deviation of the scaled scores (inputs are uniform in [-1, 1),
     * so q.k has std sqrt(qk_dim) / 3). 0.58 is MLA's real 1/sqrt(192) at qk_dim 576 (nearly flat over
     * a long context); 2.5 gives a peaked softmax in which a lost or misplaced key shows. */
    double score_std;
    int big;   /* skipped with --quick */
    int graph; /* also replay through a captured CUDA graph */
} attn_case;

/* The benchmark shapes first (the replay's defaults: MLA at heads 8 per rank, q_len 3 draft tokens;
 * the EAGLE-3 draft head's GQA at head_dim 128), then edge cases that exercise every code path:
 * padding of qk_dim / v_dim, the scalar (unaligned) loader, several row blocks, value-column chunks,
 * a single split (direct output), tails of kv_len shorter than a tile, batch > 1. */
static const attn_case cases[] = {
    {"mla-8k", 1, 3, 8192, 8, 1, 576, 512, 1, 0.58, 0, 1},
    {"mla-32k", 1, 3, 32768, 8, 1, 576, 512, 1, 0.58, 0, 0},
    {"mla-128k", 1, 3, 131072, 8, 1, 576, 512, 1, 0.58, 1, 0},
    {"mla-8k-h16", 1, 3, 8192, 16, 1, 576, 512, 1, 0.58, 0, 0}, /* TP=4: 16 heads per rank, 48 rows */
    {"mla-32k-h16", 1, 3, 32768, 16, 1, 576, 512, 1, 0.58, 0, 0},
    {"mla-128k-h16", 1, 3, 131072, 16, 1, 576, 512, 1, 0.58, 1, 0},
    {"mla-32k-q1", 1, 1, 32768, 8, 1, 576, 512, 1, 0.58, 0, 0},
    {"mla-32k-q8", 1, 8, 32768, 8, 1, 576, 512, 1, 0.58, 0, 0},
    {"gqa-8k-q1", 1, 1, 8192, 8, 8, 128, 128, 0, 0.33, 0, 1},
    {"gqa-8k-q3", 1, 3, 8192, 8, 8, 128, 128, 0, 0.33, 0, 0},
    {"gqa-32k-q3", 1, 3, 32768, 8, 8, 128, 128, 0, 0.33, 0, 0},
    {"gqa-kvh1-8k-q3", 1, 3, 8192, 8, 1, 128, 128, 0, 0.33, 0, 0},
    {"mla-peaked-4k", 1, 3, 4096, 8, 1, 576, 512, 1, 2.5, 0, 0},
    {"mla-batch3", 3, 2, 3000, 8, 1, 576, 512, 1, 2.5, 0, 0},
    {"mla-q5-rows40", 1, 5, 4097, 8, 1, 576, 512, 1, 2.5, 0, 0}, /* 40 rows: two blocks of 24 rows */
    {"tiny-mla", 1, 3, 256, 4, 1, 48, 32, 1, 2.5, 0, 1},
    {"tiny-gqa", 1, 3, 256, 4, 2, 48, 32, 0, 2.5, 0, 0},
    {"tiny-kv1", 1, 2, 1, 4, 1, 48, 32, 1, 2.5, 0, 0},
    {"tiny-kv5", 2, 1, 5, 4, 4, 48, 32, 0, 2.5, 0, 0},
    {"pad-dims", 1, 2, 1000, 6, 3, 40, 24, 0, 2.5, 0, 0},
    {"pad-vink", 1, 3, 777, 4, 1, 56, 40, 1, 2.5, 0, 0},
    {"scalar-path", 1, 5, 777, 3, 1, 37, 19, 0, 2.5, 0, 0},
    {"scalar-vink", 2, 2, 301, 2, 1, 45, 21, 1, 2.5, 0, 0},
    {"many-rows", 1, 3, 2048, 64, 1, 128, 128, 0, 2.5, 0, 0},
    {"wide-v", 1, 2, 1500, 4, 2, 256, 1280, 0, 2.5, 0, 0},
    {"wider-v", 1, 1, 1500, 2, 1, 128, 2560, 0, 2.5, 0, 0},
    {"one-split", 40, 1, 512, 8, 8, 128, 128, 0, 2.5, 0, 1},
    {"odd-heads-q7", 1, 7, 4099, 6, 2, 64, 64, 0, 2.5, 0, 0},
};

static void attn_ref(const attn_case *c, const float *q, const float *k, const float *v, float scale, float *out)
{
    const int G = c->heads / c->kv_heads;
    double *s = kt_malloc((size_t)c->kv_len * sizeof(double));
    double *o = kt_malloc((size_t)c->v_dim * sizeof(double));
    for (int b = 0; b < c->batch; b++) {
        for (int qi = 0; qi < c->q_len; qi++) {
            for (int h = 0; h < c->heads; h++) {
                const long long row = ((long long)b * c->q_len + qi) * c->heads + h;
                const float *qr = q + row * c->qk_dim;
                const int kvh = h / G;
                double m = -INFINITY, l = 0.0;
                for (int n = 0; n < c->kv_len; n++) {
                    const float *kr = k + (((long long)b * c->kv_len + n) * c->kv_heads + kvh) * c->qk_dim;
                    double dot = 0.0;
                    for (int d = 0; d < c->qk_dim; d++)
                        dot += (double)qr[d] * (double)kr[d];
                    s[n] = dot * (double)scale;
                    m = s[n] > m ? s[n] : m;
                }
                memset(o, 0, (size_t)c->v_dim * sizeof(double));
                for (int n = 0; n < c->kv_len; n++) {
                    const long long kv_row = ((long long)b * c->kv_len + n) * c->kv_heads + kvh;
                    const float *vr = c->v_in_k ? k + kv_row * c->qk_dim : v + kv_row * c->v_dim;
                    const double p = exp(s[n] - m);
                    l += p;
                    for (int d = 0; d < c->v_dim; d++)
                        o[d] += p * (double)vr[d];
                }
                for (int d = 0; d < c->v_dim; d++)
                    out[row * c->v_dim + d] = c->kv_len ? (float)(o[d] / l) : 0.0f;
            }
        }
    }
    free(s);
    free(o);
}

static int launch_attention(void *ctx)
{
    return vp_attention_decode((const vp_attn_args *)ctx, kt_stream);
}

/* Capture the launch into a graph (as the executor does), replay it, return the output. */
static float *replay_in_graph(vp_attn_args *a, long long out_n)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(vp_fill_poison(a->out, out_n, kt_stream));
    CUDA_CHECK(cudaStreamBeginCapture(kt_stream, cudaStreamCaptureModeGlobal));
    const int rc = vp_attention_decode(a, kt_stream);
    CUDA_CHECK(cudaStreamEndCapture(kt_stream, &graph));
    CUDA_CHECK(rc);
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphLaunch(exec, kt_stream));
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    return kt_download_bf(a->out, out_n);
}

static double rms(const float *x, long long n)
{
    double ss = 0.0;
    for (long long i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    return n ? sqrt(ss / (double)n) : 0.0;
}

/* One launch setting of a case: validate (poisoned output, direct and graph-replayed), then time. */
static void run_setting(const kt_opts *o, const attn_case *c, vp_attn_args *a, long long out_n, const float *ref,
                        double floor, const char *shape, double bytes)
{
    const size_t ws = vp_attention_workspace_bytes(a);
    a->workspace = ws ? kt_dev_malloc(ws) : NULL;
    char info[256] = "";
    const int described = vp_attention_describe(a, info, sizeof info) == 0;
    const double tol = 1.0 / 64; /* bf16 output (2^-9) and bf16 probabilities (2^-9), with margin */

    /* Poison first: an output element the kernel fails to write is NaN and fails the comparison. */
    CUDA_CHECK(vp_fill_poison(a->out, out_n, kt_stream));
    double err = INFINITY;
    int ok = described && kt_launch_ok(vp_attention_decode(a, kt_stream), "vp_attention_decode");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    if (ok) {
        float *got = kt_download_bf(a->out, out_n);
        ok = kt_compare(got, ref, out_n, floor, tol, &err);
        free(got);
    }
    if (ok && c->graph) {
        double gerr;
        float *got = replay_in_graph(a, out_n);
        ok = kt_compare(got, ref, out_n, floor, tol, &gerr);
        if (!ok)
            fprintf(stderr, "attention %s: graph replay differs (max_err %.3e)\n", c->name, gerr);
        free(got);
    }
    kt_timing t = {0};
    if (ok)
        kt_time(o, launch_attention, a, &t);
    kt_report("attention", c->name, shape, ok, err, &t, bytes, info);
    if (a->workspace)
        CUDA_CHECK(cudaFree(a->workspace));
    a->workspace = NULL;
}

static void run_case(const kt_opts *o, const attn_case *c)
{
    const long long q_n = (long long)c->batch * c->q_len * c->heads * c->qk_dim;
    const long long k_n = (long long)c->batch * c->kv_len * c->kv_heads * c->qk_dim;
    const long long v_n = c->v_in_k ? 0 : (long long)c->batch * c->kv_len * c->kv_heads * c->v_dim;
    const long long out_n = (long long)c->batch * c->q_len * c->heads * c->v_dim;
    float *hq, *hk, *hv = NULL;
    void *q = kt_dev_random(q_n, o->seed + 1, &hq);
    void *k = kt_dev_random(k_n, o->seed + 2, &hk);
    void *v = c->v_in_k ? NULL : kt_dev_random(v_n, o->seed + 3, &hv);
    void *out = kt_dev_malloc((size_t)out_n * 2);

    vp_attn_args a = {.q = q, .k = k, .v = v, .out = out, .batch = c->batch, .q_len = c->q_len,
                      .kv_len = c->kv_len, .heads = c->heads, .kv_heads = c->kv_heads, .qk_dim = c->qk_dim,
                      .v_dim = c->v_dim, .v_in_k = c->v_in_k,
                      .scale = (float)(c->score_std * 3.0 / sqrt((double)c->qk_dim))};
    char shape[160];
    snprintf(shape, sizeof shape, "b%d_q%d_h%d_kvh%d_kv%d_dk%d_dv%d_vink%d", c->batch, c->q_len, c->heads,
             c->kv_heads, c->kv_len, c->qk_dim, c->v_dim, c->v_in_k);
    float *ref = kt_malloc((size_t)out_n * sizeof(float));
    attn_ref(c, hq, hk, hv, a.scale, ref);
    const double floor = rms(ref, out_n);
    /* Bytes the op must move: q, the cache (k, and v when separate), out. The fp32 split partials are
     * extra traffic of this algorithm (written and read back, mostly from L2) and not counted. */
    const double bytes = 2.0 * (double)(q_n + k_n + v_n + out_n);
    for (int i = 0; i < o->attn_n; i++) {
        const int *cfg = o->attn_cfg[i];
        CUDA_CHECK(vp_attention_set_tile(cfg[0]));
        CUDA_CHECK(vp_attention_set_tuning(cfg[1], cfg[2]));
        CUDA_CHECK(vp_attention_set_kernel(cfg[3]));
        run_setting(o, c, &a, out_n, ref, floor, shape, bytes);
    }
    CUDA_CHECK(vp_attention_set_tile(o->attn_cfg[0][0])); /* the command line's setting again */
    CUDA_CHECK(vp_attention_set_tuning(o->attn_cfg[0][1], o->attn_cfg[0][2]));
    CUDA_CHECK(vp_attention_set_kernel(o->attn_cfg[0][3]));

    free(ref);
    free(hq);
    free(hk);
    free(hv);
    CUDA_CHECK(cudaFree(q));
    CUDA_CHECK(cudaFree(k));
    if (v)
        CUDA_CHECK(cudaFree(v));
    CUDA_CHECK(cudaFree(out));
}

/* Arguments the launcher must refuse (returning an error, launching nothing). */
static void run_invalid(void)
{
    vp_attn_args a = {.batch = 1, .q_len = 1, .kv_len = 16, .heads = 6, .kv_heads = 4, .qk_dim = 64, .v_dim = 64,
                      .scale = 1.0f};
    int ok = vp_attention_decode(&a, kt_stream) != 0 && vp_attention_workspace_bytes(&a) == 0;
    a.kv_heads = 1;
    a.v_in_k = 1;
    a.v_dim = 128; /* values taken from keys need v_dim <= qk_dim */
    ok = ok && vp_attention_decode(&a, kt_stream) != 0;
    a.v_dim = 64;
    a.qk_dim = 1 << 20; /* cannot fit shared memory */
    ok = ok && vp_attention_decode(&a, kt_stream) != 0;
    CUDA_CHECK(cudaGetLastError()); /* refusals must not leave a sticky error behind */
    kt_report("attention", "invalid-args", "-", ok, 0.0, NULL, 0.0, "rejects heads%kv_heads,v_dim>qk_dim,huge_qk");
}

/* kv_len = 0: no keys, defined as a zero output (and no read of q, k, v). */
static void run_empty(void)
{
    const long long out_n = 3LL * 8 * 512;
    void *out = kt_dev_malloc((size_t)out_n * 2);
    CUDA_CHECK(vp_fill_poison(out, out_n, kt_stream));
    vp_attn_args a = {.out = out, .batch = 1, .q_len = 3, .kv_len = 0, .heads = 8, .kv_heads = 1, .qk_dim = 576,
                      .v_dim = 512, .v_in_k = 1, .scale = 0.07f};
    int ok = kt_launch_ok(vp_attention_decode(&a, kt_stream), "vp_attention_decode (kv_len 0)");
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    float *got = kt_download_bf(out, out_n);
    for (long long i = 0; i < out_n && ok; i++)
        ok = got[i] == 0.0f;
    free(got);
    CUDA_CHECK(cudaFree(out));
    kt_report("attention", "empty-kv", "b1_q3_h8_kvh1_kv0_dk576_dv512_vink1", ok, 0.0, NULL, 0.0, "zeros");
}

/* The wgmma kernel's operand layouts, one MMA each (vp_wgmma_layout_check); where no sm_90a code runs,
 * a line that says so and counts as neither pass nor failure. */
static void run_wgmma_layout(void)
{
    int bad[2] = {-1, -1};
    const int rc = vp_wgmma_layout_check(bad, kt_stream);
    if (rc == (int)cudaErrorNotSupported) {
        printf("kernel=attention case=wgmma-layout skipped=1 info=no_sm90a_code_or_not_cc9\n");
        return;
    }
    CUDA_CHECK(rc);
    char info[96];
    snprintf(info, sizeof info, "mismatches_kmajor=%d,mismatches_mn_major=%d", bad[0], bad[1]);
    kt_report("attention", "wgmma-layout", "m64n24k64", bad[0] == 0 && bad[1] == 0, 0.0, NULL, 0.0, info);
}

int kt_run_attention(const kt_opts *o)
{
    if (kt_selected(o, "attention", "wgmma-layout"))
        run_wgmma_layout();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!kt_selected(o, "attention", cases[i].name) || (o->quick && cases[i].big))
            continue;
        run_case(o, &cases[i]);
    }
    if (kt_selected(o, "attention", "invalid-args"))
        run_invalid();
    if (kt_selected(o, "attention", "empty-kv"))
        run_empty();
    return 0;
}

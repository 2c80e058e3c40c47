/* Row-wise and element-wise kernels: rmsnorm, silu_mul, axpby, embedding. Each case validates against a
 * CPU reference computed from the same bf16 inputs, then times the launch. Odd sizes take the scalar
 * path of each kernel, multiples of 8 the 16-byte vectorised one. */
#include "kt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* One output element may differ from the fp32 reference by bf16 rounding (2^-9 relative) plus the
 * reduction order of the row statistics; 2^-7 leaves margin without hiding a wrong formula. */
#define OPS_TOL (1.0 / 128)

typedef struct rowwise_case {
    const char *name;
    int rows, cols;
    int big;
} rowwise_case;

/* One case of a bf16-output op. The CPU reference is computed by the caller from the same bf16 inputs. */
typedef struct op_case {
    const char *kernel, *name, *api; /* family and case for the result line; launcher name for errors */
    kt_launch_fn launch;
    void *ctx;
    const void *out;  /* device bf16 [n] written by one launch */
    const float *ref; /* its reference [n] */
    long long n;
    double floor, tol; /* kt_compare's */
    const char *shape, *info;
    double bytes; /* read + written once, for gbps */
} op_case;

/* llm.c order: launch once and validate against the reference; only an op that validated is timed
 * (kt_time: warm-up, L2 flushed before every event-timed run), since a wrong kernel's time means
 * nothing. Then the result line. */
static void check_and_time(const kt_opts *o, const op_case *k)
{
    double err = INFINITY;
    int ok = kt_launch_ok(k->launch(k->ctx), k->api);
    CUDA_CHECK(cudaStreamSynchronize(kt_stream));
    if (ok) {
        float *got = kt_download_bf(k->out, k->n);
        ok = kt_compare(got, k->ref, k->n, k->floor, k->tol, &err);
        free(got);
    }
    kt_timing t = {0};
    if (ok)
        kt_time(o, k->launch, k->ctx, &t);
    kt_report(k->kernel, k->name, k->shape, ok, err, &t, k->bytes, k->info);
}

/* ------------------------------------------------------------------------------------- rmsnorm */

typedef struct rms_ctx {
    void *out, *in, *w;
    int rows, cols;
} rms_ctx;

static int launch_rmsnorm(void *ctx)
{
    rms_ctx *c = ctx;
    return vp_rmsnorm(c->out, c->in, c->w, c->rows, c->cols, 1e-6f, kt_stream);
}

static void run_rmsnorm(const kt_opts *o, const rowwise_case *rc)
{
    const long long n = (long long)rc->rows * rc->cols;
    float *hin, *hw;
    rms_ctx c = {.rows = rc->rows, .cols = rc->cols};
    c.in = kt_dev_random(n, o->seed + 11, &hin);
    c.w = kt_dev_random(rc->cols, o->seed + 12, &hw);
    c.out = kt_dev_malloc((size_t)n * 2);
    CUDA_CHECK(vp_fill_poison(c.out, n, kt_stream));

    float *ref = kt_malloc((size_t)n * sizeof(float));
    for (int r = 0; r < rc->rows; r++) {
        double ss = 0.0;
        for (int j = 0; j < rc->cols; j++)
            ss += (double)hin[(long long)r * rc->cols + j] * hin[(long long)r * rc->cols + j];
        const double rstd = 1.0 / sqrt(ss / rc->cols + 1e-6);
        for (int j = 0; j < rc->cols; j++)
            ref[(long long)r * rc->cols + j] = (float)(hin[(long long)r * rc->cols + j] * rstd * hw[j]);
    }
    char shape[64];
    snprintf(shape, sizeof shape, "%dx%d", rc->rows, rc->cols);
    check_and_time(o, &(op_case){.kernel = "rmsnorm", .name = rc->name, .api = "vp_rmsnorm", .launch = launch_rmsnorm,
                                 .ctx = &c, .out = c.out, .ref = ref, .n = n, .floor = 1e-2, .tol = OPS_TOL,
                                 .shape = shape, .info = rc->cols % 8 ? "scalar" : "vec8",
                                 .bytes = 2.0 * (2.0 * (double)n + rc->cols)});
    free(ref);
    free(hin);
    free(hw);
    CUDA_CHECK(cudaFree(c.in));
    CUDA_CHECK(cudaFree(c.w));
    CUDA_CHECK(cudaFree(c.out));
}

/* ------------------------------------------------------------------------------------ silu_mul */

typedef struct silu_ctx {
    void *out, *x;
    int rows, cols;
} silu_ctx;

static int launch_silu(void *ctx)
{
    silu_ctx *c = ctx;
    return vp_silu_mul(c->out, c->x, c->rows, c->cols, kt_stream);
}

static void run_silu(const kt_opts *o, const rowwise_case *rc)
{
    const long long n = (long long)rc->rows * rc->cols;
    float *hx;
    silu_ctx c = {.rows = rc->rows, .cols = rc->cols};
    c.x = kt_dev_random(2 * n, o->seed + 21, &hx);
    c.out = kt_dev_malloc((size_t)n * 2);
    CUDA_CHECK(vp_fill_poison(c.out, n, kt_stream));
    float *ref = kt_malloc((size_t)n * sizeof(float));
    for (int r = 0; r < rc->rows; r++) {
        for (int j = 0; j < rc->cols; j++) {
            const double g = hx[(long long)r * 2 * rc->cols + j], u = hx[(long long)r * 2 * rc->cols + rc->cols + j];
            ref[(long long)r * rc->cols + j] = (float)(g / (1.0 + exp(-g)) * u);
        }
    }
    char shape[64];
    snprintf(shape, sizeof shape, "%dx%d", rc->rows, rc->cols);
    check_and_time(o, &(op_case){.kernel = "silu_mul", .name = rc->name, .api = "vp_silu_mul", .launch = launch_silu,
                                 .ctx = &c, .out = c.out, .ref = ref, .n = n, .floor = 1e-2, .tol = OPS_TOL,
                                 .shape = shape, .info = rc->cols % 8 ? "scalar" : "vec8",
                                 .bytes = 2.0 * 3.0 * (double)n});
    free(ref);
    free(hx);
    CUDA_CHECK(cudaFree(c.x));
    CUDA_CHECK(cudaFree(c.out));
}

/* --------------------------------------------------------------------------------------- axpby */

typedef struct axpby_ctx {
    void *out, *in;
    long long n;
    float alpha, beta;
} axpby_ctx;

static int launch_axpby(void *ctx)
{
    axpby_ctx *c = ctx;
    return vp_axpby(c->out, c->in, c->n, c->alpha, c->beta, kt_stream);
}

static void run_axpby(const kt_opts *o, const char *name, long long n, float alpha, float beta)
{
    float *hin, *hout;
    axpby_ctx c = {.n = n, .alpha = alpha, .beta = beta};
    c.in = kt_dev_random(n, o->seed + 31, &hin);
    c.out = kt_dev_random(n, o->seed + 32, &hout);
    if (beta == 0.0f) /* with beta 0 the old out must not matter, not even a NaN */
        CUDA_CHECK(vp_fill_poison(c.out, n, kt_stream));
    float *ref = kt_malloc((size_t)n * sizeof(float));
    for (long long i = 0; i < n; i++)
        ref[i] = hin[i] * alpha + (beta != 0.0f ? hout[i] * beta : 0.0f);
    char shape[64], info[64];
    snprintf(shape, sizeof shape, "n%lld", n);
    snprintf(info, sizeof info, "alpha=%g,beta=%g,%s", alpha, beta, n % 8 ? "scalar" : "vec8");
    /* Timing runs repeat out = f(out): values drift, the traffic does not. */
    check_and_time(o, &(op_case){.kernel = "axpby", .name = name, .api = "vp_axpby", .launch = launch_axpby, .ctx = &c,
                                 .out = c.out, .ref = ref, .n = n, .floor = 1e-2, .tol = OPS_TOL, .shape = shape,
                                 .info = info, .bytes = 2.0 * (double)n * (beta != 0.0f ? 3.0 : 2.0)});
    free(ref);
    free(hin);
    free(hout);
    CUDA_CHECK(cudaFree(c.in));
    CUDA_CHECK(cudaFree(c.out));
}

/* ----------------------------------------------------------------------------------- embedding */

typedef struct emb_ctx {
    void *out, *table;
    int *ids;
    int rows, cols, vocab_lo, shard_rows;
} emb_ctx;

static int launch_embedding(void *ctx)
{
    emb_ctx *c = ctx;
    return vp_embedding(c->out, c->table, c->ids, c->rows, c->cols, c->vocab_lo, c->shard_rows, kt_stream);
}

/* Token ids spread over the whole vocabulary, so that some hit this rank's shard and most do not
 * (what rank `vocab_lo / shard_rows` sees at TP = vocab / shard_rows); the first id always hits. */
static void run_embedding(const kt_opts *o, const char *name, int rows, int cols, int vocab, int shard_rows, int vocab_lo)
{
    float *htab;
    emb_ctx c = {.rows = rows, .cols = cols, .vocab_lo = vocab_lo, .shard_rows = shard_rows};
    c.table = kt_dev_random((long long)shard_rows * cols, o->seed + 41, &htab);
    c.out = kt_dev_malloc((size_t)rows * cols * 2);
    c.ids = kt_dev_malloc((size_t)rows * sizeof(int));
    int *hids = kt_malloc((size_t)rows * sizeof(int));
    for (int r = 0; r < rows; r++)
        hids[r] = r == 0 ? vocab_lo + shard_rows / 2 : (int)(((long long)r * 2654435761LL + 12345) % vocab);
    CUDA_CHECK(cudaMemcpy(c.ids, hids, (size_t)rows * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(vp_fill_poison(c.out, (long long)rows * cols, kt_stream));
    float *ref = kt_malloc((size_t)rows * cols * sizeof(float));
    int hits = 0;
    for (int r = 0; r < rows; r++) {
        const long long local = (long long)hids[r] - vocab_lo;
        const int hit = local >= 0 && local < shard_rows;
        hits += hit;
        for (int j = 0; j < cols; j++)
            ref[(long long)r * cols + j] = hit ? htab[local * cols + j] : 0.0f;
    }
    char shape[96], info[64];
    snprintf(shape, sizeof shape, "rows%d_cols%d_shard%d_lo%d", rows, cols, shard_rows, vocab_lo);
    snprintf(info, sizeof info, "hits=%d,%s", hits, cols % 8 ? "scalar" : "vec8");
    /* A copy: exact (tol 0). Bytes: ids, the table rows actually read, the output. */
    check_and_time(o, &(op_case){.kernel = "embedding", .name = name, .api = "vp_embedding", .launch = launch_embedding,
                                 .ctx = &c, .out = c.out, .ref = ref, .n = (long long)rows * cols, .floor = 1e-3,
                                 .tol = 0.0, .shape = shape, .info = info,
                                 .bytes = 4.0 * rows + 2.0 * cols * (hits + (double)rows)});
    free(ref);
    free(htab);
    free(hids);
    CUDA_CHECK(cudaFree(c.table));
    CUDA_CHECK(cudaFree(c.out));
    CUDA_CHECK(cudaFree(c.ids));
}

/* ------------------------------------------------------------------------------------------ run */

int kt_run_ops(const kt_opts *o)
{
    /* rmsnorm: the replay's [T x hidden] (T = 3 draft tokens, hidden 7168), the MLA lora norms, a prefill
     * size, odd widths. silu_mul: per-rank intermediate widths at TP = 8 (dense 18432 / 8, MoE and shared
     * expert 2048 / 8 with 8 * T routed rows). */
    static const rowwise_case norm_cases[] = {
        {"t3-hidden", 3, 7168, 0}, {"t3-q-lora", 3, 1536, 0}, {"t3-kv-lora", 3, 512, 0},
        {"t4096-hidden", 4096, 7168, 1}, {"odd-1001", 5, 1001, 0}, {"one-col", 2, 1, 0},
    };
    static const rowwise_case silu_cases[] = {
        {"t3-dense", 3, 2304, 0}, {"t24-moe", 24, 256, 0}, {"t4096-dense", 4096, 2304, 1}, {"odd-37", 5, 37, 0},
    };
    for (size_t i = 0; i < sizeof norm_cases / sizeof norm_cases[0]; i++)
        if (kt_selected(o, "rmsnorm", norm_cases[i].name) && !(o->quick && norm_cases[i].big))
            run_rmsnorm(o, &norm_cases[i]);
    for (size_t i = 0; i < sizeof silu_cases / sizeof silu_cases[0]; i++)
        if (kt_selected(o, "silu_mul", silu_cases[i].name) && !(o->quick && silu_cases[i].big))
            run_silu(o, &silu_cases[i]);
    if (kt_selected(o, "axpby", "t3-hidden"))
        run_axpby(o, "t3-hidden", 3LL * 7168, 1.0f, 1.0f);
    if (kt_selected(o, "axpby", "16m"))
        run_axpby(o, "16m", 1LL << 24, 0.5f, -2.0f);
    if (kt_selected(o, "axpby", "beta0"))
        run_axpby(o, "beta0", 3LL * 7168, 1.5f, 0.0f);
    if (kt_selected(o, "axpby", "odd"))
        run_axpby(o, "odd", 1001, 0.25f, 1.0f);
    /* Kimi-K2.5: vocab 163840, hidden 7168; TP 8 -> 20480 rows per shard, rank 3's shard. */
    if (kt_selected(o, "embedding", "t3-tp8"))
        run_embedding(o, "t3-tp8", 3, 7168, 163840, 20480, 3 * 20480);
    if (kt_selected(o, "embedding", "t512-tp8"))
        run_embedding(o, "t512-tp8", 512, 7168, 163840, 20480, 0);
    if (kt_selected(o, "embedding", "odd"))
        run_embedding(o, "odd", 7, 45, 100, 30, 30);
    return 0;
}

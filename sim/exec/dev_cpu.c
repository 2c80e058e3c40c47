/* The CPU device: the same plan on host memory in fp32, GEMMs through CBLAS (OpenBLAS, loaded at run
 * time so the CUDA binary does not need it on GPU machines; a plain loop when no BLAS is found), the
 * other ops in plain C. Meant for CI and laptops on tiny or scaled-down scenarios: timings are CPU
 * timings and say nothing about a GPU. */
#include "dev_sizes.h"
#include "exec.h"

#include "../../kernels/vp_pattern.h"
#include "../util/util.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CBLAS constants (cblas.h values) so no BLAS header is needed at build time. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*set_threads_fn)(int);

typedef struct cpu_op {
    float *w;     /* weights (GEMM-like ops, norms, embedding) */
    float *cache; /* attention keys (and values, after the keys) */
} cpu_op;

typedef struct cpu_state {
    cpu_op *ops;
    float *x, *y;      /* activation scratch, each `scratch` floats */
    size_t scratch;
    float *send, *recv;
    float *residual, *norm_weight; /* allreduce_norm's operands (dev_norm_extent) */
    double *timers;
    int n_timers;
    sgemm_fn sgemm;
    void *blas;
    char blas_name[64];
    size_t bytes;
} cpu_state;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void naive_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                        const float *b, int ldb, float beta, float *c, int ldc)
{
    (void)order;
    (void)ta;
    (void)tb;
    /* Only the form the device uses: row-major C[m,n] = A[m,k] x B[n,k]^T. */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.f;
            for (int p = 0; p < k; p++)
                acc += a[(size_t)i * lda + p] * b[(size_t)j * ldb + p];
            c[(size_t)i * ldc + j] = alpha * acc + beta * c[(size_t)i * ldc + j];
        }
}

static void cpu_init(exec_ctx *x)
{
    cpu_state *s = util_xcalloc(1, sizeof(*s));
    x->dev_state = s;
    const char *libs[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3", NULL};
    for (int i = 0; libs[i] && !s->sgemm; i++) {
        s->blas = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (s->blas) {
            s->sgemm = (sgemm_fn)(uintptr_t)dlsym(s->blas, "cblas_sgemm");
            snprintf(s->blas_name, sizeof(s->blas_name), "%s", libs[i]);
            /* Several ranks share the cores: one BLAS thread each. */
            set_threads_fn st = (set_threads_fn)(uintptr_t)dlsym(s->blas, "openblas_set_num_threads");
            if (st)
                st(1);
            if (!s->sgemm) {
                dlclose(s->blas);
                s->blas = NULL;
            }
        }
    }
    if (!s->sgemm) {
        s->sgemm = naive_sgemm;
        snprintf(s->blas_name, sizeof(s->blas_name), "none (plain C loops)");
    }
}

/* Every count below is built with dev_size_*: the shapes come from a plan file anyone can edit. */
static dev_size op_weight_elems(const plan_op *op)
{
    switch (op->kind) {
    case PLAN_OP_GEMM:
    case PLAN_OP_GROUPED_GEMM: return dev_size_prod(op->k, op->n, op->batch, 1);
    case PLAN_OP_NORM: return dev_size_of(op->n);
    case PLAN_OP_EMBEDDING: return dev_size_prod(op->k, op->n, 1, 1);
    default: return dev_size_of(0);
    }
}

static dev_size op_cache_elems(const plan_op *op)
{
    if (op->kind != PLAN_OP_ATTENTION)
        return dev_size_of(0);
    dev_size per_tok = op->kv_shared ? dev_size_of(op->qk_dim)
                                     : dev_size_mul(dev_size_of(op->kv_heads), (long long)op->qk_dim + op->v_dim);
    return dev_size_mul_size(dev_size_prod(op->batch, op->kv_len, 1, 1), per_tok);
}

static dev_size op_scratch_elems(const plan_op *op)
{
    dev_size a, b;
    switch (op->kind) {
    case PLAN_OP_GEMM:
    case PLAN_OP_GROUPED_GEMM:
    case PLAN_OP_EMBEDDING:
        a = dev_size_prod(op->m, op->k, op->batch, 1);
        b = dev_size_prod(op->m, op->n, op->batch, 1);
        break;
    case PLAN_OP_ATTENTION:
        a = dev_size_prod(op->batch, op->q_len, op->heads, op->qk_dim);
        b = dev_size_prod(op->batch, op->q_len, op->heads, op->v_dim > op->qk_dim ? op->v_dim : op->qk_dim);
        break;
    default: a = b = dev_size_prod(op->m, op->n, 2, 1); break;
    }
    return dev_size_max(a, b);
}

/* Host bytes per rank for the plan (weights, caches, two activation buffers, two comm buffers), or -1
 * with x->why set when an op cannot run on this device or a count does not fit 64 bits. */
static int cpu_plan_bytes(exec_ctx *x, size_t *total_out, size_t *scratch_out)
{
    const plan *p = x->plan;
    dev_size total = dev_size_of(0), scratch = dev_size_of(1);
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            const char *phase = p->phases[ph].name;
            if (dev_op_check(op, phase, x->why, sizeof(x->why)))
                return -1;
            dev_size w = op_weight_elems(op), c = op_cache_elems(op), sc = op_scratch_elems(op);
            dev_size bytes = dev_size_mul(dev_size_add(w, c), (long long)sizeof(float));
            if (w.bad || c.bad || sc.bad || bytes.bad)
                return dev_size_refuse(x->why, sizeof(x->why), "its weight, cache or activation size", op, phase);
            total = dev_size_add(total, bytes);
            scratch = dev_size_max(scratch, sc);
        }
    dev_size buffers = dev_size_add(dev_size_mul(scratch, 2), dev_size_mul(dev_size_of(x->cc.max_comm_elems), 2));
    total = dev_size_add(total, dev_size_mul(buffers, (long long)sizeof(float)));
    if (total.bad) {
        snprintf(x->why, sizeof(x->why), "the plan's host memory per rank does not fit a 64-bit byte count; the plan "
                                         "asks for an impossible size");
        return -1;
    }
    *total_out = (size_t)total.v;
    *scratch_out = (size_t)scratch.v;
    return 0;
}

static void fill_random(float *p, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = ((s >> 8) * (1.0f / 16777216.0f) - 0.5f) * 0.1f;
    }
}

static int cpu_prepare(exec_ctx *x)
{
    cpu_state *s = x->dev_state;
    const plan *p = x->plan;
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    size_t total = 0, scratch = 1;
    if (cpu_plan_bytes(x, &total, &scratch))
        return -1;
    if (x->opt->max_host_bytes && total > x->opt->max_host_bytes) {
        char a[32], b[32];
        /* Every CPU-device command takes --max-host-memory; the smaller scenario is offered only to a run
         * that does not use it already. */
        const char *name = !strncmp(p->scenario, "probe of ", 9) ? p->scenario + 9 : p->scenario; /* plan_probe.c */
        const bool tiny = !strcmp(name, "tiny");
        snprintf(x->why, sizeof(x->why),
                 "the CPU device would need %s per rank, over the %s limit (--max-host-memory GIB); raise it, or "
                 "%s",
                 util_fmt_bytes((double)total, a, sizeof(a)), util_fmt_bytes((double)x->opt->max_host_bytes, b, sizeof(b)),
                 tiny ? "scale the scenario down (e.g. --set model.layers=4)"
                      : "use configs/tiny.yaml or a scaled scenario (e.g. --set model.layers=4)");
        return -1;
    }
    s->bytes = total;
    s->ops = util_xcalloc((size_t)n_ops, sizeof(cpu_op));
    int flat = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
            const plan_op *op = &p->phases[ph].ops[i];
            /* Checked by cpu_plan_bytes: the counts fit, and their sum passed the memory limit. */
            size_t w = (size_t)op_weight_elems(op).v, c = (size_t)op_cache_elems(op).v;
            if (w) {
                s->ops[flat].w = util_xmalloc(w * sizeof(float));
                fill_random(s->ops[flat].w, w, (unsigned)(x->opt->seed + flat));
            }
            if (c) {
                s->ops[flat].cache = util_xmalloc(c * sizeof(float));
                fill_random(s->ops[flat].cache, c, (unsigned)(x->opt->seed * 7 + flat));
            }
        }
    s->scratch = scratch;
    s->x = util_xcalloc(scratch, sizeof(float));
    s->y = util_xcalloc(scratch, sizeof(float));
    fill_random(s->x, scratch, (unsigned)x->opt->seed);
    size_t comm = x->cc.max_comm_elems > 0 ? (size_t)x->cc.max_comm_elems : 1;
    s->send = util_xcalloc(comm, sizeof(float));
    s->recv = util_xcalloc(comm, sizeof(float));
    long long res = 0, width = 0;
    dev_norm_extent(p, &res, &width);
    s->residual = util_xcalloc((size_t)res + 1, sizeof(float));
    s->norm_weight = util_xcalloc((size_t)width + 1, sizeof(float));
    for (long long j = 0; j < width; j++)
        s->norm_weight[j] = vp_norm_weight_value(j);
    return 0;
}

static void cpu_fini(exec_ctx *x)
{
    cpu_state *s = x->dev_state;
    if (!s)
        return;
    const plan *p = x->plan;
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    for (int i = 0; s->ops && i < n_ops; i++) {
        free(s->ops[i].w);
        free(s->ops[i].cache);
    }
    free(s->ops);
    free(s->x);
    free(s->y);
    free(s->send);
    free(s->recv);
    free(s->residual);
    free(s->norm_weight);
    free(s->timers);
    if (s->blas)
        dlclose(s->blas);
    free(s);
    x->dev_state = NULL;
}

/* Decode attention: softmax(q k^T * scale) v per query row and head (reference-style loops). */
static void cpu_attention(const plan_op *op, const float *q, const float *cache, float *out)
{
    const int group = op->kv_heads > 0 ? op->heads / op->kv_heads : op->heads;
    const size_t per_tok = op->kv_shared ? (size_t)op->qk_dim : (size_t)op->kv_heads * (op->qk_dim + op->v_dim);
    const float scale = 1.0f / sqrtf((float)op->qk_dim);
    float *score = util_xmalloc((size_t)op->kv_len * sizeof(float));
    for (int b = 0; b < op->batch; b++)
        for (long long t = 0; t < op->q_len; t++)
            for (int h = 0; h < op->heads; h++) {
                const int g = op->kv_shared ? 0 : h / group;
                const float *qr = q + (((size_t)b * op->q_len + t) * op->heads + h) * op->qk_dim;
                float mx = -INFINITY;
                for (long long j = 0; j < op->kv_len; j++) {
                    const float *kr = cache + ((size_t)b * op->kv_len + j) * per_tok +
                                      (op->kv_shared ? 0 : (size_t)g * (op->qk_dim + op->v_dim));
                    float acc = 0.f;
                    for (int d = 0; d < op->qk_dim; d++)
                        acc += qr[d] * kr[d];
                    score[j] = acc * scale;
                    mx = score[j] > mx ? score[j] : mx;
                }
                float sum = 0.f;
                for (long long j = 0; j < op->kv_len; j++) {
                    score[j] = expf(score[j] - mx);
                    sum += score[j];
                }
                float *o = out + (((size_t)b * op->q_len + t) * op->heads + h) * op->v_dim;
                memset(o, 0, (size_t)op->v_dim * sizeof(float));
                for (long long j = 0; j < op->kv_len; j++) {
                    const float *vr = cache + ((size_t)b * op->kv_len + j) * per_tok +
                                      (op->kv_shared ? 0 : (size_t)g * (op->qk_dim + op->v_dim) + op->qk_dim);
                    const float w = score[j] / sum;
                    for (int d = 0; d < op->v_dim; d++)
                        o[d] += w * vr[d];
                }
            }
    free(score);
}

static void cpu_compute(exec_ctx *x, const plan_op *op, int flat)
{
    cpu_state *s = x->dev_state;
    const cpu_op *o = &s->ops[flat];
    const int m = (int)op->m, n = (int)op->n, k = (int)op->k;
    switch (op->kind) {
    case PLAN_OP_GEMM:
        /* W is stored [n, k] per batch entry, as torch.nn.Linear keeps it. */
        for (int b = 0; b < op->batch && m > 0 && n > 0 && k > 0; b++)
            s->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS, m, n, k, 1.f, s->x + (size_t)b * m * k, k,
                     o->w + (size_t)b * n * k, k, 0.f, s->y + (size_t)b * m * n, n);
        break;
    case PLAN_OP_GROUPED_GEMM: {
        /* Rows spread evenly over the experts touched (the routing is synthetic). */
        int rows = (int)((op->m + op->batch - 1) / op->batch);
        for (int e = 0; e < op->batch; e++) {
            long long r0 = (long long)e * rows;
            int r = r0 + rows > m ? (int)(m - r0) : rows;
            if (r > 0 && n > 0 && k > 0) /* BLAS refuses a leading dimension of 0 */
                s->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS, r, n, k, 1.f, s->x + (size_t)r0 * k, k,
                         o->w + (size_t)e * n * k, k, 0.f, s->y + (size_t)r0 * n, n);
        }
        break;
    }
    case PLAN_OP_ATTENTION: cpu_attention(op, s->x, o->cache, s->y); break;
    case PLAN_OP_NORM:
        for (int r = 0; r < m; r++) {
            const float *in = s->x + (size_t)r * n;
            float ss = 0.f;
            for (int c = 0; c < n; c++)
                ss += in[c] * in[c];
            float inv = 1.0f / sqrtf(ss / n + 1e-6f);
            for (int c = 0; c < n; c++)
                s->y[(size_t)r * n + c] = in[c] * inv * o->w[c];
        }
        break;
    case PLAN_OP_ELEMENTWISE:
        for (size_t i = 0; i < (size_t)m * n; i++)
            s->y[i] = s->x[i] * 0.5f + s->y[i] * 0.5f;
        break;
    case PLAN_OP_EMBEDDING:
        /* Token r lands in this rank's shard when r % ranks == rank: rows elsewhere are zero. */
        for (int r = 0; r < m; r++) {
            float *dst = s->y + (size_t)r * n;
            if (r % (x->dist.size > 0 ? x->dist.size : 1) == x->dist.rank)
                memcpy(dst, o->w + (size_t)(r % k) * n, (size_t)n * sizeof(float));
            else
                memset(dst, 0, (size_t)n * sizeof(float));
        }
        break;
    default: break;
    }
}

static void cpu_nop(exec_ctx *x) { (void)x; }

static void cpu_timers_alloc(exec_ctx *x, int n)
{
    cpu_state *s = x->dev_state;
    s->timers = util_xrealloc(s->timers, (size_t)n * sizeof(double));
    s->n_timers = n;
}

static void cpu_timer_record(exec_ctx *x, int slot, int stream)
{
    (void)stream;
    cpu_state *s = x->dev_state;
    s->timers[slot] = now_us();
}

static double cpu_timer_elapsed(exec_ctx *x, int a, int b)
{
    cpu_state *s = x->dev_state;
    return s->timers[b] - s->timers[a];
}

static void *cpu_send(exec_ctx *x) { return ((cpu_state *)x->dev_state)->send; }
static void *cpu_recv(exec_ctx *x) { return ((cpu_state *)x->dev_state)->recv; }
static void *cpu_aux(exec_ctx *x, int which)
{
    cpu_state *s = x->dev_state;
    return which == EXEC_AUX_RESIDUAL ? (void *)s->residual : (void *)s->norm_weight;
}

static void cpu_residual_norm(exec_ctx *x, void *recv, void *residual, const void *weight, long long rows,
                              long long width)
{
    (void)x;
    float *out = recv, *res = residual;
    const float *w = weight;
    for (long long r = 0; r < rows; r++) {
        float *o = out + r * width, *h = res + r * width;
        double ss = 0.0;
        for (long long j = 0; j < width; j++) {
            h[j] += o[j];
            ss += (double)h[j] * h[j];
        }
        const float inv = (float)(1.0 / sqrt(ss / (double)width + 1e-6));
        for (long long j = 0; j < width; j++)
            o[j] = h[j] * inv * w[j];
    }
}

static void *cpu_stream(exec_ctx *x, int which)
{
    (void)x;
    (void)which;
    return NULL;
}

static void cpu_to_host(exec_ctx *x, float *dst, const void *src, long long n)
{
    (void)x;
    if (dst != src)
        memcpy(dst, src, (size_t)n * sizeof(float));
}

static void cpu_from_host(exec_ctx *x, void *dst, const float *src, long long n)
{
    (void)x;
    if (dst != src)
        memcpy(dst, src, (size_t)n * sizeof(float));
}

static void cpu_fill_pattern(exec_ctx *x, void *buf, long long n, int salt)
{
    float *f = buf;
    for (long long i = 0; i < n; i++)
        f[i] = vp_pattern_value(x->dist.rank, i, salt);
}

static void cpu_poison(exec_ctx *x, void *buf, long long n)
{
    (void)x;
    float *f = buf;
    for (long long i = 0; i < n; i++)
        f[i] = NAN;
}

static long long cpu_check(exec_ctx *x, const void *buf, long long n, int salt, bool gather)
{
    const float *f = buf;
    const int ranks = x->dist.size;
    const long long seg = gather ? n / ranks : n;
    for (long long i = 0; i < n; i++) {
        float want = 0.f;
        if (gather)
            want = vp_pattern_value((int)(i / seg), i % seg, salt);
        else
            for (int r = 0; r < ranks; r++)
                want += vp_pattern_value(r, i, salt);
        if (!(f[i] == want))
            return i;
    }
    return -1;
}

static void cpu_delay(exec_ctx *x, double ns)
{
    (void)x;
    double end = now_us() + ns / 1e3;
    while (now_us() < end) {
    }
}

static void cpu_describe(exec_ctx *x, bool after)
{
    if (after)
        return;
    cpu_state *s = x->dev_state;
    char b[32];
    exec_env_set(x, "device", "cpu");
    exec_env_set(x, "blas", "%s", s->blas_name);
    exec_env_set(x, "device_memory_per_rank", "%s", util_fmt_bytes((double)s->bytes, b, sizeof(b)));
    exec_env_set(x, "note", "CPU device: fp32 on the host; timings are CPU timings, not GPU predictions");
}

/* The CPU device measures the host, not a GPU: its facts say so, so nothing it writes can pass for a
 * GPU's (a CPU probe once put this host's vendor into the target box's file untagged). */
static void cpu_facts(int local_rank, exec_facts *f)
{
    (void)local_rank;
    f->self_test = true;
    snprintf(f->gpu_name, sizeof(f->gpu_name), "CPU device (%.80s)", f->cpu_model[0] ? f->cpu_model : "host CPU");
    snprintf(f->label, sizeof(f->label), "%s", f->gpu_name);
}

const exec_device exec_device_cpu = {
    .name = "cpu",
    .elem_bytes = 4,
    .has_graphs = false,
    .init = cpu_init,
    .prepare = cpu_prepare,
    .fini = cpu_fini,
    .compute = cpu_compute,
    .fork = cpu_nop,
    .join = cpu_nop,
    .sync = cpu_nop,
    .timers_alloc = cpu_timers_alloc,
    .timer_record = cpu_timer_record,
    .timer_elapsed_us = cpu_timer_elapsed,
    .comm_send = cpu_send,
    .comm_recv = cpu_recv,
    .comm_aux = cpu_aux,
    .residual_norm = cpu_residual_norm,
    .stream = cpu_stream,
    .to_host_float = cpu_to_host,
    .from_host_float = cpu_from_host,
    .fill_pattern = cpu_fill_pattern,
    .poison = cpu_poison,
    .check = cpu_check,
    .delay = cpu_delay,
    .describe = cpu_describe,
    .facts = cpu_facts,
};

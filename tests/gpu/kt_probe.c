/* Probes of the attention launch floor (--kernel probe; not part of "all"): the device's copy bandwidth
 * and an empty kernel's cost timed as the benchmark times (events around one launch, L2 flushed
 * before), then each benchmark shape timed in variants that take one suspect away at a time: the L2
 * flush (data and code cold), the combine or the split kernel alone, the combine without programmatic
 * dependent launch, a graph replay, back-to-back launches. Validation is the attention family's job;
 * these inputs are random and the outputs are not checked. */
#include "kt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe_shape {
    const char *name;
    int batch, q_len, kv_len, heads, kv_heads, qk_dim, v_dim, v_in_k;
} probe_shape;

static const probe_shape shapes[] = {
    {"mla-8k", 1, 3, 8192, 8, 1, 576, 512, 1},      {"mla-8k-h16", 1, 3, 8192, 16, 1, 576, 512, 1},
    {"mla-32k", 1, 3, 32768, 8, 1, 576, 512, 1},    {"mla-128k", 1, 3, 131072, 8, 1, 576, 512, 1},
    {"mla-32k-h16", 1, 3, 32768, 16, 1, 576, 512, 1}, {"mla-128k-h16", 1, 3, 131072, 16, 1, 576, 512, 1},
    {"mla-4k-b16", 16, 3, 4096, 8, 1, 576, 512, 1}, {"mla-8k-h128-q1", 1, 1, 8192, 128, 1, 576, 512, 1},
    {"gqa-8k-q3", 1, 3, 8192, 8, 8, 128, 128, 0},   {"gqa-32k-q3", 1, 3, 32768, 8, 8, 128, 128, 0},
    {"tiny-mla", 1, 3, 256, 4, 1, 48, 32, 1},
};

static void *g_flush, *g_sink;
static size_t g_flush_bytes;
static int g_flush_clean; /* --flush clean: read the buffer (kt_time says why) */

static void flush_l2(void)
{
    if (!g_flush) {
        int dev, l2 = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
        g_flush_bytes = (size_t)4 * (size_t)l2;
        g_flush = kt_dev_malloc(g_flush_bytes);
        g_sink = kt_dev_malloc(16);
        CUDA_CHECK(cudaMemsetAsync(g_flush, 0x5a, g_flush_bytes, kt_stream));
    }
    static int salt;
    if (g_flush_clean)
        CUDA_CHECK(vp_read_sweep(g_flush, g_flush_bytes, g_sink, kt_stream));
    else
        CUDA_CHECK(cudaMemsetAsync(g_flush, ++salt & 0xff, g_flush_bytes, kt_stream));
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct probe_run {
    int (*fn)(void *);   /* the timed work */
    void *ctx;
    int (*pre)(void *);  /* untimed, after the flush, before the start event (NULL: none) */
    void *pre_ctx;
    int flush, reps;     /* reps: launches of fn between the events; the sample is the time / reps */
} probe_run;

typedef struct probe_stat {
    double med, lo, hi;
} probe_stat;

static probe_stat probe_time(const kt_opts *o, const probe_run *r)
{
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    for (int i = 0; i < o->warmup; i++)
        CUDA_CHECK(r->fn(r->ctx));
    const int n = o->iters;
    double *s = kt_malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        if (r->flush)
            flush_l2();
        if (r->pre)
            CUDA_CHECK(r->pre(r->pre_ctx));
        CUDA_CHECK(cudaEventRecord(a, kt_stream));
        for (int k = 0; k < r->reps; k++)
            CUDA_CHECK(r->fn(r->ctx));
        CUDA_CHECK(cudaEventRecord(b, kt_stream));
        CUDA_CHECK(cudaEventSynchronize(b));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
        s[i] = (double)ms * 1e3 / r->reps;
    }
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    probe_stat st = {s[n / 2], s[0], s[n - 1]};
    free(s);
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    return st;
}

static void print_stat(const char *shape, const char *variant, probe_stat st)
{
    printf("probe case=%s variant=%s median_us=%.2f min_us=%.2f max_us=%.2f\n", shape, variant, st.med, st.lo, st.hi);
    fflush(stdout);
}

static int launch_empty(void *ctx)
{
    (void)ctx;
    return vp_empty_launch(kt_stream);
}

static int launch_graph(void *ctx)
{
    return (int)cudaGraphLaunch((cudaGraphExec_t)ctx, kt_stream);
}

typedef struct copy_ctx {
    void *dst;
    const void *src;
    size_t bytes;
} copy_ctx;

static int launch_copy(void *ctx)
{
    const copy_ctx *c = ctx;
    return (int)cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, kt_stream);
}

typedef struct attn_ctx {
    vp_attn_args a;
    int stage; /* vp_attention_set_probe */
} attn_ctx;

static int launch_attn(void *ctx)
{
    attn_ctx *c = ctx;
    CUDA_CHECK(vp_attention_set_probe(c->stage));
    const int rc = vp_attention_decode(&c->a, kt_stream);
    CUDA_CHECK(vp_attention_set_probe(0));
    return rc;
}

/* A graph of fn's launches (one), as the executor replays them. */
static cudaGraphExec_t capture(int (*fn)(void *), void *ctx)
{
    cudaGraph_t g;
    cudaGraphExec_t e;
    CUDA_CHECK(cudaStreamBeginCapture(kt_stream, cudaStreamCaptureModeGlobal));
    const int rc = fn(ctx);
    CUDA_CHECK(cudaStreamEndCapture(kt_stream, &g));
    CUDA_CHECK(rc);
    CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return e;
}

/* Copy bandwidth (bytes read + written / time) of a 1 GiB device-to-device copy, and the floors. */
static void probe_device(const kt_opts *o, double *copy_gbps, double *empty_us)
{
    const size_t big = (size_t)1 << 30;
    copy_ctx c = {kt_dev_malloc(big), kt_dev_malloc(big), big};
    CUDA_CHECK(cudaMemsetAsync((void *)c.src, 1, big, kt_stream));
    probe_run r = {.fn = launch_copy, .ctx = &c, .reps = 1};
    probe_stat st = probe_time(o, &r);
    *copy_gbps = 2.0 * (double)big / (st.med * 1e3);
    print_stat("copy-1GiB", "warm", st);
    printf("probe case=copy-1GiB copy_gbps=%.1f\n", *copy_gbps);
    c.bytes = 9437184; /* MLA 8K's latent cache, 9 MiB, read from DRAM and written */
    r.flush = 1;
    print_stat("copy-9MiB", "flush", probe_time(o, &r));
    CUDA_CHECK(cudaFree(c.dst));
    CUDA_CHECK(cudaFree((void *)c.src));

    probe_run e = {.fn = launch_empty, .reps = 1, .flush = 1};
    st = probe_time(o, &e);
    *empty_us = st.med;
    print_stat("empty", "flush", st);
    e.flush = 0;
    print_stat("empty", "noflush", probe_time(o, &e));
    e.reps = 20;
    print_stat("empty", "b2b20", probe_time(o, &e));
    cudaGraphExec_t ge = capture(launch_empty, NULL);
    probe_run g = {.fn = launch_graph, .ctx = ge, .reps = 1, .flush = 1};
    print_stat("empty", "graph-flush", probe_time(o, &g));
    CUDA_CHECK(cudaGraphExecDestroy(ge));
}

static double median_of(double *x, int n)
{
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    return n ? x[n / 2] : 0.0;
}

/* One launch's timeline from the kernels' own clocks (vp_attention_set_trace): per split-kernel block
 * the cycles of each stage (median over blocks), and in ns from the first block's start: the last
 * block's start, the split kernel's end, the combine's first start, its dependency wait's release and
 * its end. Five launches (each after an L2 flush); each field is the median over them. */
static void probe_trace(const kt_opts *o, attn_ctx *c, const char *name, const char *info)
{
    (void)o;
    int splits = 1, kps, tn, stages, rows_blk, row_chunks = 1, dv_chunks = 1;
    if (sscanf(info, "splits=%d,keys_per_split=%d,tn=%d,stages=%d,rows_blk=%d,row_chunks=%d,dv_chunks=%d", &splits,
               &kps, &tn, &stages, &rows_blk, &row_chunks, &dv_chunks) != 7)
        return;
    const int nb = splits * row_chunks * dv_chunks * c->a.batch * c->a.kv_heads;
    const int total_rows = c->a.batch * c->a.q_len * c->a.heads;
    const int nc = splits > 1 ? total_rows * ((c->a.v_dim + 127) / 128) : 0; /* the combine's grid */
    const size_t n = (size_t)nb * 16 + (size_t)nc * 3;
    unsigned long long *dev = kt_dev_malloc(n * 8), *h = kt_malloc(n * 8);
    enum { RUNS = 5, F = 14 };
    double f[F][RUNS];
    const char *names[F] = {"issue", "first_tile", "scores0", "softmax0", "pv0", "tile_next", "epilogue", "cta_total",
                            "ns_per_cycle", "last_cta_start_ns", "split_end_ns", "combine_start_ns",
                            "combine_released_ns", "combine_end_ns"};
    for (int r = 0; r < RUNS; r++) {
        CUDA_CHECK(cudaMemset(dev, 0, n * 8));
        flush_l2();
        vp_attention_set_trace(dev);
        CUDA_CHECK(vp_attention_decode(&c->a, kt_stream));
        vp_attention_set_trace(NULL);
        CUDA_CHECK(cudaStreamSynchronize(kt_stream));
        CUDA_CHECK(cudaMemcpy(h, dev, n * 8, cudaMemcpyDeviceToHost));
        double *col = kt_malloc((size_t)nb * sizeof(double));
        unsigned long long t0 = ~0ULL, last_start = 0, end = 0;
        for (int b = 0; b < nb; b++) {
            const unsigned long long *t = h + (size_t)b * 16;
            t0 = t[0] < t0 ? t[0] : t0;
            last_start = t[0] > last_start ? t[0] : last_start;
            end = t[14] > end ? t[14] : end;
        }
        for (int k = 0; k < 9; k++) {
            for (int b = 0; b < nb; b++) {
                const unsigned long long *t = h + (size_t)b * 16;
                const int nt = (int)t[15], last = 6 + (nt < 7 ? nt : 7) - 1;
                double v = 0.0;
                switch (k) {
                case 0: v = (double)(t[2] - t[1]); break;
                case 1: v = (double)(t[3] - t[1]); break;
                case 2: v = (double)(t[4] - t[3]); break;
                case 3: v = (double)(t[5] - t[4]); break;
                case 4: v = (double)(t[6] - t[5]); break;
                case 5: v = nt > 1 ? (double)(t[last] - t[6]) / (last - 6) : 0.0; break;
                case 6: v = (double)(t[13] - t[last]); break;
                case 7: v = (double)(t[13] - t[1]); break;
                default: v = (double)(t[14] - t[0]) / (double)(t[13] - t[1]); break;
                }
                col[b] = v;
            }
            f[k][r] = median_of(col, nb);
        }
        free(col);
        f[9][r] = (double)(last_start - t0);
        f[10][r] = (double)(end - t0);
        unsigned long long cs = ~0ULL, cr = ~0ULL, ce = 0;
        for (int b = 0; b < nc; b++) {
            const unsigned long long *t = h + (size_t)nb * 16 + (size_t)b * 3;
            cs = t[0] < cs ? t[0] : cs;
            cr = t[1] < cr ? t[1] : cr;
            ce = t[2] > ce ? t[2] : ce;
        }
        f[11][r] = nc ? (double)cs - (double)t0 : 0.0;
        f[12][r] = nc ? (double)cr - (double)t0 : 0.0;
        f[13][r] = nc ? (double)ce - (double)t0 : 0.0;
    }
    printf("probe case=%s trace blocks=%d combine_blocks=%d", name, nb, nc);
    for (int k = 0; k < F; k++)
        printf(" %s=%.*f", names[k], k == 8 ? 3 : 0, median_of(f[k], RUNS));
    printf("\n");
    fflush(stdout);
    CUDA_CHECK(cudaFree(dev));
    free(h);
}

static void probe_shape_run(const kt_opts *o, const probe_shape *p, double copy_gbps, double empty_us)
{
    const long long q_n = (long long)p->batch * p->q_len * p->heads * p->qk_dim;
    const long long k_n = (long long)p->batch * p->kv_len * p->kv_heads * p->qk_dim;
    const long long v_n = p->v_in_k ? 0 : (long long)p->batch * p->kv_len * p->kv_heads * p->v_dim;
    const long long out_n = (long long)p->batch * p->q_len * p->heads * p->v_dim;
    attn_ctx c = {.a = {.q = kt_dev_random(q_n, o->seed + 1, NULL), .k = kt_dev_random(k_n, o->seed + 2, NULL),
                        .v = p->v_in_k ? NULL : kt_dev_random(v_n, o->seed + 3, NULL),
                        .out = kt_dev_malloc((size_t)out_n * 2), .batch = p->batch, .q_len = p->q_len,
                        .kv_len = p->kv_len, .heads = p->heads, .kv_heads = p->kv_heads, .qk_dim = p->qk_dim,
                        .v_dim = p->v_dim, .v_in_k = p->v_in_k, .scale = 0.07f}};
    const size_t ws = vp_attention_workspace_bytes(&c.a);
    c.a.workspace = ws ? kt_dev_malloc(ws) : NULL;
    char info[256] = "";
    CUDA_CHECK(vp_attention_describe(&c.a, info, sizeof info));
    const double bytes = 2.0 * (double)(q_n + k_n + v_n + out_n);
    const double bound = bytes / (copy_gbps * 1e3) + empty_us;
    printf("probe case=%s bytes=%.0f bound_us=%.2f info=%s\n", p->name, bytes, bound, info);

    /* A second cache of the same shape: running on it first warms the code (and the workspace) but
     * not this cache's lines. */
    attn_ctx other = c;
    other.a.k = kt_dev_random(k_n, o->seed + 4, NULL);
    other.a.v = p->v_in_k ? NULL : kt_dev_random(v_n, o->seed + 5, NULL);

    probe_run r = {.fn = launch_attn, .ctx = &c, .reps = 1, .flush = 1};
    print_stat(p->name, "full-flush", probe_time(o, &r));
    r.pre = launch_attn, r.pre_ctx = &other;
    print_stat(p->name, "full-flush-codewarm", probe_time(o, &r));
    r.pre = NULL;
    r.flush = 0;
    print_stat(p->name, "full-noflush", probe_time(o, &r));
    r.reps = 20;
    print_stat(p->name, "full-b2b20", probe_time(o, &r));
    r.reps = 1;
    r.flush = 1;
    if (ws) {
        c.stage = 1;
        print_stat(p->name, "split-only-flush", probe_time(o, &r));
        c.stage = 2;
        print_stat(p->name, "combine-only-flush", probe_time(o, &r));
        r.flush = 0;
        print_stat(p->name, "combine-only-noflush", probe_time(o, &r));
        r.flush = 1;
        c.stage = 3;
        print_stat(p->name, "full-nopdl-flush", probe_time(o, &r));
        c.stage = 0;
    }
    cudaGraphExec_t ge = capture(launch_attn, &c);
    probe_run g = {.fn = launch_graph, .ctx = ge, .reps = 1, .flush = 1};
    print_stat(p->name, "graph-flush", probe_time(o, &g));
    CUDA_CHECK(cudaGraphExecDestroy(ge));
    probe_trace(o, &c, p->name, info);

    CUDA_CHECK(cudaFree((void *)c.a.q));
    CUDA_CHECK(cudaFree((void *)c.a.k));
    CUDA_CHECK(cudaFree((void *)other.a.k));
    if (c.a.v) {
        CUDA_CHECK(cudaFree((void *)c.a.v));
        CUDA_CHECK(cudaFree((void *)other.a.v));
    }
    CUDA_CHECK(cudaFree(c.a.out));
    if (c.a.workspace)
        CUDA_CHECK(cudaFree(c.a.workspace));
}

/* GB/s of `moved` bytes over the time a median spends past the empty launch (0 when it does not). */
static double gbps_over_empty(double moved, double med_us, double empty_us)
{
    return med_us > empty_us ? moved / ((med_us - empty_us) * 1e3) : 0.0;
}

typedef struct load_ctx {
    const void *src;
    void *sink;
    int mode, blocks, rows, row_bytes, threads;
} load_ctx;

static int launch_load(void *ctx)
{
    const load_ctx *c = ctx;
    return vp_load_probe(c->mode, c->src, c->blocks, c->rows, c->row_bytes, c->threads, c->sink, kt_stream);
}

/* The load mechanisms of vp_load_probe on MLA 8K's first tiles (128 blocks x 64 keys x 1,152 bytes =
 * 9 MiB) and on tiles of 16 keys, after the flush; GB/s = bytes read / (median - the empty launch). */
static void probe_loads(const kt_opts *o, double empty_us)
{
    static const char *const names[] = {"cp.async16", "ldg16", "bulk-per-row", "bulk-per-tile"};
    static const int shapes_rt[][3] = {{128, 64, 256}, {128, 64, 1024}, {128, 16, 256}, {132, 64, 256}};
    const size_t bytes = (size_t)132 * 64 * 1152;
    load_ctx c = {.src = kt_dev_malloc(bytes), .sink = kt_dev_malloc(16), .row_bytes = 1152};
    CUDA_CHECK(vp_fill_random((void *)c.src, (long long)(bytes / 2), 7, kt_stream));
    for (size_t k = 0; k < sizeof shapes_rt / sizeof shapes_rt[0]; k++) {
        c.blocks = shapes_rt[k][0], c.rows = shapes_rt[k][1], c.threads = shapes_rt[k][2];
        for (int m = 0; m < 4; m++) {
            c.mode = m;
            probe_run r = {.fn = launch_load, .ctx = &c, .reps = 1, .flush = 1};
            const probe_stat st = probe_time(o, &r);
            const double moved = (double)c.blocks * c.rows * c.row_bytes;
            printf("probe case=loads mechanism=%s blocks=%d rows=%d threads=%d bytes=%.0f median_us=%.2f min_us=%.2f "
                   "max_us=%.2f gbps_over_empty=%.0f\n",
                   names[m], c.blocks, c.rows, c.threads, moved, st.med, st.lo, st.hi,
                   gbps_over_empty(moved, st.med, empty_us));
        }
    }
    CUDA_CHECK(cudaFree((void *)c.src));
    CUDA_CHECK(cudaFree(c.sink));
}

typedef struct store_ctx {
    void *dst;
    int mode, blocks, bytes, threads;
} store_ctx;

static int launch_store(void *ctx)
{
    const store_ctx *c = ctx;
    return vp_store_probe(c->mode, c->dst, c->blocks, c->bytes, c->threads, kt_stream);
}

typedef struct combine_ctx {
    void *out, *part_o, *part_ml;
    int splits, rows, v_dim;
} combine_ctx;

static int launch_combine(void *ctx)
{
    const combine_ctx *c = ctx;
    return vp_combine_probe(c->out, c->part_o, c->part_ml, c->splits, c->rows, c->v_dim, kt_stream);
}

/* The split merge's halves over their bytes (case merge). The epilogue: 128 blocks each writing 24, 48
 * or 96 KB (the 24- and 48-row fp32 partials, and bf16's 24 KB) from shared memory, by 16-byte stores
 * of 128 or 256 threads or one bulk copy, after the flush. The combine alone over 128 splits of 24 or
 * 48 rows at v_dim 512 and 256 (half the bytes and half the blocks), its partials in L2 (no flush)
 * and not (flush). If the time halves with the bytes, bytes are the cost; if not, the steps are. */
static void probe_merge(const kt_opts *o, double empty_us)
{
    static const char *const names[] = {"st16", "bulk"};
    static const int kb[] = {24, 48, 96};
    const int blocks = 128;
    store_ctx sc = {.dst = kt_dev_malloc((size_t)blocks * 96 * 1024), .blocks = blocks};
    for (size_t b = 0; b < sizeof kb / sizeof kb[0]; b++)
        for (int m = 0; m < 2; m++)
            for (int th = 128; th <= 256; th *= 2) {
                if (m == 1 && th == 256)
                    continue; /* one thread issues the bulk copy */
                sc.mode = m, sc.bytes = kb[b] * 1024, sc.threads = th;
                probe_run r = {.fn = launch_store, .ctx = &sc, .reps = 1, .flush = 1};
                const probe_stat st = probe_time(o, &r);
                const double moved = (double)blocks * sc.bytes;
                printf("probe case=merge half=epilogue mechanism=%s blocks=%d threads=%d bytes=%.0f median_us=%.2f "
                       "min_us=%.2f max_us=%.2f gbps_over_empty=%.0f\n",
                       names[m], blocks, th, moved, st.med, st.lo, st.hi,
                       gbps_over_empty(moved, st.med, empty_us));
            }
    CUDA_CHECK(cudaFree(sc.dst));

    static const int rows_dims[][2] = {{24, 512}, {24, 256}, {48, 512}, {48, 256}};
    const int splits = 128;
    const size_t o_bytes = (size_t)splits * 48 * 512 * 4, ml_n = (size_t)splits * 48 * 2;
    combine_ctx cc = {.out = kt_dev_malloc((size_t)48 * 512 * 2), .part_o = kt_dev_malloc(o_bytes),
                      .part_ml = kt_dev_malloc(ml_n * 4), .splits = splits};
    float *ml = kt_malloc(ml_n * sizeof(float));
    for (size_t i = 0; i < ml_n; i++)
        ml[i] = i % 2 ? 1.0f + (float)(i % 7) : (float)(i % 13) * 0.25f; /* (m, l): finite m, l > 0 */
    CUDA_CHECK(cudaMemcpy(cc.part_ml, ml, ml_n * sizeof(float), cudaMemcpyHostToDevice));
    free(ml);
    CUDA_CHECK(cudaMemset(cc.part_o, 0, o_bytes));
    for (size_t k = 0; k < sizeof rows_dims / sizeof rows_dims[0]; k++)
        for (int fl = 0; fl < 2; fl++) {
            cc.rows = rows_dims[k][0], cc.v_dim = rows_dims[k][1];
            probe_run r = {.fn = launch_combine, .ctx = &cc, .reps = 1, .flush = fl};
            const probe_stat st = probe_time(o, &r);
            const double moved = (double)splits * cc.rows * cc.v_dim * 4;
            printf("probe case=merge half=combine splits=%d rows=%d v_dim=%d partials=%s bytes=%.0f median_us=%.2f "
                   "min_us=%.2f max_us=%.2f gbps_over_empty=%.0f\n",
                   splits, cc.rows, cc.v_dim, fl ? "flushed" : "l2", moved, st.med, st.lo, st.hi,
                   gbps_over_empty(moved, st.med, empty_us));
        }
    CUDA_CHECK(cudaFree(cc.out));
    CUDA_CHECK(cudaFree(cc.part_o));
    CUDA_CHECK(cudaFree(cc.part_ml));
}

int kt_run_probe(const kt_opts *o)
{
    if (!o->kernel || strcmp(o->kernel, "probe") != 0)
        return 0; /* explicit only: it times, it does not validate */
    g_flush_clean = o->flush_clean;
    double copy_gbps = 0.0, empty_us = 0.0;
    probe_device(o, &copy_gbps, &empty_us);
    if (!o->filter || strstr("loads", o->filter))
        probe_loads(o, empty_us);
    if (!o->filter || strstr("merge", o->filter))
        probe_merge(o, empty_us);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!o->filter || strstr(shapes[i].name, o->filter))
            probe_shape_run(o, &shapes[i], copy_gbps, empty_us);
    kt_cases++;
    return 0;
}

/* Compute ops: the probed law of the op's class, a measured per-kind table, or the roofline with a kernel
 * floor and a shape-dependent tensor efficiency, in that order. Formulas in docs/model.md ("Compute ops",
 * "Probed compute laws"). */
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------- measured tables ---------------- */

const char *model_table_check(const cfg_sys_table *t)
{
    static _Thread_local char why[160];
    if (t->n_bytes != t->n_us) {
        snprintf(why, sizeof(why), "bytes has %d value(s) but us has %d", t->n_bytes, t->n_us);
        return why;
    }
    for (int i = 1; i < t->n_bytes; i++) {
        if (!(t->bytes[i] > t->bytes[i - 1])) {
            snprintf(why, sizeof(why), "bytes must be strictly increasing (bytes[%d]=%g after %g)", i, t->bytes[i],
                     t->bytes[i - 1]);
            return why;
        }
    }
    return "";
}

double model_table_eval(const cfg_sys_table *t, double x, double (*formula)(void *ctx, double bytes), void *ctx)
{
    const int n = t->n_bytes;
    if (n <= 0)
        return NAN;
    if (x < t->bytes[0] || x > t->bytes[n - 1] || n == 1) {
        const int end = x < t->bytes[0] ? 0 : n - 1;
        const double xe = t->bytes[end], ye = t->us[end];
        if (x == xe)
            return ye;
        if (formula) {
            /* The measured point fixes the level, the formula the shape away from it. */
            double y = ye + formula(ctx, x) - formula(ctx, xe);
            return y > 0 ? y : 0;
        }
        return x > xe ? ye * x / xe : ye;
    }
    int i = 1;
    while (i < n - 1 && t->bytes[i] < x)
        i++;
    const double l0 = log(t->bytes[i - 1]), l1 = log(t->bytes[i]);
    const double f = (log(x) - l0) / (l1 - l0);
    return t->us[i - 1] + f * (t->us[i] - t->us[i - 1]);
}

/* ---------------- compute ops ---------------- */

static double mem_bw_bytes_per_us(const cfg_system *sys, bool in_l2)
{
    /* GB/s = 1e3 bytes/us. */
    return in_l2 ? sys->gpu.l2_bw_gbs * 1e3 : sys->gpu.mem_bw_gbs * sys->gpu.mem_efficiency * 1e3;
}

double model_op_mem_us(const cfg_system *sys, const plan_op *op, bool in_l2)
{
    if (plan_op_is_collective(op->kind))
        return 0.0;
    return (op->bytes_read + op->bytes_written) / mem_bw_bytes_per_us(sys, in_l2);
}

/* Rows one tensor-core tile sees: what decides how full the tiles are. */
static double tile_rows(const plan_op *op)
{
    switch (op->kind) {
    case PLAN_OP_GEMM: return (double)op->m;
    case PLAN_OP_GROUPED_GEMM: return op->batch > 0 ? (double)op->m / op->batch : (double)op->m;
    case PLAN_OP_ATTENTION:
        /* MLA decode: every head reads the one shared latent, so heads stack into the tile's rows;
         * GQA: the heads that share one KV head do. */
        if (op->kv_shared)
            return (double)op->q_len * op->heads;
        return (double)op->q_len * (op->kv_heads > 0 ? (double)op->heads / op->kv_heads : 1.0);
    default: return 0.0;
    }
}

static double peak_tflops(const cfg_system *sys, const plan_op *op, const char **what)
{
    switch (op->kind) {
    case PLAN_OP_GEMM:
    case PLAN_OP_GROUPED_GEMM:
        /* W4A16 dequantises to bf16 and multiplies on bf16 tensor cores; block-FP8 runs fp8 GEMMs. */
        if (op->wdtype == CFG_DT_FP8) {
            *what = "fp8 tensor";
            return sys->gpu.tflops.fp8;
        }
        if (op->wdtype == CFG_DT_FP32) {
            *what = "fp32";
            return sys->gpu.tflops.fp32;
        }
        *what = "bf16 tensor";
        return sys->gpu.tflops.bf16;
    case PLAN_OP_ATTENTION: *what = "bf16 tensor"; return sys->gpu.tflops.bf16;
    default: *what = "fp32"; return sys->gpu.tflops.fp32;
    }
}


/* t_compute of an op with flops (0 without): flops / (peak x gemm_efficiency x tile fill). */
static double compute_us(const cfg_system *sys, const plan_op *op, model_terms *terms)
{
    if (op->flops <= 0)
        return 0.0;
    const char *what = "";
    const double peak = peak_tflops(sys, op, &what);
    double eff = 1.0;
    const double rows = tile_rows(op);
    if (rows > 0) {
        const double fill = rows / sys->gpu.gemm_tile_m;
        eff = sys->gpu.gemm_efficiency * (fill < 1.0 ? fill : 1.0);
        model_term_add(terms, "tile_fill", fill < 1.0 ? fill : 1.0, "", "min(1, rows %.0f / gemm_tile_m %d)", rows,
                       sys->gpu.gemm_tile_m);
    }
    const double t_cmp = op->flops / (peak * 1e6 * eff);
    model_term_add(terms, "t_compute", t_cmp, "us", "flops %.3g / (%s %.0f TFLOP/s x efficiency %.3f)", op->flops,
                   what, peak, eff);
    return t_cmp;
}

/* The probed law of the op's class when it applies (measured.use on, the class's table has points). */
static const cfg_law_table *op_law(const cfg_system *sys, const plan_op *op, double *rows)
{
    if (!sys->measured.use || !plan_op_is_compute(op->kind))
        return NULL;
    const int c = plan_op_law_class(op, rows);
    if (c < 0)
        return NULL;
    const cfg_law_table *t = &sys->measured.compute[c];
    return t->n_us > 0 && t->n_rows == t->n_us && t->n_bytes == t->n_us ? t : NULL;
}

/* The op kind's measured table when it applies (measured.use on, the table has points). */
static const cfg_sys_table *op_table(const cfg_system *sys, const plan_op *op)
{
    if (!sys->measured.use || !plan_op_is_compute(op->kind))
        return NULL;
    const cfg_sys_table *t = &sys->measured.ops[op->kind];
    return t->n_bytes > 0 && t->n_bytes == t->n_us ? t : NULL;
}

const char *model_op_source(const cfg_system *sys, const plan_op *op)
{
    double rows;
    return op_law(sys, op, &rows) ? "probed" : op_table(sys, op) ? "measured" : "formula";
}

/* An op priced by its class's probed law. GEMMs with more rows than any probed point keep the formula's
 * compute term as a floor: the law holds its largest rows value flat, and prefill-sized rows are
 * compute-bound where the probed decode shapes were not. */
static double probed_us(const cfg_system *sys, const plan_op *op, const cfg_law_table *t, double rows, double bytes,
                        model_terms *terms)
{
    const int c = plan_op_law_class(op, NULL);
    model_term_add(terms, "bytes", bytes, "B", "read %.0f + written %.0f", op->bytes_read, op->bytes_written);
    model_term_add(terms, "rows", rows, "", "law measured.compute.%s (%d points); rows: docs/model.md \"Probed "
                   "compute laws\"", cfg_law_names[c], t->n_us);
    if (op->kind == PLAN_OP_ATTENTION)
        model_attention_coords(sys, t, op, &rows, &bytes, terms);
    const double width = plan_op_law_width(op);
    if (t->n_width)
        model_term_add(terms, "width", width, "", "per-expert min(stand-in n %lld, k %lld)", plan_op_effective_n(op),
                       op->k);
    /* One block per row (norm, embedding): a rows group is read at the op's width, not its bytes. */
    const bool per_row = op->kind == PLAN_OP_NORM || op->kind == PLAN_OP_EMBEDDING;
    double us = per_row ? model_law_eval_per_row(t, op, rows, terms) : model_law_eval(t, rows, bytes, width, terms);
    const double top = t->rows[t->n_rows - 1];
    if ((op->kind == PLAN_OP_GEMM || op->kind == PLAN_OP_GROUPED_GEMM) && rows > top) {
        const double t_cmp = compute_us(sys, op, terms);
        const bool cmp = t_cmp > us;
        us = cmp ? t_cmp : us;
        model_term_add(terms, "t_kernel", us, "us", "max(t_law, t_compute): rows %.0f above the largest probed %.0f; "
                       "%s-bound", rows, top, cmp ? "compute" : "law");
    }
    return us;
}

double model_op_us(const cfg_system *sys, const plan_op *op, bool in_l2, model_terms *terms, const char **source)
{
    const double bytes = op->bytes_read + op->bytes_written;
    double rows;
    const cfg_law_table *law = op_law(sys, op, &rows);
    if (law) {
        if (source)
            *source = "probed";
        return probed_us(sys, op, law, rows, bytes, terms);
    }
    const cfg_sys_table *table = op_table(sys, op);
    if (table) {
        double us = model_table_eval(table, bytes, NULL, NULL);
        model_term_add(terms, "bytes", bytes, "B", "read + written");
        model_term_add(terms, "t_measured", us, "us", "measured.ops.%s (%d points): %s", plan_op_kind_names[op->kind],
                       table->n_bytes, table->source ? table->source : "");
        if (source)
            *source = "measured";
        return us;
    }
    if (source)
        *source = "formula";
    const double bw = mem_bw_bytes_per_us(sys, in_l2);
    const double t_mem = sys->gpu.mem_latency_us + bytes / bw;
    if (terms) {
        model_term_add(terms, "bytes", bytes, "B", "read %.0f + written %.0f", op->bytes_read, op->bytes_written);
        model_term_add(terms, "bandwidth", bw / 1e3, "GB/s",
                       in_l2 ? "L2 (the cycle fits in L2)" : "mem_bw_gbs %.0f x mem_efficiency %.2f", sys->gpu.mem_bw_gbs,
                       sys->gpu.mem_efficiency);
        model_term_add(terms, "t_mem", t_mem, "us", "mem_latency_us %.2f + bytes / bandwidth", sys->gpu.mem_latency_us);
    }
    const double t_cmp = compute_us(sys, op, terms);
    const double floor_us = sys->gpu.kernel_floor_us;
    double t = floor_us;
    const char *bound = "floor";
    if (t_mem > t) {
        t = t_mem;
        bound = "memory";
    }
    if (t_cmp > t) {
        t = t_cmp;
        bound = "compute";
    }
    model_term_add(terms, "t_kernel", t, "us", "max(floor %.2f, t_mem, t_compute): %s-bound", floor_us, bound);
    return t;
}

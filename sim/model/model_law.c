/* Probed compute laws: the check and the evaluation of a class's measured points (docs/model.md "Probed
 * compute laws"); which class an op belongs to is plan_op_law_class (sim/plan), shared with the probe. */
#include "model.h"

#include "../plan/plan_attn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Within one width (the whole table when it has none) the point i continues point i - 1's group:
 * rows ascending, bytes strictly increasing within one rows value. */
static const char *order_check(const cfg_law_table *t, int i, char *why, size_t len)
{
    if (t->rows[i] < t->rows[i - 1]) {
        snprintf(why, len, "rows must be ascending%s (rows[%d]=%g after %g)", t->n_width ? " within a width" : "", i,
                 t->rows[i], t->rows[i - 1]);
        return why;
    }
    if (t->rows[i] == t->rows[i - 1] && !(t->bytes[i] > t->bytes[i - 1])) {
        snprintf(why, len, "bytes must be strictly increasing within rows %g (bytes[%d]=%g after %g)", t->rows[i], i,
                 t->bytes[i], t->bytes[i - 1]);
        return why;
    }
    return NULL;
}

const char *model_law_check(const cfg_law_table *t)
{
    static _Thread_local char why[200];
    if (t->n_rows != t->n_bytes || t->n_bytes != t->n_us) {
        snprintf(why, sizeof(why), "rows, bytes and us must have one value per point (rows has %d, bytes %d, us %d)",
                 t->n_rows, t->n_bytes, t->n_us);
        return why;
    }
    if (t->n_width && t->n_width != t->n_us) {
        snprintf(why, sizeof(why), "width, when given, must have one value per point (width has %d, us %d)",
                 t->n_width, t->n_us);
        return why;
    }
    for (int i = 0; i < t->n_us; i++) {
        /* The law interpolates in log(rows) and log(width) and scales by bytes: all must be positive (NaN
         * fails too). */
        if (!(t->rows[i] > 0) || !(t->bytes[i] > 0)) {
            snprintf(why, sizeof(why), "rows and bytes must be > 0 (point %d: rows %g, bytes %g)", i, t->rows[i],
                     t->bytes[i]);
            return why;
        }
        if (t->n_width && !(t->width[i] > 0)) {
            snprintf(why, sizeof(why), "width must be > 0 (point %d: width %g)", i, t->width[i]);
            return why;
        }
        if (!(t->us[i] >= 0)) {
            snprintf(why, sizeof(why), "us must be >= 0 (us[%d]=%g)", i, t->us[i]);
            return why;
        }
        if (i == 0)
            continue;
        if (t->n_width && t->width[i] < t->width[i - 1]) {
            snprintf(why, sizeof(why), "width must be ascending (width[%d]=%g after %g)", i, t->width[i],
                     t->width[i - 1]);
            return why;
        }
        if ((!t->n_width || t->width[i] == t->width[i - 1]) && order_check(t, i, why, sizeof(why)))
            return why;
    }
    return "";
}

/* f_j(B): the time at `bytes` of the points first..first+n-1 (one rows value), and the rule used. */
static double group_eval(const cfg_law_table *t, int first, int n, double bytes, char *why, size_t len)
{
    const double *b = t->bytes + first, *u = t->us + first;
    if (bytes <= b[0]) {
        /* Below the smallest size measured the op is latency-bound: it does not get faster. */
        snprintf(why, len, "bytes %.4g at or below the smallest point %.4g: its time", bytes, b[0]);
        return u[0];
    }
    if (n == 1) {
        snprintf(why, len, "bytes %.4g above the one point %.4g: its time x bytes / %.4g", bytes, b[0], b[0]);
        return u[0] * bytes / b[0];
    }
    if (bytes > b[n - 1]) {
        double s = (u[n - 1] - u[n - 2]) / (b[n - 1] - b[n - 2]);
        const bool last = s > 0;
        if (!last) /* noise made the last segment flat or falling: the average rate of the largest point */
            s = u[n - 1] / b[n - 1];
        snprintf(why, len, "bytes %.4g above the largest %.4g: + %.4g us/MB (%s)", bytes, b[n - 1], s * 1e6,
                 last ? "last segment's slope" : "last segment not rising: average rate");
        return u[n - 1] + (bytes - b[n - 1]) * s;
    }
    int i = 1;
    while (b[i] < bytes) /* b[0] < bytes <= b[n-1]: stops at n-1 at the latest */
        i++;
    snprintf(why, len, "bytes %.4g between %.4g and %.4g (linear)", bytes, b[i - 1], b[i]);
    return u[i - 1] + (bytes - b[i - 1]) / (b[i] - b[i - 1]) * (u[i] - u[i - 1]);
}

/* The points from `first` (before `end`) that share first's rows value. */
static int group_len(const cfg_law_table *t, int first, int end)
{
    int k = first + 1;
    while (k < end && t->rows[k] == t->rows[first])
        k++;
    return k - first;
}

/* The points from `first` that share first's width (all of them when the table has no widths). */
static int width_len(const cfg_law_table *t, int first)
{
    if (!t->n_width)
        return t->n_us - first;
    int k = first + 1;
    while (k < t->n_us && t->width[k] == t->width[first])
        k++;
    return k - first;
}

/* The bytes at which a rows group is read: the op's own, or (a kernel of one block per row) those of the
 * op at that group's rows. */
typedef struct law_bytes {
    double bytes;
    const plan_op *per_row; /* NULL: `bytes` at every rows value */
} law_bytes;

static double bytes_at(const law_bytes *lb, double rows)
{
    if (!lb->per_row)
        return lb->bytes;
    plan_op o = *lb->per_row;
    o.m = (long long)(rows + 0.5);
    plan_op_finalize(&o);
    return o.bytes_read + o.bytes_written;
}

static double group_term(const cfg_law_table *t, int first, int end, const law_bytes *lb, const char *at,
                         model_terms *terms)
{
    char why[192], name[48];
    const double bytes = bytes_at(lb, t->rows[first]);
    const double f = group_eval(t, first, group_len(t, first, end), bytes, why, sizeof(why));
    snprintf(name, sizeof(name), "law@%srows %.6g", at, t->rows[first]);
    model_term_add(terms, name, f, "us", "%s", why);
    return f;
}

/* The law of the points [first, end) (one width): rows in log between two rows values, bytes within. */
static double rows_eval(const cfg_law_table *t, int first, int end, double rows, const law_bytes *lb, const char *at,
                        model_terms *terms)
{
    /* lo: the first point of the last group whose rows <= `rows` (or of the first group when below all). */
    int lo = first;
    for (int k = first + group_len(t, first, end); k < end && t->rows[k] <= rows; k += group_len(t, k, end))
        lo = k;
    const int hi = lo + group_len(t, lo, end);
    const double r_lo = t->rows[lo];
    char name[48];
    snprintf(name, sizeof(name), "t_law%s%.*s", at[0] ? "@" : "", (int)(at[0] ? strlen(at) - 1 : 0), at);
    double us;
    if (rows <= r_lo || hi >= end) {
        us = group_term(t, lo, end, lb, at, terms);
        model_term_add(terms, name, fmax(us, 0.0), "us", "rows %.4g %s rows %.4g", rows,
                       rows == r_lo ? "at the points of" : rows < r_lo ? "below the smallest, the law of" :
                       "above the largest, the law of", r_lo);
    } else {
        const double r_hi = t->rows[hi];
        const double w = (log(rows) - log(r_lo)) / (log(r_hi) - log(r_lo));
        const double f_lo = group_term(t, lo, end, lb, at, terms), f_hi = group_term(t, hi, end, lb, at, terms);
        us = f_lo + w * (f_hi - f_lo);
        model_term_add(terms, name, fmax(us, 0.0), "us", "rows %.4g between %.4g and %.4g (log): w %.4f", rows,
                       r_lo, r_hi, w);
    }
    return fmax(us, 0.0);
}

static double law_eval(const cfg_law_table *t, double rows, const law_bytes *lb, double width, model_terms *terms)
{
    const int n = t->n_us;
    if (n <= 0 || t->n_rows != n || t->n_bytes != n || (t->n_width && t->n_width != n))
        return NAN;
    if (!t->n_width)
        return rows_eval(t, 0, n, rows, lb, "", terms);
    /* lo: the first point of the last width <= `width` (or of the first width when below all, or when
     * the op has none). Between two widths, log-linear in width at the op's rows and bytes. */
    int lo = 0;
    for (int k = width_len(t, 0); k < n && t->width[k] <= width; k += width_len(t, k))
        lo = k;
    const int hi = lo + width_len(t, lo);
    const double w_lo = t->width[lo];
    char at[32];
    snprintf(at, sizeof(at), "w%.6g ", w_lo);
    if (width <= w_lo || hi >= n) {
        const double us = rows_eval(t, lo, hi, rows, lb, at, terms);
        model_term_add(terms, "t_law", us, "us", "width %.4g %s width %.4g", width,
                       width == w_lo ? "at the points of" : width < w_lo ? "below the smallest, the law of" :
                       "above the largest, the law of", w_lo);
        return us;
    }
    const double w_hi = t->width[hi];
    const double f = (log(width) - log(w_lo)) / (log(w_hi) - log(w_lo));
    const double u_lo = rows_eval(t, lo, hi, rows, lb, at, terms);
    snprintf(at, sizeof(at), "w%.6g ", w_hi);
    const double u_hi = rows_eval(t, hi, hi + width_len(t, hi), rows, lb, at, terms);
    const double us = fmax(u_lo + f * (u_hi - u_lo), 0.0);
    model_term_add(terms, "t_law", us, "us", "width %.4g between %.4g and %.4g (log): w %.4f", width, w_lo, w_hi, f);
    return us;
}

double model_law_eval(const cfg_law_table *t, double rows, double bytes, double width, model_terms *terms)
{
    const law_bytes lb = {.bytes = bytes};
    return law_eval(t, rows, &lb, width, terms);
}

double model_law_eval_per_row(const cfg_law_table *t, const plan_op *op, double rows, model_terms *terms)
{
    const law_bytes lb = {.bytes = op->bytes_read + op->bytes_written, .per_row = op};
    return law_eval(t, rows, &lb, 0.0, terms);
}

/* Attention priced by the decode kernel's launch (docs/model.md "Probed compute laws", "Attention: what
 * each SM runs"). The probe times one sequence at a time; its kernel splits the keys over every SM, so a
 * probe point is one round of blocks. A batch is another launch: kernels/vp_attention_plan.cu gives each
 * (sequence, row chunk) ceil(slots / groups) splits, so the grid can hold more blocks than the SMs (a
 * second round), and each block reads the keys of its own split. When the splits are set by the slots
 * (the grid fills the GPU), the time follows the keys the busiest SM reads, at the rows one block holds:
 * the op is priced as the one-chunk single sequence whose kernel gives every SM that many keys. When the
 * splits are set by the keys (too few to fill the GPU) the blocks are as many as the bytes say, and the
 * op keeps (chunked rows, bytes). Without the device facts (gpu.smem_*_kib 0) nothing changes.
 * Past one block's rows the op runs in row chunks that read the same keys. Where the law `t` has points
 * at the op's own rows, those points hold what the chunks share (the second chunk's keys from L2 when
 * they fit there), and the one sequence keeps the op's rows and chunks; elsewhere it is one chunk of one
 * block's rows reading every chunk's keys, each chunk's from DRAM. */
static bool law_has_rows(const cfg_law_table *t, double rows)
{
    for (int i = 0; t && i < t->n_rows; i++)
        if (t->rows[i] == rows)
            return true;
    return false;
}

void model_attention_coords(const cfg_system *sys, const cfg_law_table *t, const plan_op *op, double *rows,
                            double *bytes, model_terms *terms)
{
    const plan_attn_device dev = {.sms = sys->gpu.sms, .smem_sm = (long long)sys->gpu.smem_sm_kib << 10,
                                  .smem_block = (long long)sys->gpu.smem_block_kib << 10, .cc = sys->gpu.cc};
    plan_attn_launch l;
    if (op->kind != PLAN_OP_ATTENTION || plan_attention_launch(op, &dev, &l) != 0) {
        if (op->kind == PLAN_OP_ATTENTION)
            model_term_add(terms, "launch", 0, "", "kernel launch not computed (gpu.smem_sm_kib / smem_block_kib "
                           "not known): the batch read as one sequence of its bytes");
        return;
    }
    model_term_add(terms, "launch", (double)l.blocks, "blocks", "%s kernel: %d splits of %lld keys, %d x %d rows, "
                   "%d value chunk(s), %d per SM on %d SMs (kernels/vp_attention_plan.cu's arithmetic)",
                   l.kernel == 3 ? "wgmma" : "general/mma.sync", l.splits, l.keys_per_split, l.row_chunks, l.rows_blk,
                   l.dv_chunks, l.blocks_per_sm, dev.sms);
    if (!l.slot_limited || l.blocks < 1) {
        model_term_add(terms, "launch_rule", 0, "", "splits set by the keys (the grid does not fill the GPU): "
                       "chunked rows and the op's bytes");
        return;
    }
    const int kv_heads = op->kv_shared ? 1 : op->kv_heads;
    const long long used = l.blocks < l.slots ? l.blocks : l.slots;
    const double per_sm = ceil((double)l.blocks / dev.sms), per_sm_one = ceil((double)used / dev.sms);
    /* The single sequence: one round of `used` blocks, each SM reading per_sm blocks' keys; its row
     * chunks (own_rows) share each split's keys, else one chunk holds them all. */
    const bool own_rows = l.rows <= 32 || law_has_rows(t, (double)l.rows);
    const int eq_rows = own_rows ? l.rows : l.rows_blk, eq_chunks = own_rows && l.rows > 32 ? l.row_chunks : 1;
    const double keys = (double)l.keys_per_split * (double)used /
                        ((double)kv_heads * l.dv_chunks * eq_chunks) * per_sm / per_sm_one;
    plan_op eq = *op;
    eq.batch = 1;
    eq.q_len = 1;
    eq.heads = eq_rows * kv_heads;
    eq.kv_len = (long long)(keys + 0.5);
    plan_op_finalize(&eq);
    *rows = (double)eq_rows;
    *bytes = eq.bytes_read + eq.bytes_written;
    model_term_add(terms, "sm_keys", plan_attention_sm_keys(&l, dev.sms), "keys", "the busiest SM: %.0f block(s) "
                   "of %lld keys", per_sm, l.keys_per_split);
    model_term_add(terms, "launch_rule", keys, "keys", "splits set by the slots: priced as one sequence of that "
                   "many keys at %.0f rows (%d chunk(s) %s; %.4g bytes)", *rows, eq_chunks,
                   eq_chunks > 1 ? "sharing its keys, as the probe's points at these rows" : "of one block", *bytes);
}

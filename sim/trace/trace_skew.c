/* trace_skew: the ranks' traces side by side — their cycles matched, each collective call's time split
 * into wire time and waiting for peers, the arrival skew per call, and the breakdown averaged.
 *
 * Why durations and not clocks: every rank leaves a collective at about the same moment (the data it
 * waits for is the last rank's), so a rank's kernel duration is the wire time plus how long it waited
 * for the last arrival; the shortest duration of a call is its wire time and the longest less the
 * shortest its arrival skew. This holds across hosts whose clocks disagree. Where the files carry base
 * times (one host's ranks share CLOCK_REALTIME), the start times give the skew a second way
 * (`clock_skew_p50_us`), which checks the assumption. */
#include "trace_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_coll(int kind) { return kind >= 0 && plan_op_is_collective((plan_op_kind)kind); }

/* The first phase (index into r->phases) of each complete cycle. */
static int *cycle_starts(const trace_rank *r)
{
    int *first = util_xmalloc(((size_t)r->n_cycles + 1) * sizeof(int));
    const trace_phase *ph = r->phases.data;
    for (int c = 0; c < r->n_cycles; c++)
        first[c] = -1;
    for (int i = (int)r->phases.count - 1; i >= 0; i--)
        if (ph[i].cycle >= 0)
            first[ph[i].cycle] = i;
    return first;
}

static double offset_us(const trace_rank *r, const trace_rank *r0)
{
    return r->have_base && r0->have_base ? (double)(r->base_ns - r0->base_ns) / 1e3 : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* match[m * n + r]: rank r's cycle of matched cycle m. Returns the count, or -1 with why. */
static int match_cycles(trace_rank *R, int n, int **first, bool clocks, int **match_out, trace_error *err)
{
    const trace_rank *r0 = &R[0];
    int *match = util_xmalloc(((size_t)r0->n_cycles * (size_t)n + 1) * sizeof(int));
    int m = 0;
    const trace_phase *p0 = r0->phases.data;
    /* half the median cycle length: a cycle further off than that on another rank is not this one */
    double *len = util_xmalloc(((size_t)r0->n_cycles + 1) * sizeof(double));
    const int per = r0->draft_steps ? r0->draft_steps + 2 : 1;
    for (int c = 0; c < r0->n_cycles; c++)
        len[c] = p0[first[0][c] + per - 1].end - p0[first[0][c]].start;
    qsort(len, (size_t)r0->n_cycles, sizeof(double), cmp_double);
    const double tol = 0.5 * len[r0->n_cycles / 2];
    free(len);
    if (!clocks) {
        for (int r = 1; r < n; r++)
            if (R[r].n_cycles != r0->n_cycles) {
                snprintf(err->msg, sizeof(err->msg), "ranks' files from different steps: %s has %d complete cycles, "
                         "%s %d, and the files carry no base time to match them by (baseTimeNanoseconds)",
                         r0->path, r0->n_cycles, R[r].path, R[r].n_cycles);
                free(match);
                return -1;
            }
    }
    for (int c = 0; c < r0->n_cycles; c++) {
        const double t0 = p0[first[0][c]].start;
        bool all = true;
        for (int r = 0; r < n && all; r++) {
            if (!clocks) {
                match[m * n + r] = c;
                continue;
            }
            const trace_phase *pr = R[r].phases.data;
            const double off = offset_us(&R[r], r0);
            int best = -1;
            double bd = tol;
            for (int j = 0; j < R[r].n_cycles; j++) {
                const double d = fabs(pr[first[r][j]].start + off - t0);
                if (d < bd) {
                    bd = d;
                    best = j;
                }
            }
            all = best >= 0;
            match[m * n + r] = best;
        }
        m += all;
    }
    if (m == 0) {
        const trace_rank *r1 = &R[1];
        const trace_phase *p1 = r1->phases.data;
        snprintf(err->msg, sizeof(err->msg), "ranks' files from different steps: no cycle of %s (from %.0f us) lies "
                 "within %.0f us of one of %s (from %.0f us on the same clock): profile the same steps on every rank",
                 r0->path, p0[first[0][0]].start, tol, r1->path,
                 r1->n_cycles ? p1[first[1][0]].start + offset_us(r1, r0) : 0.0);
        free(match);
        return -1;
    }
    *match_out = match;
    return m;
}

typedef struct coll_acc {
    double call, wire, wait;
    int n_calls; /* call x rank samples */
    util_vec skew, clock_skew; /* double per call */
    int kind, calls_per_cycle;
} coll_acc;

static int coll_slot(coll_acc *acc, int *n_acc, int kind)
{
    for (int i = 0; i < *n_acc; i++)
        if (acc[i].kind == kind)
            return i;
    if (*n_acc == TRACE_MAX_COLLS)
        return -1;
    coll_acc *a = &acc[(*n_acc)++];
    memset(a, 0, sizeof(*a));
    a->kind = kind;
    util_vec_init(&a->skew, sizeof(double));
    util_vec_init(&a->clock_skew, sizeof(double));
    return *n_acc - 1;
}

/* The collective kernels of phase `ph` of rank r (indices into its kernels), in time order. */
static int phase_colls(const trace_rank *r, int ph, int **out)
{
    const trace_phase *p = (const trace_phase *)r->phases.data + ph;
    const trace_kernel *k = r->kernels.data;
    int *v = util_xmalloc(((size_t)p->n + 1) * sizeof(int)), n = 0;
    for (int i = p->first; i < p->first + p->n; i++)
        if (k[i].phase == ph && is_coll(k[i].kind))
            v[n++] = i;
    *out = v;
    return n;
}

/* The calls of one phase in one matched cycle, across the ranks. */
static int phase_calls(trace_rank *R, int n, const int *ph_of_rank, int slot, coll_acc *acc, int *n_acc,
                       trace_summary *S, trace_error *err)
{
    int **idx = util_xmalloc((size_t)n * sizeof(int *)), *cnt = util_xmalloc((size_t)n * sizeof(int));
    int rc = 0;
    for (int r = 0; r < n; r++)
        cnt[r] = phase_colls(&R[r], ph_of_rank[r], &idx[r]);
    const trace_kernel *k0 = R[0].kernels.data;
    for (int r = 1; r < n && !rc; r++) {
        const trace_kernel *kr = R[r].kernels.data;
        bool same = cnt[r] == cnt[0];
        for (int q = 0; same && q < cnt[0]; q++)
            same = kr[idx[r][q]].kind == k0[idx[0][q]].kind;
        if (!same) {
            snprintf(err->msg, sizeof(err->msg), "ranks' files from different steps: phase %s of a matched cycle has "
                     "%d collectives in %s and %d in %s (or in another order)",
                     S->phases[slot].name, cnt[0], R[0].path, cnt[r], R[r].path);
            rc = -1;
        }
    }
    double *d = util_xmalloc((size_t)n * sizeof(double));
    for (int q = 0; q < cnt[0] && !rc; q++) {
        const int a = coll_slot(acc, n_acc, k0[idx[0][q]].kind);
        if (a < 0)
            continue;
        double lo = 1e300, hi = -1e300, slo = 1e300, shi = -1e300;
        int last = 0;
        for (int r = 0; r < n; r++) {
            const trace_kernel *kk = (const trace_kernel *)R[r].kernels.data + idx[r][q];
            d[r] = kk->dur;
            if (d[r] < lo) {
                lo = d[r];
                last = r;
            }
            hi = d[r] > hi ? d[r] : hi;
            const double s = kk->ts + offset_us(&R[r], &R[0]);
            slo = s < slo ? s : slo;
            shi = s > shi ? s : shi;
        }
        for (int r = 0; r < n; r++) {
            acc[a].call += d[r];
            acc[a].wire += lo;
            acc[a].wait += d[r] - lo;
            acc[a].n_calls++;
            if (r < 64 && (acc[a].kind == PLAN_OP_ALLREDUCE || acc[a].kind == PLAN_OP_ALLREDUCE_NORM))
                S->wait_by_rank_us[r] += d[r] - lo;
        }
        if (last < 64 && (acc[a].kind == PLAN_OP_ALLREDUCE || acc[a].kind == PLAN_OP_ALLREDUCE_NORM) && n > 1)
            S->last_by_rank[last]++;
        *(double *)util_vec_push(&acc[a].skew) = hi - lo;
        *(double *)util_vec_push(&acc[a].clock_skew) = shi - slo;
    }
    free(d);
    for (int r = 0; r < n; r++)
        free(idx[r]);
    free(idx);
    free(cnt);
    return rc;
}

static void finish_colls(trace_phase_stats *ps, coll_acc *acc, int n_acc, int cycles, int ranks, bool clocks)
{
    ps->n_colls = n_acc;
    for (int i = 0; i < n_acc; i++) {
        trace_coll_stats *c = &ps->colls[i];
        const coll_acc *a = &acc[i];
        const int ns = (int)a->skew.count;
        const double *sk = a->skew.data;
        c->kind = a->kind;
        c->calls = cycles > 0 ? ns / cycles : 0;
        c->n_samples = ns;
        c->call_us = a->n_calls ? a->call / a->n_calls : 0.0;
        c->wire_us = a->n_calls ? a->wire / a->n_calls : 0.0;
        c->wait_us = a->n_calls ? a->wait / a->n_calls : 0.0;
        double s = 0;
        for (int j = 0; j < ns; j++)
            s += sk[j];
        c->skew_mean_us = ns ? s / ns : 0.0;
        c->skew_p10_us = ns ? util_percentile(sk, ns, 0.1) : 0.0;
        c->skew_p50_us = ns ? util_percentile(sk, ns, 0.5) : 0.0;
        c->skew_p90_us = ns ? util_percentile(sk, ns, 0.9) : 0.0;
        c->skew_max_us = ns ? util_percentile(sk, ns, 1.0) : 0.0;
        c->clock_skew_p50_us = ns && clocks && ranks > 1 ? util_percentile(a->clock_skew.data, ns, 0.5) : NAN;
    }
    for (int i = 0; i < n_acc; i++) {
        util_vec_free(&acc[i].skew);
        util_vec_free(&acc[i].clock_skew);
    }
}

static int cmp_unmapped(const void *a, const void *b)
{
    const trace_unmapped *x = a, *y = b;
    return (x->us < y->us) - (x->us > y->us);
}

int trace_summarize(trace_rank *R, int n, trace_summary *S, trace_error *err)
{
    memset(S, 0, sizeof(*S));
    S->ranks = n;
    S->draft_steps = R[0].draft_steps;
    S->marked = R[0].marked;
    S->clocks = true;
    for (int r = 0; r < n; r++) {
        S->clocks &= R[r].have_base;
        if (R[r].draft_steps != R[0].draft_steps) {
            snprintf(err->msg, sizeof(err->msg), "ranks' files from different runs: %s has %d draft steps per cycle, "
                     "%s %d", R[0].path, R[0].draft_steps, R[r].path, R[r].draft_steps);
            return -1;
        }
        const trace_span *l = R[r].launches.data;
        for (size_t i = 0; i < R[r].launches.count && !S->graph; i++)
            S->graph = strncmp(trace_name(&R[r], l[i].name), "cudaGraphLaunch", 15) == 0;
    }
    if (n == 1)
        S->clocks = false;
    const int per = S->draft_steps ? S->draft_steps + 2 : 1;
    if (per > TRACE_MAX_PHASES) {
        snprintf(err->msg, sizeof(err->msg), "%s: %d phases per cycle; at most %d", R[0].path, per, TRACE_MAX_PHASES);
        return -1;
    }
    int **first = util_xmalloc((size_t)n * sizeof(int *));
    for (int r = 0; r < n; r++)
        first[r] = cycle_starts(&R[r]);
    int *match = NULL, rc = 0;
    const bool clocks_for_match = S->clocks;
    const int m = n == 1 ? R[0].n_cycles : match_cycles(R, n, first, clocks_for_match, &match, err);
    if (n == 1) {
        match = util_xmalloc(((size_t)m + 1) * sizeof(int));
        for (int c = 0; c < m; c++)
            match[c] = c;
    }
    if (m < 0)
        rc = -1;
    S->cycles = m > 0 ? m : 0;
    S->n_phases = per;
    const trace_phase *p0 = R[0].phases.data;
    for (int j = 0; j < per && !rc; j++) {
        const trace_phase *p = &p0[first[0][0] + j];
        trace_phase_name(p->kind, p->step, S->phases[j].name, sizeof(S->phases[j].name));
        S->phases[j].kind = p->kind;
        S->phases[j].step = p->step;
    }
    double host = 0.0;
    int host_n = 0;
    double *period = util_xcalloc((size_t)(m > 0 ? m : 1), sizeof(double));
    int n_period = 0;
    int *ph_of_rank = util_xmalloc((size_t)n * sizeof(int));
    coll_acc acc[TRACE_MAX_PHASES][TRACE_MAX_COLLS];
    int n_acc[TRACE_MAX_PHASES] = {0};
    for (int c = 0; c < m && !rc; c++) {
        double per_sum = 0.0;
        int per_n = 0;
        for (int r = 0; r < n; r++) {
            const trace_phase *ph = R[r].phases.data;
            const int f = first[r][match[c * n + r]];
            for (int j = 0; j < per; j++) {
                const int idx = f + j;
                trace_stats_phase(&R[r], idx, j == 0 ? NAN : ph[idx - 1].end, &S->phases[j], S);
            }
            if (f > 0) {
                host += ph[f].start - ph[f - 1].end;
                host_n++;
                per_sum += ph[f + per - 1].end - ph[f - 1].end;
                per_n++;
            }
        }
        if (per_n)
            period[n_period++] = per_sum / per_n / 1e3;
        for (int j = 0; j < per && !rc; j++) {
            for (int r = 0; r < n; r++)
                ph_of_rank[r] = first[r][match[c * n + r]] + j;
            rc = phase_calls(R, n, ph_of_rank, j, acc[j], &n_acc[j], S, err);
        }
    }
    const double samples = (double)S->cycles * n;
    for (int j = 0; j < per; j++) {
        if (!rc)
            trace_stats_scale(&S->phases[j], samples);
        finish_colls(&S->phases[j], acc[j], n_acc[j], S->cycles, n, S->clocks);
    }
    if (!rc) {
        S->kernel_us /= samples;
        S->mapped_us /= samples;
        S->unmapped_rest_us /= samples;
        for (int i = 0; i < S->n_unmapped; i++)
            S->unmapped[i].us /= samples;
        qsort(S->unmapped, (size_t)S->n_unmapped, sizeof(trace_unmapped), cmp_unmapped);
        S->host_ms = host_n ? host / host_n / 1e3 : 0.0;
        S->cycle_ms = S->host_ms;
        for (int j = 0; j < per; j++)
            S->cycle_ms += S->phases[j].ms;
        if (n_period) {
            S->cycle_p10_ms = util_percentile(period, n_period, 0.1);
            S->cycle_p50_ms = util_percentile(period, n_period, 0.5);
            S->cycle_p90_ms = util_percentile(period, n_period, 0.9);
        } else
            S->cycle_p10_ms = S->cycle_p50_ms = S->cycle_p90_ms = S->cycle_ms;
        int ar_calls = 0;
        for (int j = 0; j < per; j++)
            for (int i = 0; i < S->phases[j].n_colls; i++)
                if (S->phases[j].colls[i].kind == PLAN_OP_ALLREDUCE || S->phases[j].colls[i].kind == PLAN_OP_ALLREDUCE_NORM)
                    ar_calls += S->phases[j].colls[i].n_samples;
        for (int r = 0; r < n && r < 64; r++)
            S->wait_by_rank_us[r] = ar_calls ? S->wait_by_rank_us[r] / ar_calls : 0.0;
    }
    free(period);
    free(ph_of_rank);
    free(match);
    for (int r = 0; r < n; r++)
        free(first[r]);
    free(first);
    return rc;
}

void trace_summary_free(trace_summary *s)
{
    for (int i = 0; i < s->n_unmapped; i++)
        free(s->unmapped[i].name);
    s->n_unmapped = 0;
}

/* trace_cycles: a rank's kernels cut into forward passes (phases) and those into decode cycles.
 *
 * Two sources, the engine's own first: annotations a marker pattern names (vpsim's fixture, SGLang's
 * EAGLE worker functions) give each phase directly, the GPU work of a CPU range found through the
 * CUPTI correlation id of its launch (a CUDA graph's kernels share their cudaGraphLaunch's id). Without
 * markers, the collective pattern: SGLang's and vLLM's LogitsProcessor at TP > 1 ends every forward
 * pass with the logits all-gather, so passes are cut there (the next pass starting at its embedding
 * kernel, or after the longest idle gap when none is mapped), and the passes with the most allreduces
 * (the target's 2 x layers + 1, against the draft head's few) are the verify passes. A cycle is then
 * draft steps, verify, draft-extend as the plan has it (plan_build.c); one decode pass without
 * speculation. Passes cut by the trace's start or end belong to no complete cycle. */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

static bool is_collective(int kind) { return kind >= 0 && plan_op_is_collective((plan_op_kind)kind); }
static bool is_allreduce(int kind) { return kind == PLAN_OP_ALLREDUCE || kind == PLAN_OP_ALLREDUCE_NORM; }

static trace_phase *add_phase(trace_rank *r, plan_phase_kind kind, int first, int n, bool complete)
{
    trace_phase *p = util_vec_push(&r->phases);
    p->kind = kind;
    p->first = first;
    p->n = n;
    p->cycle = complete ? 0 : -2; /* -2: cut by the trace's edge; set for real by group_cycles */
    return p;
}

/* ---------------- by markers ---------------- */

typedef struct corr_ts {
    long long corr;
    double ts;
} corr_ts;

static int cmp_corr(const void *a, const void *b)
{
    const corr_ts *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

/* The span (index) whose range holds time t: the latest-starting one that does, -1 when none. */
static int span_at(const trace_span *s, const int *idx, int n, double t)
{
    int lo = 0, hi = n; /* first span starting after t */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (s[idx[mid]].ts <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo - 1; i >= 0 && i >= lo - 8; i--)
        if (t <= s[idx[i]].ts + s[idx[i]].dur)
            return idx[i];
    return -1;
}

static int by_markers(const trace_map *m, trace_rank *r)
{
    const trace_span *marks = r->marks.data;
    const int nm = (int)r->marks.count;
    int *gpu = util_xmalloc(((size_t)nm + 1) * sizeof(int)), *cpu = util_xmalloc(((size_t)nm + 1) * sizeof(int));
    int ng = 0, nc = 0;
    for (int i = 0; i < nm; i++) {
        if (marks[i].gpu)
            gpu[ng++] = i;
        else
            cpu[nc++] = i;
    }
    /* Launch time by correlation id, to place a kernel in the CPU range that launched it. */
    const size_t nl = r->launches.count;
    corr_ts *lt = util_xmalloc((nl + 1) * sizeof(corr_ts));
    const trace_span *l = r->launches.data;
    for (size_t i = 0; i < nl; i++)
        lt[i] = (corr_ts){l[i].corr, l[i].ts};
    if (nl > 1)
        qsort(lt, nl, sizeof(corr_ts), cmp_corr);
    int *span_of = util_xmalloc((r->kernels.count + 1) * sizeof(int));
    trace_kernel *k = r->kernels.data;
    int placed = 0;
    for (size_t i = 0; i < r->kernels.count; i++) {
        int s = ng ? span_at(marks, gpu, ng, k[i].ts) : -1;
        if (s < 0 && nc && k[i].corr >= 0) {
            const corr_ts key = {k[i].corr, 0};
            const corr_ts *hit = nl ? bsearch(&key, lt, nl, sizeof(corr_ts), cmp_corr) : NULL;
            if (hit)
                s = span_at(marks, cpu, nc, hit->ts);
        }
        span_of[i] = s;
        placed += s >= 0;
    }
    /* A phase per marker span that holds kernels, in the order of its first kernel. */
    int *phase_of_span = util_xmalloc(((size_t)nm + 1) * sizeof(int));
    for (int i = 0; i < nm; i++)
        phase_of_span[i] = -1;
    for (size_t i = 0; i < r->kernels.count; i++) {
        const int s = span_of[i];
        if (s < 0)
            continue;
        if (phase_of_span[s] < 0) {
            phase_of_span[s] = (int)r->phases.count;
            add_phase(r, (plan_phase_kind)(trace_map_marker(m, trace_name(r, marks[s].name)) - 1), (int)i, 0, true);
        }
        trace_phase *p = (trace_phase *)r->phases.data + phase_of_span[s];
        p->n = (int)i - p->first + 1;
        k[i].phase = (short)phase_of_span[s];
    }
    free(gpu);
    free(cpu);
    free(lt);
    free(span_of);
    free(phase_of_span);
    return placed;
}

/* ---------------- by the collective pattern ---------------- */

/* Where the pass after the all-gather at kernel `a` starts, given the next collective at `c`. */
static int next_pass_start(const trace_kernel *k, int a, int c)
{
    for (int i = a + 1; i < c; i++)
        if (k[i].kind == PLAN_OP_EMBEDDING)
            return i;
    int best = c;
    double widest = -1;
    double end = k[a].ts + k[a].dur;
    for (int i = a + 1; i <= c; i++) {
        const double gap = k[i].ts - end;
        if (gap > widest) {
            widest = gap;
            best = i;
        }
        if (k[i].ts + k[i].dur > end)
            end = k[i].ts + k[i].dur;
    }
    return best;
}

static int by_pattern(trace_rank *r, trace_error *err)
{
    const trace_kernel *k = r->kernels.data;
    const int n = (int)r->kernels.count;
    int *starts = util_xmalloc(((size_t)n + 2) * sizeof(int)), ns = 0;
    starts[ns++] = 0;
    bool any_gather = false;
    for (int a = 0; a < n; a++) {
        if (k[a].kind != PLAN_OP_ALLGATHER)
            continue;
        any_gather = true;
        int c = a + 1;
        while (c < n && !is_collective(k[c].kind))
            c++;
        const int s = next_pass_start(k, a, c < n ? c : n - 1);
        if (s > starts[ns - 1] && s < n)
            starts[ns++] = s;
        else if (c >= n && a + 1 < n && a + 1 > starts[ns - 1])
            starts[ns++] = a + 1; /* after the last all-gather: a pass cut by the trace's end */
    }
    if (!any_gather) {
        free(starts);
        snprintf(err->msg, sizeof(err->msg), "%s: no all-gather kernel to cut forward passes at (the logits all-gather "
                 "that ends each pass at TP > 1), and no phase markers: name the server's collective kernels in "
                 "--kernels FILE, or mark phases (configs/trace-kernels.yaml, markers)", r->path);
        return -1;
    }
    starts[ns] = n;
    /* A pass is whole when it ends at its all-gather's tail and is not the trace's first. */
    int amax = 0;
    int *ars = util_xcalloc((size_t)ns + 1, sizeof(int));
    bool *whole = util_xcalloc((size_t)ns + 1, sizeof(bool));
    for (int p = 0; p < ns; p++) {
        bool gathered = false;
        for (int i = starts[p]; i < starts[p + 1]; i++) {
            ars[p] += is_allreduce(k[i].kind);
            gathered |= k[i].kind == PLAN_OP_ALLGATHER;
        }
        whole[p] = p > 0 && gathered;
        if (ars[p] > amax)
            amax = ars[p];
    }
    bool all_target = true;
    for (int p = 0; p < ns; p++)
        if (whole[p] && 2 * ars[p] < amax)
            all_target = false;
    plan_phase_kind prev = PLAN_PHASE_DRAFT;
    bool seen_verify = false;
    for (int p = 0; p < ns; p++) {
        plan_phase_kind kind;
        if (all_target)
            kind = PLAN_PHASE_DECODE;
        else if (2 * ars[p] >= amax)
            kind = PLAN_PHASE_VERIFY;
        else
            kind = seen_verify && prev == PLAN_PHASE_VERIFY ? PLAN_PHASE_DRAFT_EXTEND : PLAN_PHASE_DRAFT;
        seen_verify |= kind == PLAN_PHASE_VERIFY;
        prev = kind;
        add_phase(r, kind, starts[p], starts[p + 1] - starts[p], whole[p]);
        trace_kernel *kk = r->kernels.data;
        for (int i = starts[p]; i < starts[p + 1]; i++)
            kk[i].phase = (short)(r->phases.count - 1);
    }
    free(starts);
    free(ars);
    free(whole);
    return 0;
}

/* ---------------- cycles ---------------- */

/* Phases into cycles: [draft x d] verify draft_extend (or one decode). A cycle is complete when its
 * phases are whole, it has its draft-extend, and a draft-extend (or decode) ends the cycle before it,
 * so its first draft step is really its first; then only cycles with the most common d stay. */
static void group_cycles(trace_rank *r)
{
    trace_phase *ph = r->phases.data;
    const int n = (int)r->phases.count;
    int *d_of = util_xcalloc((size_t)n + 1, sizeof(int));
    int hist[64] = {0};
    int start = 0;
    for (int i = 0; i < n; i++) {
        const bool whole = ph[i].cycle != -2;
        ph[i].cycle = -1;
        ph[i].step = 0;
        if (!whole)
            ph[i].step = -1;
    }
    for (int i = 0; i < n; i++) {
        if (ph[i].kind == PLAN_PHASE_DECODE) {
            if (ph[i].step == 0)
                ph[i].cycle = 0;
            start = i + 1;
            continue;
        }
        if (ph[i].kind != PLAN_PHASE_DRAFT_EXTEND)
            continue;
        /* phases start..i: drafts, a verify, this extend */
        const int v = i - 1;
        bool ok = v >= start && ph[v].kind == PLAN_PHASE_VERIFY && start > 0 &&
                  (ph[start - 1].kind == PLAN_PHASE_DRAFT_EXTEND || ph[start - 1].kind == PLAN_PHASE_DECODE);
        for (int j = start; ok && j <= i; j++)
            ok = ph[j].step == 0 && (j >= v || ph[j].kind == PLAN_PHASE_DRAFT);
        const int d = v - start;
        if (ok && d < 64) {
            hist[d]++;
            d_of[start] = d + 1; /* 0: no cycle starts here */
        }
        start = i + 1;
    }
    int best = -1;
    for (int d = 0; d < 64; d++)
        if (hist[d] > 0 && (best < 0 || hist[d] > hist[best]))
            best = d;
    int cycles = 0;
    for (int i = 0; i < n; i++) {
        if (ph[i].kind == PLAN_PHASE_DECODE && ph[i].cycle == 0) {
            ph[i].cycle = cycles++;
            continue;
        }
        if (d_of[i] == 0 || d_of[i] - 1 != best)
            continue;
        for (int j = 0; j < best + 2; j++) {
            ph[i + j].cycle = cycles;
            ph[i + j].step = j < best ? j + 1 : 0;
        }
        cycles++;
    }
    for (int i = 0; i < n; i++)
        if (ph[i].step < 0)
            ph[i].step = 0;
    r->n_cycles = cycles;
    r->draft_steps = best > 0 ? best : 0;
    free(d_of);
}

int trace_find_cycles(const trace_map *m, trace_rank *r, trace_error *err)
{
    r->phases.count = 0;
    trace_kernel *k = r->kernels.data;
    for (size_t i = 0; i < r->kernels.count; i++)
        k[i].phase = -1;
    r->marked = r->marks.count > 0 && by_markers(m, r) > 0;
    if (!r->marked) {
        r->phases.count = 0;
        if (by_pattern(r, err))
            return -1;
    }
    trace_phase *ph = r->phases.data;
    for (size_t i = 0; i < r->phases.count; i++) {
        ph[i].start = 1e300;
        ph[i].end = -1e300;
    }
    for (size_t i = 0; i < r->kernels.count; i++) {
        if (k[i].phase < 0)
            continue;
        trace_phase *p = &ph[k[i].phase];
        if (k[i].ts < p->start)
            p->start = k[i].ts;
        if (k[i].ts + k[i].dur > p->end)
            p->end = k[i].ts + k[i].dur;
    }
    group_cycles(r);
    if (r->n_cycles == 0) {
        snprintf(err->msg, sizeof(err->msg), "%s: %zu %s found but no complete decode cycle (draft steps, verify, "
                 "draft-extend, with the cycle before it ending in the trace): profile a few more steps",
                 r->path, r->phases.count, r->marked ? "marked phases" : "forward passes");
        return -1;
    }
    return 0;
}

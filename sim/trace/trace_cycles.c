/* trace_cycles: a rank's kernels cut into forward passes (phases) and those into decode cycles.
 *
 * Two sources, the engine's own first: annotations a marker pattern names (vpsim's fixture, SGLang's
 * EAGLE worker functions) give each phase directly, the GPU work of a CPU range found through the
 * CUPTI correlation id of its launch (a CUDA graph's kernels share their cudaGraphLaunch's id); kineto's
 * GPU projections of those ranges stand in only where a trace has no CPU ranges (group_marks). Without
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

static int cmp_ll(const void *a, const void *b)
{
    const long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* The span (index) whose range holds time t: the latest-starting one that does (a nested range wins over
 * the one around it), one on `stream` first when stream >= 0; -1 when none. */
static int span_at(const trace_span *s, const int *idx, int n, double t, int stream)
{
    int lo = 0, hi = n; /* first span starting after t */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (s[idx[mid]].ts <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    int any = -1;
    for (int i = lo - 1; i >= 0 && i >= lo - 16; i--) {
        if (t > s[idx[i]].ts + s[idx[i]].dur)
            continue;
        if (stream < 0 || s[idx[i]].stream == stream)
            return idx[i];
        if (any < 0)
            any = idx[i];
    }
    return any;
}

/* A runtime call that always puts a kernel on the GPU (cudaLaunchHostFunc, cudaStreamIsCapturing and
 * the like carry a correlation id too, and start none). */
static bool launches_kernel(const char *name)
{
    return strstr(name, "LaunchKernel") || strstr(name, "LaunchCooperativeKernel") || strstr(name, "GraphLaunch");
}

/* Marked ranges into phase instances: group[i] for mark i (-1: not used). Returns the count. A CPU range
 * (record_function, NVTX, a Python function) is one instance, and its kernels are those its launches
 * started, found by correlation id: exact, whatever the GPU's lag behind the host. kineto also projects
 * each CPU range onto the GPU, one gpu_user_annotation per stream its kernels ran on, spanning the first
 * to the last of them (so a verify's GPU range is longer than its CPU one and may start after the next
 * CPU range has begun); they say nothing the correlation does not, and are used only in a trace without
 * CPU ranges, where the GPU ranges of one marker that overlap in time are one instance. */
static int group_marks(const trace_rank *r, const int *cpu, int nc, const int *gpu, int ng, int *group)
{
    const trace_span *marks = r->marks.data;
    for (size_t i = 0; i < r->marks.count; i++)
        group[i] = -1;
    if (nc > 0) {
        for (int i = 0; i < nc; i++)
            group[cpu[i]] = i;
        return nc;
    }
    int n = 0;
    int *g_name = util_xmalloc(((size_t)ng + 1) * sizeof(int));
    double *g_end = util_xmalloc(((size_t)ng + 1) * sizeof(double));
    for (int i = 0; i < ng; i++) {
        const trace_span *s = &marks[gpu[i]];
        int j = n - 1;
        while (j >= 0 && g_name[j] != s->name)
            j--;
        if (j >= 0 && s->ts <= g_end[j]) {
            group[gpu[i]] = j;
            if (s->ts + s->dur > g_end[j])
                g_end[j] = s->ts + s->dur;
            continue;
        }
        g_name[n] = s->name;
        g_end[n] = s->ts + s->dur;
        group[gpu[i]] = n++;
    }
    free(g_name);
    free(g_end);
    return n;
}

/* Groups whose CPU range launched a kernel the trace lacks: the profiler stopped before that kernel ran
 * (the trace's end cut the phase). */
static void mark_cut(const trace_rank *r, const int *cpu, int nc, const int *group, bool *cut)
{
    const size_t nk = r->kernels.count;
    const trace_kernel *k = r->kernels.data;
    long long *kc = util_xmalloc((nk + 1) * sizeof(long long));
    size_t n = 0;
    for (size_t i = 0; i < nk; i++)
        if (k[i].corr >= 0)
            kc[n++] = k[i].corr;
    if (n > 1)
        qsort(kc, n, sizeof(long long), cmp_ll);
    const trace_span *l = r->launches.data;
    for (size_t i = 0; i < r->launches.count; i++) {
        if (!launches_kernel(trace_name(r, l[i].name)) || (n && bsearch(&l[i].corr, kc, n, sizeof(long long), cmp_ll)))
            continue;
        const int s = span_at(r->marks.data, cpu, nc, l[i].ts, -1);
        if (s >= 0)
            cut[group[s]] = true;
    }
    free(kc);
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
    int *group = util_xmalloc(((size_t)nm + 1) * sizeof(int));
    const int n_groups = group_marks(r, cpu, nc, gpu, ng, group);
    bool *cut = util_xcalloc((size_t)n_groups + 1, sizeof(bool));
    if (nc > 0)
        mark_cut(r, cpu, nc, group, cut);
    /* Launch time by correlation id, to place a kernel in the CPU range that launched it. */
    const size_t nl = r->launches.count;
    corr_ts *lt = util_xmalloc((nl + 1) * sizeof(corr_ts));
    const trace_span *l = r->launches.data;
    for (size_t i = 0; i < nl; i++)
        lt[i] = (corr_ts){l[i].corr, l[i].ts};
    if (nl > 1)
        qsort(lt, nl, sizeof(corr_ts), cmp_corr);
    trace_kernel *k = r->kernels.data;
    int *phase_of_group = util_xmalloc(((size_t)n_groups + 1) * sizeof(int));
    for (int i = 0; i < n_groups; i++)
        phase_of_group[i] = -1;
    int placed = 0;
    /* A phase per group that holds kernels, in the order of its first kernel (kernels are time-sorted). */
    for (size_t i = 0; i < r->kernels.count; i++) {
        int s = -1;
        if (nc > 0 && k[i].corr >= 0 && nl > 0) {
            const corr_ts key = {k[i].corr, 0};
            const corr_ts *hit = bsearch(&key, lt, nl, sizeof(corr_ts), cmp_corr);
            if (hit)
                s = span_at(marks, cpu, nc, hit->ts, -1);
        } else if (nc == 0)
            s = span_at(marks, gpu, ng, k[i].ts, k[i].stream);
        if (s < 0)
            continue;
        const int g = group[s];
        if (phase_of_group[g] < 0) {
            phase_of_group[g] = (int)r->phases.count;
            add_phase(r, (plan_phase_kind)(trace_map_marker(m, trace_name(r, marks[s].name)) - 1), (int)i, 0, !cut[g]);
        }
        trace_phase *p = (trace_phase *)r->phases.data + phase_of_group[g];
        p->n = (int)i - p->first + 1;
        k[i].phase = (short)phase_of_group[g];
        placed++;
    }
    /* A replayed graph's kernels share their launch's id, so a launch tells nothing of a kernel the
     * trace's end cut off; but every replay of one phase runs the same kernels: the trace's last phase
     * with fewer kernels than another of its marker was cut. */
    const int np = (int)r->phases.count;
    if (np > 1) {
        int *count = util_xcalloc((size_t)np, sizeof(int)), *name = util_xmalloc((size_t)np * sizeof(int));
        for (int i = 0; i < nm; i++)
            if (group[i] >= 0 && phase_of_group[group[i]] >= 0)
                name[phase_of_group[group[i]]] = marks[i].name;
        for (size_t i = 0; i < r->kernels.count; i++)
            if (k[i].phase >= 0)
                count[k[i].phase]++;
        int most = 0;
        for (int p = 0; p < np - 1; p++)
            if (name[p] == name[np - 1] && count[p] > most)
                most = count[p];
        if (count[np - 1] < most)
            ((trace_phase *)r->phases.data)[np - 1].cycle = -2;
        free(count);
        free(name);
    }
    free(gpu);
    free(cpu);
    free(group);
    free(cut);
    free(lt);
    free(phase_of_group);
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
        /* The trace's first cycle counts when it begins with a whole draft step: by markers, a range that
         * opened inside the trace (a profiler records no range begun before it started); by the pattern
         * the first pass is never whole, since the trace may have cut it. A verify first is the tail of a
         * cycle whose drafts came before the trace. */
        bool ok = v >= start && ph[v].kind == PLAN_PHASE_VERIFY && (start > 0 || v > start);
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

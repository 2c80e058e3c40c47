/* trace_stats: one phase of one rank, as the breakdown counts it.
 *
 * The critical path is the phase's main stream (the one with the most kernel time) and every kernel that
 * runs while that stream is idle: each is charged its duration plus the idle gap before it, as model mode
 * charges an op its time plus its launch gap (model_cycle.c), so that the measured and the modelled class
 * columns mean the same thing. A kernel of another stream counts as side-stream work only while it runs
 * beside the main stream's: a CUDA graph's kernels run on the streams its executor picks, not those it
 * was captured on, so the chain of one pass moves between streams (a replayed verify's first layers on
 * the launching stream, the rest on another) and only the overlap tells a branch from the chain. The gap
 * before a phase's first kernel goes to "other" (model mode puts a graph's launch there); side-stream work
 * that runs past the critical path's last kernel too. */
#include "trace_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void trace_phase_name(plan_phase_kind kind, int step, char *buf, size_t len)
{
    if (kind == PLAN_PHASE_DRAFT)
        snprintf(buf, len, "draft_%d", step > 0 ? step : 1);
    else
        snprintf(buf, len, "%s", plan_phase_kind_names[kind]);
}

static int main_stream(const trace_rank *r, const trace_phase *p, int ph)
{
    const trace_kernel *k = r->kernels.data;
    int streams[16], n = 0, best = 0;
    double busy[16] = {0};
    for (int i = p->first; i < p->first + p->n; i++) {
        if (k[i].phase != ph)
            continue;
        int s = 0;
        while (s < n && streams[s] != k[i].stream)
            s++;
        if (s == n && n < 16)
            streams[n++] = k[i].stream;
        if (s < n)
            busy[s] += k[i].dur;
    }
    for (int s = 1; s < n; s++)
        if (busy[s] > busy[best])
            best = s;
    return n ? streams[best] : 0;
}

/* Whether kernel i (not on stream ms) runs while a kernel of stream ms does. `home` holds the phase's
 * kernels on ms in time order; they follow one another, so only the last to start before i ends can
 * overlap it. */
static bool beside(const trace_kernel *k, const int *home, int n_home, int i)
{
    const double a = k[i].ts, b = k[i].ts + k[i].dur;
    int lo = 0, hi = n_home; /* first home kernel starting at or after b */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (k[home[mid]].ts < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && k[home[lo - 1]].ts + k[home[lo - 1]].dur > a;
}

static void note_unmapped(trace_summary *sum, const char *name, double us)
{
    for (int i = 0; i < sum->n_unmapped; i++)
        if (!strcmp(sum->unmapped[i].name, name)) {
            sum->unmapped[i].us += us;
            sum->unmapped[i].count++;
            return;
        }
    if (sum->n_unmapped < TRACE_MAX_UNMAPPED) {
        sum->unmapped[sum->n_unmapped++] = (trace_unmapped){util_xstrdup(name), us, 1};
        return;
    }
    sum->unmapped_rest_us += us;
}

void trace_stats_phase(const trace_rank *r, int ph, double prev_end, trace_phase_stats *acc, trace_summary *sum)
{
    const trace_phase *p = (const trace_phase *)r->phases.data + ph;
    const trace_kernel *k = r->kernels.data;
    const int ms = main_stream(r, p, ph);
    int *home = util_xmalloc(((size_t)p->n + 1) * sizeof(int)), n_home = 0;
    for (int i = p->first; i < p->first + p->n; i++)
        if (k[i].phase == ph && k[i].stream == ms)
            home[n_home++] = i;
    const bool first_of_cycle = isnan(prev_end);
    double cursor = first_of_cycle ? p->start : prev_end;
    bool first = true;
    double span_us = 0.0;
    for (int i = p->first; i < p->first + p->n; i++) {
        if (k[i].phase != ph)
            continue;
        const int kind = k[i].kind;
        if (kind >= 0) {
            acc->kernel_us[kind] += k[i].dur;
            acc->kernels[kind] += 1;
            sum->mapped_us += k[i].dur;
        } else {
            acc->unmapped_us += k[i].dur;
            acc->unmapped_kernels += 1;
            note_unmapped(sum, trace_name(r, k[i].name), k[i].dur);
        }
        sum->kernel_us += k[i].dur;
        if (k[i].stream != ms && beside(k, home, n_home, i)) {
            if (kind >= 0)
                acc->side_us[kind] += k[i].dur;
            continue;
        }
        const double gap = k[i].ts > cursor ? k[i].ts - cursor : 0.0;
        const int cls = kind >= 0 ? (int)plan_op_class((plan_op_kind)kind) : PLAN_CLASS_OTHER;
        if (first) {
            acc->lead_us += gap;
            acc->class_ms[PLAN_CLASS_OTHER] += gap / 1e3;
            acc->class_ms[cls] += k[i].dur / 1e3;
        } else {
            acc->gap_us += gap;
            acc->gaps += gap > 0;
            acc->class_ms[cls] += (gap + k[i].dur) / 1e3;
        }
        span_us += gap + k[i].dur;
        first = false;
        const double end = k[i].ts + k[i].dur;
        if (end > cursor) {
            /* a kernel overlapping the previous one on its stream: only its part past it counts */
            span_us -= k[i].ts < cursor ? cursor - k[i].ts : 0.0;
            acc->class_ms[cls] -= k[i].ts < cursor ? (cursor - k[i].ts) / 1e3 : 0.0;
            cursor = end;
        } else {
            span_us -= k[i].dur;
            acc->class_ms[cls] -= k[i].dur / 1e3;
        }
    }
    if (p->end > cursor) {
        acc->tail_us += p->end - cursor;
        acc->class_ms[PLAN_CLASS_OTHER] += (p->end - cursor) / 1e3;
        span_us += p->end - cursor;
    }
    acc->ms += span_us / 1e3;
    free(home);
}

void trace_stats_scale(trace_phase_stats *a, double n)
{
    if (n <= 0)
        return;
    a->ms /= n;
    for (int c = 0; c < PLAN_CLASS_COUNT; c++)
        a->class_ms[c] /= n;
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
        a->kernel_us[k] /= n;
        a->side_us[k] /= n;
        a->kernels[k] /= n;
    }
    a->unmapped_us /= n;
    a->unmapped_kernels /= n;
    a->gap_us /= n;
    a->gaps /= n;
    a->lead_us /= n;
    a->tail_us /= n;
}

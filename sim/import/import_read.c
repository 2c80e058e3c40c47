/* import_read: a server's per-rank traces read for the import (import.h): the kernel patterns, each
 * rank's kernels and cycles, the ranks in the order their files name, the summary across ranks, and the
 * provenance tag every value of the written system file carries. */
#include "import.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* "measured: server trace, FILES, DATE": the date the profile was taken (on its base time's clock), else the
 * file's. */
static void make_tag(import_ctx *x, char *files, size_t len)
{
    const trace_rank *r0 = &x->ranks[0];
    time_t t = 0;
    struct stat st;
    if (r0->have_base) {
        /* kineto's ts count from its base time, which is not the profile's start (a real trace's base
         * lay two months before its first kernel): the date is the base plus the first kernel's ts */
        const trace_kernel *k0 = r0->kernels.data;
        t = (time_t)(r0->base_ns / 1000000000LL + (long long)(k0[0].ts / 1e6));
    }
    else if (stat(r0->path, &st) == 0)
        t = st.st_mtime;
    char date[32];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y-%m-%d", &tm);
    if (x->n_ranks <= 2)
        snprintf(files, len, "%s%s%s", x->ranks[0].path, x->n_ranks > 1 ? ", " : "",
                 x->n_ranks > 1 ? x->ranks[1].path : "");
    else
        snprintf(files, len, "%s ... %s (%d files)", x->ranks[0].path, x->ranks[x->n_ranks - 1].path, x->n_ranks);
    snprintf(x->tag, sizeof(x->tag), "measured: server trace, %s, %s", files, date);
}

static int cmp_rank(const void *a, const void *b)
{
    const trace_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Ranks in the order their files name (distributedInfo.rank) when every file names a distinct one. */
static int order_ranks(trace_rank *R, int n)
{
    for (int i = 0; i < n; i++) {
        if (R[i].rank < 0)
            return 0;
        for (int j = 0; j < i; j++)
            if (R[j].rank == R[i].rank) {
                fprintf(stderr, "vpsim import-trace: %s and %s are both rank %d (distributedInfo.rank): one trace per "
                                "rank\n",
                        R[j].path, R[i].path, R[i].rank);
                return VP_EXIT_USAGE;
            }
    }
    qsort(R, (size_t)n, sizeof(trace_rank), cmp_rank);
    return 0;
}

int import_read(import_ctx *x, const char *shipped, const char *extra, const char *const *files, int n_files)
{
    trace_error err;
    x->map = trace_map_load(shipped, extra, &err);
    if (!x->map) {
        fprintf(stderr, "vpsim import-trace: %s\n", err.msg);
        return VP_EXIT_USAGE;
    }
    trace_rank *R = x->ranks = util_xcalloc((size_t)n_files, sizeof(trace_rank));
    x->n_alloc = n_files;
    int rc = 0, n = 0;
    for (; n < n_files && rc == 0; n++) {
        if (trace_read(files[n], trace_map_keep, x->map, &R[n], &err) == 0) {
            trace_map_apply(x->map, &R[n]);
            if (trace_find_cycles(x->map, &R[n], &err) == 0)
                continue;
        }
        fprintf(stderr, "vpsim import-trace: %s\n", err.msg);
        rc = VP_EXIT_USAGE;
    }
    x->n_ranks = n;
    if (rc == 0)
        rc = order_ranks(R, n);
    x->sum = util_xcalloc(1, sizeof(*x->sum));
    if (rc == 0 && trace_summarize(R, n, x->sum, &err)) {
        fprintf(stderr, "vpsim import-trace: %s\n", err.msg);
        rc = VP_EXIT_USAGE;
    }
    if (rc)
        return rc;
    make_tag(x, x->files, sizeof(x->files));
    const trace_kernel *k = R[0].kernels.data;
    for (size_t i = 0; i < R[0].kernels.count && !x->custom_ar; i++)
        if (k[i].kind == PLAN_OP_ALLREDUCE) {
            const char *lib = "";
            trace_map_kind(x->map, trace_name(&R[0], k[i].name), &lib);
            x->custom_ar = strstr(lib, "custom") != NULL;
            break;
        }
    return VP_EXIT_OK;
}

void import_free(import_ctx *x)
{
    if (x->sum)
        trace_summary_free(x->sum);
    free(x->sum);
    for (int i = 0; i < x->n_alloc; i++)
        if (x->ranks[i].path)
            trace_rank_free(&x->ranks[i]);
    free(x->ranks);
    trace_map_free(x->map);
    x->sum = NULL;
    x->ranks = NULL;
    x->map = NULL;
}

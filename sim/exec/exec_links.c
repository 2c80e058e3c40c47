/* exec_links_measure (exec_links.h): the schedule of the link probe. Every rank walks the same loops;
 * MPI barriers line the ranks up before each timed step, and only the ranks a step names act in it, so
 * pairs are measured one at a time except where the quantity is "all at once". Each rank records what it
 * measured into its cells of a samples array (list x repetition x cell); one sum over ranks at the end
 * gives every rank every cell, and each value is the median over the repetitions. A cell that failed
 * holds NaN: its list is left unmeasured (the schema wants positive values) and `note` names the pair. */
#include "exec_links_internal.h"

#include "../util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIST_DIMS(name, dims, unit, help) dims,
static const int list_dims[EXEC_LINKS_COUNT] = {CFG_PATHS_LIST(LIST_DIMS)};
#undef LIST_DIMS
#define LIST_NAME(name, dims, unit, help) #name,
static const char *const list_names[EXEC_LINKS_COUNT] = {CFG_PATHS_LIST(LIST_NAME)};
#undef LIST_NAME

static cfg_paths_list *list_of(cfg_paths *p, int k)
{
#define LIST_CASE(name, dims, unit, help)                                                                             \
    case EXEC_LINKS_##name:                                                                                            \
        return &p->name;
    switch (k) {
        CFG_PATHS_LIST(LIST_CASE)
    default:
        return NULL;
    }
#undef LIST_CASE
}

/* Defaults (exec_links_opts' 0 = default). A quick run is for CI and self-tests: a few seconds. */
enum { REPS_FULL = 5, REPS_QUICK = 3, ROUNDS_FULL = 200, ROUNDS_QUICK = 50, ROUNDS_VIRTUAL = 20 };
enum { HOPS_FULL = 512, HOPS_QUICK = 256 };
#define BW_FULL (64ll << 20)
#define BW_QUICK (4ll << 20)

typedef struct links_run {
    links_ctx c;
    const links_backend *be;
    int n, me, reps;
    unsigned base;     /* next ping-pong flag value: advanced identically on every rank */
    double *samples;   /* [list][rep][cell] */
    bool tried[EXEC_LINKS_COUNT];
    bool progress;
} links_run;

/* Testing hook (exec_links_test_unmapped): a pair treated as if its mappings had not opened. */
static int g_unmapped[2] = {-1, -1};

void exec_links_test_unmapped(int a, int b)
{
    g_unmapped[0] = a;
    g_unmapped[1] = b;
}

/* Whether this rank and `peer` reached each other's memory. */
static bool peer_ok(links_run *r, int peer)
{
    const bool hooked = (r->me == g_unmapped[0] && peer == g_unmapped[1]) ||
                        (r->me == g_unmapped[1] && peer == g_unmapped[0]);
    return !hooked && r->be->peer_ok(&r->c, peer);
}

static double *slot(links_run *r, int list, int rep, int cell)
{
    return &r->samples[((size_t)list * (size_t)r->reps + (size_t)rep) * CFG_PATHS_CELLS + (size_t)cell];
}

/* What this rank measured: a failed step (v <= 0, or not run) becomes NaN. */
static void put(links_run *r, int list, int rep, int cell, double v)
{
    *slot(r, list, rep, cell) = v > 0 && isfinite(v) ? v : NAN;
    r->tried[list] = true;
}

static void say(const links_run *r, const char *what, int rep)
{
    if (!r->progress)
        return;
    fprintf(stderr, "\rvpsim probe: repetition %d/%d, %-40s", rep + 1, r->reps, what);
    fflush(stderr);
}

/* Ping-pong with every peer, one ordered pair at a time; the row rank initiates. */
static void pingpong_pairs(links_run *r, int rep, int mem, int list)
{
    for (int a = 0; a < r->n; a++)
        for (int b = 0; b < r->n; b++) {
            if (a == b)
                continue;
            r->tried[list] = true;
            dist_barrier();
            const unsigned base = r->base;
            r->base += (unsigned)r->c.rounds + 2u;
            if (r->me != a && r->me != b)
                continue;
            const int peer = r->me == a ? b : a;
            const double v = peer_ok(r, peer) || mem != LINKS_MEM_PEER
                                 ? r->be->pingpong(&r->c, peer, r->me == a, mem, base)
                                 : -1.0;
            if (r->me == a)
                put(r, list, rep, exec_links_cell(r->n, a, b), v);
        }
}

/* Load round trip, then store and load bandwidth, for each ordered pair alone. */
static void pair_alone(links_run *r, int rep)
{
    const double gb = (double)r->c.bw_bytes / 1e9;
    for (int a = 0; a < r->n; a++)
        for (int b = 0; b < r->n; b++) {
            if (a == b)
                continue;
            const int cell = exec_links_cell(r->n, a, b);
            const bool acts = r->me == a, ok = acts && peer_ok(r, b);
            dist_barrier();
            if (acts)
                put(r, EXEC_LINKS_load_rtt_us, rep, cell, ok ? r->be->chase(&r->c, LINKS_MEM_PEER, b, rep) : -1);
            for (int store = 1; store >= 0; store--) {
                dist_barrier();
                if (acts)
                    put(r, store ? EXEC_LINKS_store_gbs : EXEC_LINKS_load_gbs, rep, cell,
                        ok ? gb / r->be->stream(&r->c, store, LINKS_MEM_PEER, &b, 1) : -1);
            }
            r->tried[EXEC_LINKS_load_rtt_us] = r->tried[EXEC_LINKS_store_gbs] = r->tried[EXEC_LINKS_load_gbs] = true;
        }
}

/* Every rank stores into (loads from) every peer at once; then all the others into each rank. */
static void all_at_once(links_run *r, int rep)
{
    const double gb = (double)r->c.bw_bytes / 1e9;
    int peers[CFG_PATHS_MAX], np = 0;
    bool ok = true;
    for (int p = 0; p < r->n; p++)
        if (p != r->me) {
            peers[np++] = p;
            ok = ok && peer_ok(r, p);
        }
    for (int store = 1; store >= 0; store--) {
        const int list = store ? EXEC_LINKS_all_store_gbs : EXEC_LINKS_all_load_gbs;
        dist_barrier();
        const double t = ok ? r->be->stream(&r->c, store, LINKS_MEM_PEER, peers, np) : -1;
        for (int i = 0; i < np; i++)
            put(r, list, rep, exec_links_cell(r->n, r->me, peers[i]), gb / t);
    }
    for (int b = 0; b < r->n; b++) {
        double t[2] = {0, 0}; /* the slowest writer's seconds, and whether any failed */
        dist_barrier();
        if (r->me != b) {
            t[0] = peer_ok(r, b) ? r->be->stream(&r->c, true, LINKS_MEM_PEER, &b, 1) : -1;
            t[1] = t[0] > 0 ? 0 : 1;
        }
        dist_max_doubles(t, 2);
        if (r->me == b)
            put(r, EXEC_LINKS_many_writer_gbs, rep, b, t[1] > 0 ? -1 : gb * (r->n - 1) / t[0]);
    }
}

/* Pinned host memory, one rank at a time: near its GPU, then on another socket where there is one. */
static void host_memory(links_run *r, int rep)
{
    const double gb = (double)r->c.bw_bytes / 1e9;
    static const int lists[2][3] = {
        {EXEC_LINKS_host_load_rtt_us, EXEC_LINKS_host_store_gbs, EXEC_LINKS_host_load_gbs},
        {EXEC_LINKS_host_far_load_rtt_us, EXEC_LINKS_host_far_store_gbs, EXEC_LINKS_host_far_load_gbs}};
    for (int g = 0; g < r->n; g++)
        for (int far = 0; far <= (r->c.host_far ? 1 : 0); far++) {
            const int mem = far ? LINKS_MEM_HOST_FAR : LINKS_MEM_HOST_NEAR;
            dist_barrier();
            if (r->me != g)
                continue;
            put(r, lists[far][0], rep, g, r->be->chase(&r->c, mem, -1, rep));
            put(r, lists[far][1], rep, g, gb / r->be->stream(&r->c, true, mem, NULL, 1));
            put(r, lists[far][2], rep, g, gb / r->be->stream(&r->c, false, mem, NULL, 1));
        }
    /* Every GPU loading from the host memory near it at once: NCCL's SHM receives and the peer loads a
     * platform stages through system memory meet there. */
    dist_barrier();
    put(r, EXEC_LINKS_host_all_load_gbs, rep, r->me, gb / r->be->stream(&r->c, false, LINKS_MEM_HOST_NEAR, NULL, 1));
}

/* "0->1 (visible_us, load_rtt_us), GPU 2 (many_writer_gbs)": the failed lists grouped by their first
 * failed cell, short enough for the note. */
static void name_failures(const links_run *r, const int *bad, util_buf *out)
{
    bool done[EXEC_LINKS_COUNT] = {false};
    for (int k = 0; k < EXEC_LINKS_COUNT; k++) {
        if (bad[k] < 0 || done[k])
            continue;
        if (list_dims[k] == 2)
            util_buf_printf(out, "%s%d->%d (", out->len ? ", " : "", bad[k] / r->n, bad[k] % r->n);
        else
            util_buf_printf(out, "%sGPU %d (", out->len ? ", " : "", bad[k]);
        for (int j = k, first = 1; j < EXEC_LINKS_COUNT; j++)
            if (!done[j] && bad[j] == bad[k] && list_dims[j] == list_dims[k]) {
                util_buf_printf(out, "%s%s", first ? "" : ", ", list_names[j]);
                done[j] = true;
                first = 0;
            }
        util_buf_printf(out, ")");
    }
}

/* Medians and spreads into out->paths; a list with a failed cell stays empty and `failed` names it. */
static void reduce(links_run *r, exec_links_result *out, util_buf *failed)
{
    out->paths.gpus = r->n;
    double *v = util_xmalloc((size_t)r->reps * sizeof(*v));
    int bad[EXEC_LINKS_COUNT];
    for (int k = 0; k < EXEC_LINKS_COUNT; k++) {
        cfg_paths_list *l = list_of(&out->paths, k);
        bad[k] = -1;
        if (!r->tried[k])
            continue;
        const int cells = list_dims[k] == 2 ? r->n * r->n : r->n;
        double spread = 0;
        for (int i = 0; i < cells && bad[k] < 0; i++) {
            l->v[i] = 0; /* the diagonal of a matrix: unused */
            if (list_dims[k] == 2 && i / r->n == i % r->n)
                continue;
            for (int rep = 0; rep < r->reps; rep++) {
                v[rep] = *slot(r, k, rep, i);
                if (!(v[rep] > 0))
                    bad[k] = i;
            }
            if (bad[k] >= 0)
                break;
            const double s = exec_links_spread_pct(v, r->reps);
            spread = s > spread ? s : spread;
            l->v[i] = util_percentile(v, r->reps, 0.5);
        }
        if (bad[k] >= 0) {
            memset(l, 0, sizeof(*l));
            continue;
        }
        l->n = cells;
        out->spread_pct[k] = spread;
    }
    free(v);
    name_failures(r, bad, failed);
}

/* The ranks' hosts launching at once (the arrival skew's input, docs/model.md "Arrival skew"). */
static void arrival_spread(links_run *r, exec_links_result *out)
{
    enum { K = 16, ITERS = 41 };
    out->eager_jitter_us = -1;
    out->jitter_launches = K;
    out->jitter_iters = ITERS;
    if (!r->be->eager_burst || r->n < 2)
        return;
    say(r, "eager launches on every rank at once", r->reps - 1);
    double t[ITERS];
    for (int i = 0; i < ITERS; i++) {
        dist_barrier();
        t[i] = r->be->eager_burst(&r->c, K) * 1e6;
    }
    double *all = util_xcalloc((size_t)r->n * ITERS, sizeof(double));
    dist_gather_doubles(t, ITERS, all);
    double sd[ITERS], v = -1;
    if (r->me == 0) {
        for (int i = 0; i < ITERS; i++) {
            double mean = 0, ss = 0;
            for (int k = 0; k < r->n; k++)
                mean += all[k * ITERS + i] / r->n;
            for (int k = 0; k < r->n; k++)
                ss += (all[k * ITERS + i] - mean) * (all[k * ITERS + i] - mean);
            sd[i] = sqrt(ss / (r->n - 1)) / sqrt((double)K);
        }
        v = util_percentile(sd, ITERS, 0.5);
    }
    free(all);
    dist_bcast(&v, sizeof(v), 0);
    out->eager_jitter_us = v;
}

static void run_schedule(links_run *r, exec_links_result *out)
{
    for (int rep = 0; rep < r->reps; rep++) {
        if (r->n >= 2) {
            say(r, "flag ping-pong through peer memory", rep);
            pingpong_pairs(r, rep, LINKS_MEM_PEER, EXEC_LINKS_visible_us);
            say(r, "load round trip and bandwidth, pairs alone", rep);
            pair_alone(r, rep);
            say(r, "bandwidth, all pairs at once", rep);
            all_at_once(r, rep);
            say(r, "flag ping-pong through host memory", rep);
            pingpong_pairs(r, rep, LINKS_MEM_HOST_NEAR, EXEC_LINKS_host_visible_us);
        }
        say(r, "pinned host memory", rep);
        host_memory(r, rep);
    }
    out->eager_launch_us = out->eager_gap_us = out->graph_node_us = out->graph_launch_us = out->memcpy_lat_us = -1;
    if (r->be->launch_costs) {
        say(r, "launch costs", r->reps - 1);
        dist_barrier();
        if (r->me == 0)
            r->be->launch_costs(&r->c, out);
        /* Rank 0 measured alone; every rank returns the same result. */
        double lc[5] = {out->eager_launch_us, out->eager_gap_us, out->graph_node_us, out->graph_launch_us,
                        out->memcpy_lat_us};
        int nodes = out->graph_nodes;
        dist_bcast(lc, sizeof(lc), 0);
        dist_bcast(&nodes, sizeof(nodes), 0);
        out->eager_launch_us = lc[0], out->eager_gap_us = lc[1], out->graph_node_us = lc[2];
        out->graph_launch_us = lc[3], out->memcpy_lat_us = lc[4], out->graph_nodes = nodes;
    }
    arrival_spread(r, out);
    if (r->progress)
        fprintf(stderr, "\n");
    dist_sum_doubles(r->samples, (int)((size_t)EXEC_LINKS_COUNT * (size_t)r->reps * CFG_PATHS_CELLS));
}

/* Which backend, and whether this job can be probed at all ("" when it can). */
static const links_backend *pick(const dist_job *d, const exec_links_opts *o, char *why, size_t len)
{
    if (d->size > CFG_PATHS_MAX)
        snprintf(why, len, "the probe covers at most %d ranks (the job has %d)", CFG_PATHS_MAX, d->size);
    else if (d->local_size != d->size)
        snprintf(why, len,
                 "the probe maps every rank's memory into the others, which needs every rank on one host (this host "
                 "has %d of %d ranks)",
                 d->local_size, d->size);
    else if (o->device == CFG_DEVICE_CPU)
        return &exec_links_cpu;
    else if (o->device != CFG_DEVICE_CUDA)
        snprintf(why, len, "the probe runs on the cuda or cpu device");
#if VPSIM_HAVE_CUDA
    else
        return &exec_links_cuda;
#else
    else
        snprintf(why, len, "built without CUDA (CUDA=0): the probe can run only with --device cpu");
#endif
    return NULL;
}

static void setup(links_run *r, dist_job *d, const exec_links_opts *o)
{
    memset(r, 0, sizeof(*r));
    r->c.d = d;
    r->c.o = o;
    r->n = d->size;
    r->me = d->rank;
    r->reps = o->reps > 0 ? o->reps : o->quick ? REPS_QUICK : REPS_FULL;
    r->c.rounds = o->quick ? ROUNDS_QUICK : ROUNDS_FULL;
    r->c.hops = o->quick ? HOPS_QUICK : HOPS_FULL;
    long long bw = o->bw_bytes > 0 ? o->bw_bytes : o->quick ? BW_QUICK : BW_FULL;
    r->c.bw_bytes = bw < 4096 ? 4096 : bw / 16 * 16;
    /* A wait with no progress for this long is a failure; the CPU's is long because CI oversubscribes. */
    r->c.timeout_s = o->device == CFG_DEVICE_CPU ? 10.0 : 1.0;
    r->progress = d->rank == 0 && isatty(2);
}

int exec_links_measure(dist_job *d, const exec_links_opts *o, exec_links_result *out, char *why, size_t len)
{
    memset(out, 0, sizeof(*out));
    char mine[400] = "";
    links_run r;
    setup(&r, d, o);
    r.be = pick(d, o, mine, sizeof(mine));
    if (dist_agree(d, r.be == NULL, mine, sizeof(mine))) {
        snprintf(why, len, "%s", mine);
        return -1;
    }
    mine[0] = '\0';
    if (r.be->open(&r.c, out, mine, sizeof(mine)) != 0) { /* open agrees across ranks itself */
        r.be->close(&r.c);
        snprintf(why, len, "%s", mine);
        return -1;
    }
    if (out->virtual_ranks && r.c.rounds > ROUNDS_VIRTUAL)
        r.c.rounds = ROUNDS_VIRTUAL; /* processes sharing a GPU take turns on it: each round trip is slow */
    r.samples = util_xcalloc((size_t)EXEC_LINKS_COUNT * (size_t)r.reps * CFG_PATHS_CELLS, sizeof(double));
    run_schedule(&r, out);
    r.be->close(&r.c);

    out->ranks = r.n;
    out->reps = r.reps;
    util_buf failed = {0};
    reduce(&r, out, &failed);
    free(r.samples);
    util_buf note = {0};
    if (o->device == CFG_DEVICE_CPU)
        util_buf_printf(&note, "CPU device: processes through shared memory, a self-test of the pipeline, not any "
                               "interconnect");
    else if (out->virtual_ranks)
        util_buf_printf(&note, "virtual ranks (several ranks share a GPU): the figures test the protocol, not an "
                               "interconnect");
    if (r.n < 2)
        util_buf_printf(&note, "%sone rank: per-GPU host lists only", note.len ? "; " : "");
    if (!r.c.host_far)
        util_buf_printf(&note, "%sno far-socket host memory", note.len ? "; " : "");
    if (failed.len)
        util_buf_printf(&note, "%sunmeasured: %s", note.len ? "; " : "", failed.s);
    snprintf(out->note, sizeof(out->note), "%s", note.len ? note.s : "");
    util_buf_free(&note);
    util_buf_free(&failed);
    return 0;
}

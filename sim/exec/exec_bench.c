/* The collective benchmark run (see comm_bench.h): one device, every requested backend in turn
 * (init, sweep, describe, fini), every size timed like nccl-tests and checked. The collective is
 * o->collective (allreduce by default); every size is what each rank sends.
 *
 * Per size: fill the send buffer with the exact test pattern, warm up, then time `iters` back-to-back
 * calls (eager, or captured once as a CUDA graph and launched), and check the last result against
 * the pattern's exact sum. With --check, two more calls per size:
 *   - random data whose values are exact in bf16 but span 2^-27..2^1, so fp32 sums are order
 *     sensitive: every element must be within bf16 (fp32 on cpu) tolerance of an fp64 reference AND
 *     bit-identical to rank 0's result;
 *   - the same pattern in place (send == recv), except for mpi, where MPI forbids aliased buffers.
 * A reduce-scatter gets the random-data check on its block (no bit-identity across ranks: each holds
 * its own block) and no in-place call (NCCL's in-place reduce-scatter is recv = send + rank x block, not
 * send == recv); an all-gather or all-to-all sums nothing, so its second call is a fresh pattern. The
 * pattern checks compare with exec_check_result's references (exec_check.c), as `vpsim run --check`.
 * #wrong counts the elements that failed the random-data check plus 1 per failed pattern check,
 * summed over ranks. */
#include "exec_bench.h"
#include "../comm/comm_select.h"
#include "exec_watch.h"

#include "../../kernels/vp_pattern.h"

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bench {
    exec_ctx x;
    const exec_bench_opts *o;
    float *in, *out, *ref0;
    plan_op op; /* a stand-in op: backends receive it but the ones benchmarked do not read it */
    bool in_place; /* the backend under test accepts send == recv (MPI forbids aliased buffers) */
} bench;

static void call(bench *b, const void *send, void *recv, long long count)
{
    b->op.count = count;
    exec_collective(&b->x, &b->op, 0, send, recv, count);
}

/* splitmix64 (Steele, Lea, Flood 2014): value i of rank r depends only on (r, i, salt). */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* +-m x 2^(e-7), m in [1, 255], e in [-20, 0]: 8 significant bits, so exact in bf16 and fp32, while
 * sums across ranks need more bits than fp32 has and so depend on the summation order. */
static float random_value(int rank, long long i, int salt)
{
    uint64_t h = mix(((uint64_t)(unsigned)salt << 44) ^ ((uint64_t)(unsigned)rank << 36) ^ (uint64_t)i);
    int m = (int)(h & 0xff) | 1;
    int e = -(int)((h >> 8) % 21);
    float v = ldexpf((float)m, e - 7);
    return (h >> 40) & 1 ? -v : v;
}

/* Elements a call of `count` sends and receives on this rank. */
static long long out_elems(const bench *b, long long count)
{
    plan_op op = b->op;
    op.count = count;
    long long in, out;
    plan_collective_elems(&op, &in, &out);
    return out;
}

/* Allreduce or reduce-scatter of random data (see the top of the file). */
static long long check_random(bench *b, void *send, void *recv, long long count, int salt)
{
    exec_ctx *x = &b->x;
    const int ranks = x->dist.size;
    const bool scatter = b->op.kind == PLAN_OP_REDUCE_SCATTER;
    const long long out = out_elems(b, count), first = scatter ? x->dist.rank * out : 0;
    for (long long i = 0; i < count; i++)
        b->in[i] = random_value(x->dist.rank, i, salt);
    x->dev->from_host_float(x, send, b->in, count);
    x->dev->poison(x, recv, out);
    call(b, send, recv, count);
    x->dev->sync(x);
    x->dev->to_host_float(x, b->out, recv, out);
    /* Unit roundoff of the result type; partial sums may each be rounded (NCCL reduces in bf16). */
    const double u = x->dev->elem_bytes == 2 ? 1.0 / 256 : 1.0 / 16777216;
    if (x->dist.rank == 0)
        memcpy(b->ref0, b->out, (size_t)out * sizeof(float));
    VP_MPI(MPI_Bcast(b->ref0, (int)out, MPI_FLOAT, 0, MPI_COMM_WORLD));
    long long wrong = 0;
    for (long long i = 0; i < out; i++) {
        double ref = 0, mag = 0;
        for (int r = 0; r < ranks; r++) {
            double v = random_value(r, first + i, salt);
            ref += v;
            mag += fabs(v);
        }
        const double tol = u * (fabs(ref) + (ranks - 1) * mag);
        const bool near = fabs((double)b->out[i] - ref) <= tol; /* NaN (poison) fails */
        const bool same = scatter || memcmp(&b->out[i], &b->ref0[i], sizeof(float)) == 0;
        wrong += !near || !same;
    }
    return wrong;
}

static long long check_pattern(bench *b, const void *send, void *recv, long long count, int salt, bool fill)
{
    exec_ctx *x = &b->x;
    if (fill) {
        x->dev->fill_pattern(x, (void *)send, count, salt);
        if (send != recv)
            x->dev->poison(x, recv, out_elems(b, count));
        call(b, send, recv, count);
    }
    plan_op op = b->op;
    op.count = count;
    return exec_check_result(x, &op, recv, salt) >= 0 ? 1 : 0;
}

static void time_size(bench *b, exec_bench_row *w, bool graph, int salt)
{
    exec_ctx *x = &b->x;
    const exec_bench_opts *o = b->o;
    void *send = x->dev->comm_send(x), *recv = x->dev->comm_recv(x);
    const long long count = w->count;
    x->dev->fill_pattern(x, send, count, salt);
    x->dev->poison(x, recv, out_elems(b, count));
    exec_watch_step("size %lld B: warm-up", w->bytes);
    for (int i = 0; i < o->warmup; i++)
        call(b, send, recv, count);
    x->dev->sync(x);
    if (graph) {
        exec_watch_step("size %lld B: capturing %d calls as a CUDA graph", w->bytes, o->iters);
        x->dev->capture_begin(x);
        for (int i = 0; i < o->iters; i++)
            call(b, send, recv, count);
        x->dev->capture_end(x, EXEC_GRAPH_TIMED);
        x->dev->graph_launch(x, EXEC_GRAPH_TIMED); /* first launch uploads the graph: not timed */
    }
    /* Poisoned again, so that the check below sees what the timed calls wrote. */
    exec_watch_step("size %lld B: waiting for the %s to finish", w->bytes,
                    graph ? "first (untimed) graph launch" : "warm-up calls");
    x->dev->poison(x, recv, out_elems(b, count));
    x->dev->sync(x);
    exec_watch_step("size %lld B: barrier before the timed calls", w->bytes);
    dist_barrier();
    exec_watch_step("size %lld B: timed %s", w->bytes, graph ? "graph launch" : "calls");
    x->dev->timer_record(x, 0, 0);
    if (graph)
        x->dev->graph_launch(x, EXEC_GRAPH_TIMED);
    else
        for (int i = 0; i < o->iters; i++)
            call(b, send, recv, count);
    x->dev->timer_record(x, 1, 0);
    x->dev->sync(x);
    double us = x->dev->timer_elapsed_us(x, 0, 1) / o->iters;
    dist_max_doubles(&us, 1);
    w->time_us = us;
    w->algbw = comm_algbw(w->bytes, us);
    w->busbw = exec_bench_busbw(b->op.kind, w->algbw, x->dist.size);
    exec_watch_step("size %lld B: checking the results", w->bytes);
    /* The last of the back-to-back calls (or graph replays) must still be right. */
    double wrong = (double)check_pattern(b, send, recv, count, salt, false);
    if (o->check) {
        if (b->op.kind == PLAN_OP_ALLREDUCE || b->op.kind == PLAN_OP_REDUCE_SCATTER)
            wrong += (double)check_random(b, send, recv, count, salt + 1000);
        else /* nothing summed: a second call on a fresh pattern */
            wrong += (double)check_pattern(b, send, recv, count, salt + 1000, true);
        if (b->in_place)
            wrong += (double)check_pattern(b, send, send, count, salt + 2000, true);
    }
    dist_sum_doubles(&wrong, 1);
    w->wrong = (long long)wrong;
}

/* Elements each rank sends for a size: reduce-scatter and all-to-all split them evenly over the ranks,
 * so the size is rounded down to a multiple of the ranks (one element per rank at least). */
static long long row_count(const bench *b, long long bytes)
{
    const long long n = bytes / (long long)b->x.dev->elem_bytes, r = b->x.dist.size;
    if (b->op.kind != PLAN_OP_REDUCE_SCATTER && b->op.kind != PLAN_OP_ALLTOALL)
        return n;
    return n / r > 0 ? n / r * r : r;
}

/* backend: a cfg_backend, or -1 for the per-size policy (o->policy through comm_select). */
static void run_backend(bench *b, int backend, bool virtual_ranks, exec_bench_backend *out)
{
    exec_ctx *x = &b->x;
    const exec_bench_opts *o = b->o;
    memset(out, 0, sizeof(*out));
    out->backend = backend;
    char why[320] = "";
    const comm_backend *c;
    /* In place when the backend (a policy: every one of its rules) takes send == recv. */
    bool uses_nccl = backend == CFG_BACKEND_NCCL, in_place = backend < 0 || cfg_backend_in_place(backend);
    if (backend >= 0) {
        snprintf(out->name, sizeof(out->name), "%s", cfg_backend_names[backend]);
        c = comm_find_backend(backend, why, sizeof(why));
    } else {
        char pol[80];
        snprintf(out->name, sizeof(out->name), "policy(%s)", cfg_policy_format(&o->policy, pol, sizeof(pol)));
        c = comm_select_configure(&o->policy, -1, &x->select_opts);
        for (int i = 0; i < o->policy.n; i++) {
            uses_nccl = uses_nccl || o->policy.rule[i].backend == CFG_BACKEND_NCCL;
            in_place = in_place && cfg_backend_in_place(o->policy.rule[i].backend);
        }
    }
    b->in_place = in_place && b->op.kind == PLAN_OP_ALLREDUCE;
    int rc = c ? 0 : -1;
    if (c && !comm_backend_has(c, b->op.kind)) {
        snprintf(why, sizeof(why), "backend %s has no %s", out->name, plan_op_kind_names[b->op.kind]);
        c = NULL;
        rc = -1;
    }
    exec_watch_step("asking whether backend %s can run here", out->name);
    if (c) {
        x->comm = c;
        exec_comm_bind(x);
        x->cc.opts = backend < 0 ? &x->select_opts : NULL;
        rc = c->supported(&x->cc, why, sizeof(why));
        /* The plain nccl backend does not check this itself; NCCL would abort in ncclCommInitRank. */
        if (!rc && uses_nccl && virtual_ranks) {
            snprintf(why, sizeof(why), "NCCL needs one GPU per rank (it rejects duplicate GPUs); these ranks share "
                                       "a GPU");
            rc = -1;
        }
    }
    if (dist_agree(&x->dist, rc, why, sizeof(why))) {
        snprintf(out->why, sizeof(out->why), "%s", why);
        return;
    }
    out->ran = true;
    out->graph = o->graph && x->dev->has_graphs && c->graph_safe;
    exec_watch_backend(out->name);
    exec_watch_step("initialising backend %s", out->name);
    c->init(&x->cc);
    for (int i = 0; i < o->n_sizes; i++) {
        exec_bench_row *w = &out->rows[out->n_rows++];
        w->bytes = o->sizes[i];
        w->model_us = NAN;
        w->count = row_count(b, o->sizes[i]);
        w->bytes = w->count * (long long)x->dev->elem_bytes;
        for (int v = 0; v < o->n_verify; v++)
            w->verify_size = w->verify_size || o->verify_counts[v] == w->count;
        time_size(b, w, out->graph, i + 1);
    }
    x->n_env = 0;
    c->describe(&x->cc);
    memcpy(out->env, x->env, sizeof(x->env));
    out->n_env = x->n_env;
    exec_comm_fini(x);
    x->comm = NULL;
}

int exec_bench_run(dist_job *d, const exec_bench_opts *o, exec_bench_result *out)
{
    memset(out, 0, sizeof(*out));
    exec_options eo = {.device = o->device, .backend = CFG_BACKEND_NONE, .graph = o->graph, .iters = o->iters,
                       .warmup = o->warmup, .check = o->check, .seed = o->seed, .debug_corrupt_rank = -1,
                       .fault = o->fault, .nccl_tuning = &o->nccl_tuning, .p2p = o->p2p,
                       .max_host_bytes = o->max_host_bytes};
    plan p;
    memset(&p, 0, sizeof(p));
    p.ranks = d->size;
    snprintf(p.scenario, sizeof(p.scenario), "bench-allreduce");
    bench b;
    memset(&b, 0, sizeof(b));
    b.o = o;
    b.x.opt = &eo;
    b.x.plan = &p;
    b.x.dist = *d;
    b.op.kind = plan_op_is_collective((plan_op_kind)o->collective) ? (plan_op_kind)o->collective : PLAN_OP_ALLREDUCE;
    b.op.ranks = d->size;
    snprintf(b.op.name, sizeof(b.op.name), "bench");
    exec_ctx *x = &b.x;
    char why[320] = "";
    x->dev = exec_find_device(o->device, why, sizeof(why));
    if (!x->dev) {
        if (d->rank == 0)
            fprintf(stderr, "vpsim bench-allreduce: %s\n", why);
        return 2;
    }
    long long max_count = 1; /* the largest buffer a call sends or receives */
    for (int i = 0; i < o->n_sizes; i++) {
        const long long n = row_count(&b, o->sizes[i]), got = out_elems(&b, n);
        max_count = n > max_count ? n : max_count;
        max_count = got > max_count ? got : max_count;
    }
    x->cc.max_comm_elems = max_count;
    /* On the CPU device every buffer is host memory: the device's send and receive buffers, MPI's own
     * staging of a call (about one more), and with --check the input, output and reference copies. Said
     * before anything is allocated, the same on every rank (the sizes are the same everywhere). */
    if (o->device == CFG_DEVICE_CPU && o->max_host_bytes) {
        const double need = (double)max_count * (double)sizeof(float) * (3.0 + (o->check ? 3.0 : 0.0));
        if (need > (double)o->max_host_bytes) {
            if (d->rank == 0) {
                char a[32], lim[32];
                fprintf(stderr, "vpsim bench-allreduce: the largest size needs about %s of host memory per rank%s, "
                                "over the %s budget (--max-host-memory GIB, default %d): lower -e/--sizes or raise "
                                "the budget\n",
                        util_fmt_bytes(need, a, sizeof(a)), o->check ? " with --check" : "",
                        util_fmt_bytes((double)o->max_host_bytes, lim, sizeof(lim)), EXEC_MAX_HOST_GIB_DEFAULT);
            }
            return 2;
        }
    }
    exec_watch_step("initialising the %s device", x->dev->name);
    x->dev->init(x);
    int rc = x->dev->prepare(x);
    if (dist_agree(&x->dist, rc, x->why, sizeof(x->why))) {
        if (d->rank == 0)
            fprintf(stderr, "vpsim bench-allreduce: %s\n", x->why);
        x->dev->fini(x);
        return 2;
    }
    x->dev->timers_alloc(x, 2);
    const bool virtual_ranks = util_env_get(x->env, x->n_env, "virtual_ranks") != NULL;
    x->dev->describe(x, false);
    memcpy(out->env, x->env, sizeof(x->env));
    out->n_env = x->n_env;

    out->ranks = d->size;
    out->collective = b.op.kind;
    snprintf(out->device, sizeof(out->device), "%s", x->dev->name);
    snprintf(out->type, sizeof(out->type), "%s", x->dev->elem_bytes == 2 ? "bf16" : "float");
    out->elem_bytes = (int)x->dev->elem_bytes;
    out->iters = o->iters;
    out->warmup = o->warmup;
    out->graph_requested = o->graph;
    out->check = o->check;
    out->virtual_ranks = virtual_ranks;
    out->p2p = o->p2p;
    if (o->check) {
        b.in = util_xmalloc((size_t)max_count * sizeof(float));
        b.out = util_xmalloc((size_t)max_count * sizeof(float));
        b.ref0 = util_xmalloc((size_t)max_count * sizeof(float));
    }
    out->backends = util_xcalloc((size_t)o->n_backends + 1, sizeof(*out->backends));
    out->n_backends = o->n_backends + (o->with_policy ? 1 : 0);
    for (int k = 0; k < out->n_backends; k++) {
        run_backend(&b, k < o->n_backends ? o->backends[k] : -1, virtual_ranks, &out->backends[k]);
        for (int i = 0; i < out->backends[k].n_rows; i++)
            out->wrong_total += out->backends[k].rows[i].wrong;
    }
    free(b.in);
    free(b.out);
    free(b.ref0);
    x->dev->fini(x);
    return 0;
}


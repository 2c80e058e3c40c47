/* `vpsim bench-allreduce --collective`: which collective a benchmark times (see bench_collective.h). */
#include "bench_collective.h"

#include "../comm/comm.h"
#include "../config/cfg_schema.h"
#include "../dist/dist.h"

#include <stdio.h>
#include <string.h>

int bench_collective_backends(exec_bench_opts *o, bool named, char *lacking, size_t len)
{
    const char *kind = plan_op_kind_names[o->collective];
    int kept = 0;
    for (int k = 0; k < o->n_backends; k++) {
        char why[320];
        const int b = o->backends[k];
        const comm_backend *c = comm_find_backend(b, why, sizeof(why));
        if (!c || comm_backend_has(c, (plan_op_kind)o->collective)) {
            o->backends[kept++] = b; /* not in this build: its 'unsupported' row says so */
            continue;
        }
        if (named)
            return util_usage_error("bench-allreduce", "--collective %s: backend %s has no %s (choose another "
                                                      "--backend)",
                                   kind, cfg_backend_names[b], kind);
        const size_t n = strlen(lacking);
        snprintf(lacking + n, len - n, "%s%s", n ? ", " : "", cfg_backend_names[b]);
    }
    o->n_backends = kept;
    if (kept == 0 && !o->with_policy)
        return util_usage_error("bench-allreduce", "--collective %s: none of the backends (%s) has one", kind, lacking);
    return 0;
}

/* The sizes a user lists: every one kept (16 slots stay free for the scenario's verify payloads), or
 * the whole list refused naming the item and the limit. */
int bench_parse_sizes(const char *arg, size_t elem, exec_bench_opts *o)
{
    char **items;
    const int n_items = util_split_list("bench-allreduce", "--sizes", arg, &items);
    if (n_items < 0)
        return VP_EXIT_USAGE;
    int rc = 0;
    o->n_sizes = 0;
    for (int i = 0; i < n_items && !rc; i++) {
        long long v;
        if (cfg_parse_bytes(items[i], &v) || v < 1) {
            rc = util_usage_error("bench-allreduce", "--sizes item %d '%s': expected a size in bytes, optionally with K, "
                                                    "M or G",
                                 i + 1, items[i]);
            break;
        }
        v = v / (long long)elem * (long long)elem;
        if (v < 1) {
            rc = util_usage_error("bench-allreduce", "--sizes item %d '%s' is smaller than one %zu-byte element", i + 1,
                                 items[i], elem);
            break;
        }
        bool seen = false;
        for (int k = 0; k < o->n_sizes; k++)
            seen = seen || o->sizes[k] == v;
        if (!seen && o->n_sizes == BENCH_MAX_USER_SIZES) {
            rc = util_usage_error("bench-allreduce", "--sizes: item %d '%s' is distinct size number %d; at most %d "
                                                    "distinct sizes per run",
                                 i + 1, items[i], BENCH_MAX_USER_SIZES + 1, BENCH_MAX_USER_SIZES);
            break;
        }
        o->n_sizes = exec_bench_add_size(o->sizes, o->n_sizes, BENCH_MAX_USER_SIZES, v);
    }
    util_list_free(items, n_items);
    return rc;
}

/* reduce_scatter and alltoall split a size evenly over the ranks, rounding it down to a multiple of
 * them (the help says so); a size under one element per rank has no such multiple. Listed with --sizes
 * it is refused; from a -b/-e sweep it is left out, with a note. 0, or VP_EXIT_USAGE (said by rank 0). */
int bench_fit_split_sizes(exec_bench_opts *o, bool listed, const dist_job *d)
{
    if (o->collective != PLAN_OP_REDUCE_SCATTER && o->collective != PLAN_OP_ALLTOALL)
        return 0;
    char why[256];
    const exec_device *dev = exec_find_device(o->device, why, sizeof(why));
    const long long least = (long long)d->size * (long long)(dev ? dev->elem_bytes : 4);
    int kept = 0, dropped = 0;
    for (int i = 0; i < o->n_sizes; i++) {
        if (o->sizes[i] >= least) {
            o->sizes[kept++] = o->sizes[i];
            continue;
        }
        if (listed) {
            if (d->rank == 0)
                util_usage_error("bench-allreduce", "--sizes %lld: --collective %s over %d ranks needs at least %lld "
                                                   "bytes (one element per rank; sizes are rounded down to a "
                                                   "multiple of the ranks)",
                                o->sizes[i], plan_op_kind_names[o->collective], d->size, least);
            return VP_EXIT_USAGE;
        }
        dropped++;
    }
    o->n_sizes = kept;
    if (kept == 0) {
        if (d->rank == 0)
            util_usage_error("bench-allreduce", "--collective %s over %d ranks needs sizes of at least %lld bytes; "
                                               "raise -e/--maxbytes",
                            plan_op_kind_names[o->collective], d->size, least);
        return VP_EXIT_USAGE;
    }
    if (dropped && d->rank == 0)
        fprintf(stderr, "vpsim bench-allreduce: note: --collective %s over %d ranks: %d size(s) under %lld bytes "
                        "(one element per rank) left out\n",
                plan_op_kind_names[o->collective], d->size, dropped, least);
    return 0;
}

/* ---------------- --backend ---------------- */

/* Backends each device can run: the CUDA-only ones (CFG_BACKEND_LIST's `where`) need the cuda device. */
#define NEEDS_CUDA_HOST false
#define NEEDS_CUDA_CUDA true
#define NEEDS_CUDA(ID, name, key, where, ...) [CFG_BACKEND_##ID] = NEEDS_CUDA_##where,
static const bool backend_needs_cuda[CFG_BACKEND_COUNT] = {CFG_BACKEND_LIST(NEEDS_CUDA)};
#undef NEEDS_CUDA

/* Every real allreduce of the list, comma-separated: what --backend takes besides "all". */
void bench_reducing_backends(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int b = 0; b < CFG_BACKEND_COUNT; b++)
        if (cfg_backend_reduces(b))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", cfg_backend_names[b]);
}

/* --backend's default: the real allreduces that run where the device is (the GPU backends on cuda, the
 * host ones on cpu), comma-separated into buf. */
void bench_default_backends(int device, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int b = 0; b < CFG_BACKEND_COUNT; b++)
        if (cfg_backend_reduces(b) && backend_needs_cuda[b] == (device == CFG_DEVICE_CUDA))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "", cfg_backend_names[b]);
}

static void add_backend(exec_bench_opts *o, int b)
{
    for (int k = 0; k < o->n_backends; k++)
        if (o->backends[k] == b)
            return;
    if (o->n_backends < CFG_BACKEND_COUNT)
        o->backends[o->n_backends++] = b;
}

/* "all": every reducing backend the device can run; the others are listed in `skipped` (for one note
 * from rank 0 once MPI runs). */
static void add_all_backends(exec_bench_opts *o, char *skipped, size_t len)
{
    for (int b = 0; b < CFG_BACKEND_COUNT; b++) {
        if (!cfg_backend_reduces(b))
            continue;
        if (backend_needs_cuda[b] && o->device != CFG_DEVICE_CUDA)
            snprintf(skipped + strlen(skipped), len - strlen(skipped), "%s%s", skipped[0] ? ", " : "",
                     cfg_backend_names[b]);
        else
            add_backend(o, b);
    }
}

/* Sets *named when an item other than "all" names a backend: only those make an 'unsupported' row an
 * error. */
int bench_parse_backends(const char *arg, exec_bench_opts *o, bool *named, char *skipped, size_t len)
{
    char list[256];
    bench_reducing_backends(list, sizeof(list));
    char **items;
    const int n_items = util_split_list("bench-allreduce", "--backend", arg, &items);
    if (n_items < 0)
        return VP_EXIT_USAGE;
    int rc = 0;
    o->n_backends = 0;
    *named = false;
    for (int i = 0; i < n_items && !rc; i++) {
        if (!strcmp(items[i], "all")) {
            add_all_backends(o, skipped, len);
            continue;
        }
        int b = cfg_enum_index(cfg_backend_names, items[i]);
        if (!cfg_backend_reduces(b)) {
            rc = util_usage_error("bench-allreduce", "--backend '%s': valid choices: %s, all", items[i], list);
            break;
        }
        *named = true;
        add_backend(o, b);
    }
    util_list_free(items, n_items);
    return rc;
}

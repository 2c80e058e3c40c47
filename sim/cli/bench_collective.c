/* `vpsim bench-allreduce --collective`: which collective a benchmark times (see bench_collective.h). */
#include "bench_collective.h"

#include "../comm/comm.h"
#include "../config/cfg_schema.h"
#include "../dist/dist.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

int bench_collective_parse(const char *arg, exec_bench_opts *o)
{
    /* allreduce_norm is left out: it needs the residual and weight buffers a benchmark does not have. */
    static const char *const kinds[] = {"allreduce", "allgather", "reduce_scatter", "alltoall", NULL};
    if (cfg_enum_index(kinds, arg) >= 0) {
        o->collective = cfg_enum_index(plan_op_kind_names, arg);
        return 0;
    }
    char list[80];
    return cli_usage_error("bench-allreduce", "--collective '%s': valid choices: %s", arg,
                           cfg_enum_list(kinds, list, sizeof(list)));
}

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
            return cli_usage_error("bench-allreduce", "--collective %s: backend %s has no %s (choose another "
                                                      "--backend)",
                                   kind, cfg_backend_names[b], kind);
        const size_t n = strlen(lacking);
        snprintf(lacking + n, len - n, "%s%s", n ? ", " : "", cfg_backend_names[b]);
    }
    o->n_backends = kept;
    if (kept == 0 && !o->with_policy)
        return cli_usage_error("bench-allreduce", "--collective %s: none of the backends (%s) has one", kind, lacking);
    return 0;
}

/* The sizes a user lists: every one kept (16 slots stay free for the scenario's verify payloads), or
 * the whole list refused naming the item and the limit. */
int bench_parse_sizes(const char *arg, size_t elem, exec_bench_opts *o)
{
    char **items;
    const int n_items = cli_split_list("bench-allreduce", "--sizes", arg, &items);
    if (n_items < 0)
        return VP_EXIT_USAGE;
    int rc = 0;
    o->n_sizes = 0;
    for (int i = 0; i < n_items && !rc; i++) {
        long long v;
        if (cfg_parse_bytes(items[i], &v) || v < 1) {
            rc = cli_usage_error("bench-allreduce", "--sizes item %d '%s': expected a size in bytes, optionally with K, "
                                                    "M or G",
                                 i + 1, items[i]);
            break;
        }
        v = v / (long long)elem * (long long)elem;
        if (v < 1) {
            rc = cli_usage_error("bench-allreduce", "--sizes item %d '%s' is smaller than one %zu-byte element", i + 1,
                                 items[i], elem);
            break;
        }
        bool seen = false;
        for (int k = 0; k < o->n_sizes; k++)
            seen = seen || o->sizes[k] == v;
        if (!seen && o->n_sizes == BENCH_MAX_USER_SIZES) {
            rc = cli_usage_error("bench-allreduce", "--sizes: item %d '%s' is distinct size number %d; at most %d "
                                                    "distinct sizes per run",
                                 i + 1, items[i], BENCH_MAX_USER_SIZES + 1, BENCH_MAX_USER_SIZES);
            break;
        }
        o->n_sizes = exec_bench_add_size(o->sizes, o->n_sizes, BENCH_MAX_USER_SIZES, v);
    }
    cli_list_free(items, n_items);
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
                cli_usage_error("bench-allreduce", "--sizes %lld: --collective %s over %d ranks needs at least %lld "
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
            cli_usage_error("bench-allreduce", "--collective %s over %d ranks needs sizes of at least %lld bytes; "
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

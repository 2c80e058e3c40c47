/* `vpsim bench-allreduce --collective`: which collective a benchmark times (see bench_collective.h). */
#include "bench_collective.h"

#include "../comm/comm.h"
#include "../config/cfg_schema.h"
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

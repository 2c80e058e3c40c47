/* bench_collective: `vpsim bench-allreduce --collective KIND` — the kinds it times and the backends
 * that have them (bench_collective.c). */
#ifndef VPSIM_BENCH_COLLECTIVE_H
#define VPSIM_BENCH_COLLECTIVE_H

#include "../exec/exec_bench.h"

#include <stdbool.h>
#include <stddef.h>

/* --collective ARG: allreduce, allgather, reduce_scatter or alltoall into o->collective (a
 * plan_op_kind). 0, or VP_EXIT_USAGE after an error naming the valid choices. */
int bench_collective_parse(const char *arg, exec_bench_opts *o);
/* Leave out of o->backends those without o->collective: an error (VP_EXIT_USAGE) when the user named
 * the backend (`named`), or when none is left and no policy runs; else their names go to `lacking`
 * (for a note). */
int bench_collective_backends(exec_bench_opts *o, bool named, char *lacking, size_t len);

#endif

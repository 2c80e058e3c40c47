/* bench_collective: what `vpsim bench-allreduce` times (bench_collective.c) — the backends (--backend,
 * from the list), the collective kind (--collective) and the backends that have it, the sizes. */
#ifndef VPSIM_BENCH_COLLECTIVE_H
#define VPSIM_BENCH_COLLECTIVE_H

#include "../exec/exec_bench.h"

#include <stdbool.h>
#include <stddef.h>

/* Every real allreduce of the list, ", "-separated: what --backend takes besides "all". */
void bench_reducing_backends(char *buf, size_t len);
/* --backend's default on `device` (a cfg_device): the real allreduces that run there, ","-separated. */
void bench_default_backends(int device, char *buf, size_t len);
/* --backend LIST into o->backends ("all": every one the device can run; the others' names go to
 * `skipped`, for one note). *named: an item other than "all" named a backend. 0, or VP_EXIT_USAGE. */
int bench_parse_backends(const char *arg, exec_bench_opts *o, bool *named, char *skipped, size_t len);
/* Leave out of o->backends those without o->collective: an error (VP_EXIT_USAGE) when the user named
 * the backend (`named`), or when none is left and no policy runs; else their names go to `lacking`
 * (for a note). */
int bench_collective_backends(exec_bench_opts *o, bool named, char *lacking, size_t len);

/* The sizes a user lists (--sizes), each rounded down to whole `elem`-byte elements: every one kept
 * (16 slots stay free for the scenario's verify payloads), or the whole list refused naming the item and
 * the limit. 0, or VP_EXIT_USAGE. */
#define BENCH_MAX_USER_SIZES (EXEC_BENCH_MAX_SIZES - 16)
int bench_parse_sizes(const char *arg, size_t elem, exec_bench_opts *o);
/* reduce_scatter and alltoall round a size down to a multiple of the ranks: a size under one element per
 * rank is refused when `listed` (--sizes), else left out with a note. 0, or VP_EXIT_USAGE (said by rank
 * 0). */
struct dist_job;
int bench_fit_split_sizes(exec_bench_opts *o, bool listed, const struct dist_job *d);

#endif

/* exec_mpi_costs: the host MPI figures the `mpi` backend's model consumes (host.mpi_lat_us,
 * host.mpi_bw_gbs), measured on the job's own ranks: MPI_Allreduce of fp32 host buffers, as comm_mpi.c
 * runs it, at a small and a large size. With steps = ceil(log2 ranks) (the model's recursive doubling):
 *   t(b) = steps x (lat + b / bw)  =>  bw = steps x (b2 - b1) / (t2 - t1),  lat = t1 / steps - b1 / bw
 * Each t is the median over repetitions of the mean call time of a timed loop (rank 0's clock, after a
 * barrier). The sizes, 4 KiB and 256 KiB of fp32, bracket the verify pass's payload (the line holds
 * between them, not across MPI's protocol switches). convert_gbs times dev_bf16.c's two conversions over
 * 32768 elements (cache-resident, like a verify payload), on rank 0 alone. */
#ifndef VPSIM_EXEC_MPI_COSTS_H
#define VPSIM_EXEC_MPI_COSTS_H

#include "../dist/dist.h"

#include <stdbool.h>

typedef struct exec_mpi_costs {
    double lat_us, bw_gbs;     /* per step */
    double convert_gbs;        /* bf16 bytes converted to fp32 and back per second (dev_bf16.c), each way */
    int convert_elems;         /* elements per conversion timed */
    double small_bytes, large_bytes;
    double small_us, large_us; /* median per call */
    int reps, iters;
} exec_mpi_costs;

/* Collective over MPI_COMM_WORLD; needs >= 2 ranks. 0, or -1 with a reason (every rank alike). */
int exec_mpi_costs_measure(const dist_job *d, bool quick, exec_mpi_costs *out, char *why, size_t len);

#endif

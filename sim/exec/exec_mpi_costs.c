/* The host MPI figures of the mpi backend's model, measured (exec_mpi_costs.h). */
#include "exec_mpi_costs.h"

#include "dev_bf16.h"

#include "../util/util.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Mean seconds per MPI_Allreduce of `count` floats over `iters` calls, rank 0's clock (broadcast). */
static double timed_loop(float *send, float *recv, int count, int iters)
{
    VP_MPI(MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD)); /* warm the path */
    VP_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        VP_MPI(MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    double t = (MPI_Wtime() - t0) / iters;
    VP_MPI(MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return t;
}

static double median_call_us(float *send, float *recv, int count, int iters, int reps)
{
    double v[16];
    for (int r = 0; r < reps; r++)
        v[r] = 1e6 * timed_loop(send, recv, count, iters);
    return util_percentile(v, reps, 0.5);
}

int exec_mpi_costs_measure(const dist_job *d, bool quick, exec_mpi_costs *out, char *why, size_t len)
{
    memset(out, 0, sizeof(*out));
    if (d->size < 2) {
        snprintf(why, len, "host MPI costs need at least 2 ranks (this job has %d)", d->size);
        return -1;
    }
    /* The model is linear in bytes; the two sizes bracket what it is used for: 4 KiB (latency-bound) and
     * 256 KiB of fp32, around the verify pass's 43 KB bf16 payload (86 KB as fp32). Above that MPI
     * switches protocols and the line would be another one. */
    const int small = 1024, large = 65536;
    out->reps = quick ? 3 : 7;
    out->iters = quick ? 20 : 100;
    float *send = util_xcalloc((size_t)large, sizeof(float)), *recv = util_xcalloc((size_t)large, sizeof(float));
    out->small_bytes = 4.0 * small;
    out->large_bytes = 4.0 * large;
    out->small_us = median_call_us(send, recv, small, out->iters, out->reps);
    out->large_us = median_call_us(send, recv, large, out->iters / 2, out->reps);
    /* Both conversions over 32768 elements (64 KiB of bf16: cache-resident, as a verify-pass payload is
     * between its copy and its MPI call), many rounds, median of reps. */
    enum { CONVERT = 32768 };
    out->convert_elems = CONVERT;
    /* Rank 0 alone (the others wait in the broadcast): only its figure is kept, and ranks converting at
     * the same time would share its cores and caches. */
    if (d->rank == 0) {
        uint16_t *half = util_xcalloc((size_t)CONVERT, sizeof(uint16_t));
        double conv[16];
        for (int r = 0; r < out->reps; r++) {
            const int rounds = quick ? 50 : 400;
            const double t0 = MPI_Wtime();
            for (int i = 0; i < rounds; i++) {
                dev_bf16_to_float(send, half, CONVERT);
                dev_float_to_bf16(half, send, CONVERT);
            }
            conv[r] = (MPI_Wtime() - t0) / rounds; /* seconds for one conversion each way */
        }
        out->convert_gbs = 2.0 * 2.0 * CONVERT / util_percentile(conv, out->reps, 0.5) / 1e9;
        free(half);
    }
    VP_MPI(MPI_Bcast(&out->convert_gbs, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    free(send);
    free(recv);
    const double steps = ceil(log2((double)d->size));
    const double dt = out->large_us - out->small_us;
    if (!(dt > 0)) {
        snprintf(why, len, "host MPI_Allreduce took no longer at %.0f B (%.2f us) than at %.0f B (%.2f us): no bandwidth "
                 "can be read from that", out->large_bytes, out->large_us, out->small_bytes, out->small_us);
        return -1;
    }
    out->bw_gbs = steps * (out->large_bytes - out->small_bytes) / dt / 1e3;
    out->lat_us = fmax(0.0, out->small_us / steps - out->small_bytes / (out->bw_gbs * 1e3));
    return 0;
}

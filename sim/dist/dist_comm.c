/* The checked collectives over MPI_COMM_WORLD (dist.h), below the board and the shared segments that
 * use them; a failed call goes down to the failure path (dist_fail.c). */
#include "dist.h"

#include <mpi.h>
#include <stdio.h>

void dist_barrier(void) { VP_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

void dist_bcast(void *buf, size_t bytes, int root)
{
    VP_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
}

void dist_max_doubles(double *v, int n)
{
    VP_MPI(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
}

void dist_sum_doubles(double *v, int n)
{
    VP_MPI(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
}

void dist_gather_doubles(const double *in, int n, double *out)
{
    VP_MPI(MPI_Gather(in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, 0, MPI_COMM_WORLD));
}

bool dist_all(bool v)
{
    int x = v ? 1 : 0;
    VP_MPI(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    return x != 0;
}

int dist_agree(const dist_job *d, int rc, char *why, size_t len)
{
    int mine = rc ? d->rank : d->size, first = mine;
    VP_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (first == d->size)
        return 0;
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", rc ? why : "");
    VP_MPI(MPI_Bcast(msg, (int)sizeof(msg), MPI_CHAR, first, MPI_COMM_WORLD));
    if (d->size > 1)
        snprintf(why, len, "rank %d: %s", first, msg);
    else
        snprintf(why, len, "%s", msg);
    return -1;
}

#include "dist.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dist_job g_dist;

void dist_init(dist_job *d, int *argc, char ***argv)
{
    int inited = 0;
    MPI_Initialized(&inited);
    memset(d, 0, sizeof(*d));
    if (!inited) {
        int provided = 0;
        /* FUNNELED: only the main thread calls MPI; host progress threads are NCCL's own. */
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "vpsim: MPI_Init_thread failed\n");
            exit(1);
        }
        d->mpi_initialised_here = true;
    }
    /* Errors come back as codes so that VP_MPI can name the call before aborting. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    VP_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &d->rank));
    VP_MPI(MPI_Comm_size(MPI_COMM_WORLD, &d->size));
    MPI_Comm local;
    VP_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local));
    VP_MPI(MPI_Comm_rank(local, &d->local_rank));
    VP_MPI(MPI_Comm_size(local, &d->local_size));
    VP_MPI(MPI_Comm_free(&local));
    if (gethostname(d->host, sizeof(d->host) - 1) != 0)
        snprintf(d->host, sizeof(d->host), "unknown");
    g_dist = *d;
}

void dist_finalize(dist_job *d)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (d->mpi_initialised_here && !fin)
        MPI_Finalize();
}


_Noreturn void dist_fail(const char *file, int line, const char *what, const char *detail)
{
    fprintf(stderr, "vpsim[rank %d@%s]: %s:%d: %s: %s\n", g_dist.rank, g_dist.host[0] ? g_dist.host : "?", file,
            line, what, detail ? detail : "");
    fflush(stderr);
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

_Noreturn void dist_mpi_fail(const char *file, int line, const char *call, int rc)
{
    char msg[MPI_MAX_ERROR_STRING + 64];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof(msg), "MPI error %d", rc);
    dist_fail(file, line, call, msg);
}

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

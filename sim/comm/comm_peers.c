/* Where the custom backends' ranks are and how their GPUs reach each other (CUDA builds only; see
 * comm_custom.h): the GPU each rank will use, the bus ids of all of them, whether a job can run the
 * custom kernels at all (supported()), and the P2P attributes of every GPU pair for the topology line. */
#include "comm_custom.h"
#include "comm.h"
#include "../dist/dist_cuda.h"
#include "../util/util.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* The device the CUDA device picks for this rank (dev_cuda.c, cuda_init: local rank modulo the GPU
 * count). supported() runs before the device's init, so it cannot ask cudaGetDevice. */
static int rank_device(const comm_ctx *x, char *why, size_t len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1) {
        snprintf(why, len, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return -1;
    }
    return x->dist.local_rank % count;
}

/* Every rank's GPU PCI bus id ("" where unknown): all[rank * 32]. Collective. */
static char *gather_bus_ids(const comm_ctx *x, int dev, char *mine, size_t mine_len)
{
    char bus[32] = "";
    if (dev >= 0 && cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess)
        bus[0] = '\0';
    snprintf(mine, mine_len, "%s", bus);
    char *all = util_xcalloc((size_t)x->dist.size, sizeof(bus));
    VP_MPI(MPI_Allgather(bus, (int)sizeof(bus), MPI_CHAR, all, (int)sizeof(bus), MPI_CHAR, MPI_COMM_WORLD));
    return all;
}

int comm_ranks_share_gpu(const comm_ctx *x, char *why, size_t len)
{
    char local[256] = "", mine[32];
    int dev = rank_device(x, local, sizeof(local));
    char *all = gather_bus_ids(x, dev, mine, sizeof(mine));
    int shared = 0;
    for (int p = 0; p < x->dist.size && mine[0]; p++)
        shared += strcmp(all + (size_t)p * 32, mine) == 0;
    free(all);
    if (local[0])
        snprintf(why, len, "%s", local);
    else if (shared > 1)
        snprintf(why, len,
                 "%d ranks share GPU %s (virtual ranks); NCCL needs one GPU per rank (it rejects duplicate GPUs)",
                 shared, mine);
    return local[0] || shared > 1 ? -1 : 0;
}

int comm_custom_supported(comm_ctx *x, char *why, size_t len)
{
    char local[256] = "";
    int dev = -1;
    if (strcmp(x->dev->name, "cuda") != 0)
        snprintf(local, sizeof(local), "custom allreduce needs the cuda device (use --backend mpi with --device cpu)");
    else if (x->dist.size > COMM_MAX_RANKS)
        snprintf(local, sizeof(local), "custom allreduce supports up to %d ranks (the job has %d)", COMM_MAX_RANKS,
                 x->dist.size);
    else if (x->dist.local_size != x->dist.size)
        snprintf(local, sizeof(local),
                 "custom allreduce maps peer memory with %s, which needs every rank on one host (this host has %d "
                 "of %d ranks)",
                 x->p2p == COMM_P2P_SYSMEM ? "POSIX shared memory" : "CUDA IPC", x->dist.local_size, x->dist.size);
    else
        dev = rank_device(x, local, sizeof(local));
    /* P2P access between distinct GPUs is a hard requirement, except in sysmem mode, where no GPU
     * touches another's memory; the same GPU needs none. */
    if (x->p2p == COMM_P2P_SYSMEM)
        dev = -1; /* still collective: every rank gathers the bus ids */
    char bus[32];
    char *all = gather_bus_ids(x, dev, bus, sizeof(bus));
    for (int p = 0; p < x->dist.size && dev >= 0 && bus[0] && !local[0]; p++) {
        const char *pb = all + (size_t)p * 32;
        int ord = -1, can = 0;
        if (!pb[0] || strcmp(pb, bus) == 0 || cudaDeviceGetByPCIBusId(&ord, pb) != cudaSuccess)
            continue; /* same GPU, or not visible here: the P2P check at init decides */
        if (cudaDeviceCanAccessPeer(&can, dev, ord) == cudaSuccess && !can)
            snprintf(local, sizeof(local),
                     "GPU %s (rank %d) cannot access GPU %s (rank %d) by P2P (cudaDeviceCanAccessPeer = 0): loads and "
                     "stores through CUDA IPC mappings are impossible on this topology (--p2p sysmem needs no P2P)",
                     bus, x->dist.rank, pb, p);
    }
    free(all);
    cudaGetLastError(); /* clear a failed lookup's error state */
    snprintf(why, len, "%s", local);
    return dist_agree(&x->dist, local[0] != 0, why, len);
}

void comm_custom_topology(comm_topo *t, int device, int rank, int world, const comm_reg_record *recs)
{
    comm_topo_from_records(t, recs, world);
    signed char row[3][COMM_MAX_RANKS];
    memset(row, -1, sizeof(row));
    const int mine = t->gpu[rank];
    for (int p = 0; p < world; p++) {
        const int g = t->gpu[p];
        int ord = -1, v = 0;
        if (g == mine || row[0][g] >= 0 || cudaDeviceGetByPCIBusId(&ord, recs[p].bus_id) != cudaSuccess)
            continue;
        if (cudaDeviceCanAccessPeer(&v, device, ord) == cudaSuccess)
            row[0][g] = (signed char)v;
        if (cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrPerformanceRank, device, ord) == cudaSuccess)
            row[1][g] = (signed char)v;
        if (cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, device, ord) == cudaSuccess)
            row[2][g] = (signed char)v;
    }
    cudaGetLastError();
    signed char *all = util_xcalloc((size_t)world, sizeof(row));
    VP_MPI(MPI_Allgather(row, (int)sizeof(row), MPI_SIGNED_CHAR, all, (int)sizeof(row), MPI_SIGNED_CHAR,
                         MPI_COMM_WORLD));
    for (int p = 0; p < world; p++) {
        const int g = t->gpu[p];
        bool first_on_gpu = true; /* one rank speaks for its GPU */
        for (int q = 0; q < p; q++)
            first_on_gpu = first_on_gpu && t->gpu[q] != g;
        if (!first_on_gpu)
            continue;
        const signed char(*r)[COMM_MAX_RANKS] = (const signed char(*)[COMM_MAX_RANKS])(all + (size_t)p * sizeof(row));
        for (int j = 0; j < t->n_gpus; j++) {
            t->access[g][j] = r[0][j];
            t->perf_rank[g][j] = r[1][j];
            t->atomics[g][j] = r[2][j];
        }
    }
    free(all);
}

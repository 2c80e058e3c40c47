/* model_nccl_steps: one NCCL protocol step over one link of the box, as its transport (P2P, SHM, NET)
 * does it, and the ring's links in those terms. Below model_comm.c (the NCCL formula) and
 * model_alltoall.c (its peer steps), which both read these. */
#include "model_internal.h"
#include "model_topo.h"

#include <math.h>
#include <string.h>

/* One protocol step over link a -> b as the transport does it:
 *   P2P (NCCL writes into the peer's buffer; P2P read mode is A100-NVLink only): LL polls its own memory
 *     for the line the peer stored (a peer store's visibility); Simple adds the system-scope fence
 *     before the tail store (prims_simple.h postPeer).
 *   SHM (buffers in the receiver's host memory, NCCL_SHM_LOCALITY=2; the kernel loads and stores them
 *     directly, no cudaMemcpy): LL polls the line through host memory; Simple waits for the tail there,
 *     then loads the data from host memory (a dependent round trip), after the sender's fence.
 *   NET on one host (sockets): the proxy copies down and up, and a host step between.
 * On NVLink NCCL's hwLat is the floor of a step (its kernels' own pipeline); on PCIe the transport's
 * latency is the step (NCCL's PCI hwLat is an estimate for P2P over a switch). */
static double link_step_us(const cfg_system *s, int a, int b, int p, int n, model_nccl_transport *tr,
                           const char **src)
{
    *tr = model_nccl_link(s, a, b, n);
    double t;
    switch (*tr) {
    case MODEL_NCCL_P2P:
        t = model_link_visible_us(s, a, b, src) + (p == MODEL_NCCL_SIMPLE ? s->links.fence_us : 0.0);
        break;
    case MODEL_NCCL_SHM:
        t = model_link_host_visible_us(s, a, b, src);
        if (p == MODEL_NCCL_SIMPLE)
            t += s->links.fence_us + model_link_host_load_rtt_us(s, b, NULL);
        break;
    default:
        t = 2.0 * s->host.memcpy_lat_us + s->host.mpi_lat_us;
        if (src)
            *src = "2 x host.memcpy_lat_us + host.mpi_lat_us (sockets through NCCL's proxy)";
        break;
    }
    if (s->topology.interconnect == CFG_IC_NVLINK)
        t = fmax(t, model_nccl_hw_lat(s, MODEL_NCCL_RING, p));
    return t;
}

void model_ring_links_read(const cfg_system *s, int n, int p, model_ring_links *l)
{
    memset(l, 0, sizeof(*l));
    l->n = n;
    l->lo = INFINITY;
    for (int r = 0; r < n && n > 1; r++) {
        model_nccl_transport tr;
        const char *src = NULL;
        const double t = link_step_us(s, r, (r + 1) % n, p, n, &tr, &src);
        l->counts[tr]++;
        l->src[tr] = src;
        l->mean += t / n;
        l->lo = fmin(l->lo, t);
        l->hi = fmax(l->hi, t);
    }
}

/* One NCCL peer step a -> b for model_alltoall.c (LL or Simple over its transport). */
double model_nccl_p2p_step_us(const cfg_system *s, int a, int b, int n, bool ll)
{
    model_nccl_transport tr;
    return link_step_us(s, a, b, ll ? MODEL_NCCL_LL : MODEL_NCCL_SIMPLE, n, &tr, NULL);
}

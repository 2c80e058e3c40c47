/* The ranks' shared segments of the link probe (exec_links_internal.h): named and mapped here, below
 * both the schedule (exec_links.c) and the devices' measurements (exec_links_cpu.c, exec_links_cuda.c)
 * that use them; not in exec_links_host.c, which the kernel tests link without MPI. */
#include "exec_links_internal.h"

#include <string.h>

void *exec_links_shm(const char *name, size_t bytes, bool create, int node, char *why, size_t len)
{
    if (!create)
        return dist_shm_attach(name, bytes, why, len);
    /* Not reserved: the pages come at the first touch below, under the NUMA policy given first. */
    void *p = dist_shm_create(name, bytes, false, why, len);
    if (p) {
        exec_links_bind(p, bytes, node); /* best effort: a segment that cannot be placed still works */
        memset(p, 0, bytes);
    }
    return p;
}

exec_links_name exec_links_seg_name(unsigned long long token, int rank)
{
    exec_links_name n;
    dist_shm_name(n.s, sizeof(n.s), "links", token, rank);
    return n;
}

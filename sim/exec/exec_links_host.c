/* Plain-C helpers of the link probe (exec_links_internal.h): pointer chains, medians, shared memory and
 * NUMA placement. */
#include "exec_links_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* splitmix64: a seeded generator whose sequence does not depend on the C library. */
static unsigned long long mix(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void exec_links_chain(unsigned *next, int n, unsigned long long seed)
{
    /* Sattolo: shuffle an identity order with j < i strictly; the result read as "next" is one cycle. */
    unsigned *order = malloc((size_t)n * sizeof(*order));
    if (!order)
        abort();
    for (int i = 0; i < n; i++)
        order[i] = (unsigned)i;
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(mix(&seed) % (unsigned long long)i);
        const unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < n; i++)
        next[order[i]] = order[(i + 1) % n];
    free(order);
}

void exec_links_chain_fill(void *buf, const unsigned *next, int n)
{
    for (int i = 0; i < n; i++)
        for (int l = 0; l < EXEC_LINKS_CHAIN_LINES; l++)
            memcpy((char *)buf + (size_t)i * EXEC_LINKS_NODE_BYTES + (size_t)l * EXEC_LINKS_LINE_BYTES, &next[i],
                   sizeof(next[i]));
}

double exec_links_spread_pct(const double *v, int n)
{
    if (n < 2)
        return 0.0;
    const double med = util_percentile(v, n, 0.5);
    return med > 0 ? 100.0 * (util_percentile(v, n, 1.0) - util_percentile(v, n, 0.0)) / med : 0.0;
}

double exec_links_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int exec_links_bus_numa(const char *bus)
{
    if (!bus || !bus[0])
        return -1;
    /* sysfs spells the bus id in lower case ("0000:1b:00.0"); CUDA in upper case. */
    char lower[32], path[96];
    size_t i = 0;
    for (; bus[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)(bus[i] >= 'A' && bus[i] <= 'F' ? bus[i] - 'A' + 'a' : bus[i]);
    lower[i] = '\0';
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", lower);
    FILE *f = fopen(path, "r");
    int node = -1;
    if (f) {
        if (fscanf(f, "%d", &node) != 1)
            node = -1;
        fclose(f);
    }
    return node;
}

/* A node's memory size from its meminfo ("Node 1 MemTotal: 12345 kB"); 0 when unknown. */
static long long node_mem_kb(int node)
{
    char path[80], line[160];
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
    FILE *f = fopen(path, "r");
    long long kb = 0;
    while (f && fgets(line, sizeof(line), f)) {
        const char *m = strstr(line, "MemTotal:");
        if (m && sscanf(m + 9, "%lld", &kb) == 1)
            break;
    }
    if (f)
        fclose(f);
    return kb;
}

int exec_links_far_node(int near)
{
    DIR *dir = opendir("/sys/devices/system/node");
    if (!dir)
        return -1;
    int far = -1;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        int node;
        char tail;
        if (sscanf(e->d_name, "node%d%c", &node, &tail) != 1 || node == near || node_mem_kb(node) <= 0)
            continue;
        if (far < 0 || node < far)
            far = node;
    }
    closedir(dir);
    return near < 0 ? -1 : far;
}

/* mbind(2) constants (linux/mempolicy.h), spelled here so that no libnuma header is needed. */
#define LINKS_MPOL_BIND 2
#define LINKS_MPOL_MF_STRICT 1
#define LINKS_MPOL_MF_MOVE 2

int exec_links_bind(void *p, size_t bytes, int node)
{
#ifdef SYS_mbind
    if (node < 0)
        return 0;
    if (node >= 1024)
        return -1;
    unsigned long mask[1024 / (8 * sizeof(unsigned long))];
    memset(mask, 0, sizeof(mask));
    mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
    return (int)syscall(SYS_mbind, p, bytes, LINKS_MPOL_BIND, mask, (unsigned long)1024,
                        LINKS_MPOL_MF_STRICT | LINKS_MPOL_MF_MOVE);
#else
    (void)p, (void)bytes;
    return node < 0 ? 0 : -1;
#endif
}

/* The node that holds the page at p (get_mempolicy with MPOL_F_NODE | MPOL_F_ADDR), -1 when unknown. A
 * kernel that accepts mbind without honouring it (some sandboxes) is caught here. */
static int page_node(void *p)
{
#ifdef SYS_get_mempolicy
    int node = -1;
    if (syscall(SYS_get_mempolicy, &node, NULL, 0ul, p, 1ul | 2ul) == 0)
        return node;
#else
    (void)p;
#endif
    return -1;
}

void *exec_links_alloc_on(size_t bytes, int node)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (exec_links_bind(p, bytes, node) != 0) {
        munmap(p, bytes);
        return NULL;
    }
    memset(p, 0, bytes); /* the pages are placed now, under the policy */
    if (node >= 0 && (page_node(p) != node || page_node((char *)p + bytes - 1) != node)) {
        munmap(p, bytes);
        return NULL;
    }
    return p;
}

void exec_links_unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

/* The GPUs' topology through NVML, loaded at run time (see dev_nvml_topo.h). */
#include "dev_nvml_topo.h"
#include "dev_nvml.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const dev_path_names[] = {"?", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", NULL};

typedef int (*fn_count)(unsigned *);
typedef int (*fn_by_bus)(const char *, void **);
typedef int (*fn_ancestor)(void *, void *, int *);
typedef int (*fn_p2p)(void *, void *, int, int *);
typedef int (*fn_uint)(void *, unsigned *);
typedef int (*fn_link)(void *, unsigned, int *);

#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_NVLINK_MAX_LINKS 18


/* NVML_TOPOLOGY_SINGLE = 10 ... SYSTEM = 50 (nvml.h), INTERNAL = 0 (the same GPU). */
static int path_of_level(int level)
{
    switch (level) {
    case 10: return DEV_PATH_PIX;
    case 20: return DEV_PATH_PXB;
    case 30: return DEV_PATH_PHB;
    case 40: return DEV_PATH_NODE;
    case 50: return DEV_PATH_SYS;
    default: return DEV_PATH_UNKNOWN;
    }
}

/* Per GPU: PCIe now and at most, any NVLink active. */
static void per_gpu(void *lib, void *dev, int i, dev_topo *t)
{
    unsigned v;
    fn_uint cg = (fn_uint)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetCurrPcieLinkGeneration");
    fn_uint cw = (fn_uint)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetCurrPcieLinkWidth");
    fn_uint mg = (fn_uint)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetMaxPcieLinkGeneration");
    fn_uint mw = (fn_uint)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetMaxPcieLinkWidth");
    fn_link state = (fn_link)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetNvLinkState");
    t->pcie_gen[i] = cg && cg(dev, &v) == 0 ? (int)v : 0;
    t->pcie_width[i] = cw && cw(dev, &v) == 0 ? (int)v : 0;
    t->pcie_max_gen[i] = mg && mg(dev, &v) == 0 ? (int)v : 0;
    t->pcie_max_width[i] = mw && mw(dev, &v) == 0 ? (int)v : 0;
    t->nvlink[i] = false;
    for (unsigned l = 0; state && l < NVML_NVLINK_MAX_LINKS && !t->nvlink[i]; l++) {
        int active = 0;
        t->nvlink[i] = state(dev, l, &active) == 0 && active == 1;
    }
}

void dev_nvml_topology(const char (*bus)[32], int n, dev_topo *t)
{
    memset(t, 0, sizeof(*t));
    t->n = n < DEV_TOPO_MAX ? n : DEV_TOPO_MAX;
    void *lib = dev_nvml_load(t->why, sizeof(t->why));
    if (!lib)
        return;
    fn_count count = (fn_count)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetCount_v2");
    fn_by_bus by_bus = (fn_by_bus)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    fn_ancestor anc = (fn_ancestor)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetTopologyCommonAncestor");
    fn_p2p p2p = (fn_p2p)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetP2PStatus");
    unsigned c = 0;
    t->box_gpus = count && count(&c) == 0 ? (int)c : 0;
    void *dev[DEV_TOPO_MAX] = {0};
    t->read = by_bus != NULL;
    for (int i = 0; i < t->n && t->read; i++) {
        if (!bus[i][0] || by_bus(bus[i], &dev[i]) != 0) {
            snprintf(t->why, sizeof(t->why), "NVML does not know the GPU at bus id '%s'", bus[i]);
            t->read = false;
        }
    }
    if (!by_bus)
        snprintf(t->why, sizeof(t->why), "this NVML lacks nvmlDeviceGetHandleByPciBusId_v2");
    for (int i = 0; i < t->n && t->read; i++) {
        per_gpu(lib, dev[i], i, t);
        for (int j = 0; j < t->n; j++) {
            int level = -1, st = -1;
            if (i == j)
                continue;
            /* Two GPUs can share a PCIe switch and an NVLink: the link NCCL and the kernels use is NVLink. */
            if (p2p && p2p(dev[i], dev[j], NVML_P2P_CAPS_INDEX_NVLINK, &st) == 0 && st == 0)
                t->path[i][j] = DEV_PATH_NV;
            else
                t->path[i][j] = anc && anc(dev[i], dev[j], &level) == 0 ? path_of_level(level) : DEV_PATH_UNKNOWN;
        }
    }
    dlclose(lib);
}

int dev_nvml_gpu_count(char *why, size_t len)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis && *vis) {
        /* CUDA stops at the first entry it cannot parse; commas separate the rest. */
        int n = 1;
        for (const char *s = vis; *s; s++)
            n += *s == ',';
        return n;
    }
    dev_topo t;
    memset(&t, 0, sizeof(t));
    void *lib = dev_nvml_load(t.why, sizeof(t.why));
    if (!lib) {
        snprintf(why, len, "%s", t.why);
        return -1;
    }
    fn_count count = (fn_count)(uintptr_t)dev_nvml_sym(lib, "nvmlDeviceGetCount_v2");
    unsigned c = 0;
    const int n = count && count(&c) == 0 ? (int)c : -1;
    if (n < 0)
        snprintf(why, len, "nvmlDeviceGetCount_v2 failed");
    dlclose(lib);
    return n;
}

double dev_pcie_gbs(int gen, int width)
{
    /* GB/s per lane and direction after encoding: GT/s x 8/10 or 128/130 (or FLIT's 242/256) / 8 bits. */
    static const double lane[] = {0, 2.5 * 0.8 / 8, 5.0 * 0.8 / 8, 8.0 * 128 / 130 / 8, 16.0 * 128 / 130 / 8,
                                  32.0 * 128 / 130 / 8, 64.0 * 242 / 256 / 8};
    if (gen < 1 || gen > 6 || width < 1)
        return 0;
    return lane[gen] * width;
}

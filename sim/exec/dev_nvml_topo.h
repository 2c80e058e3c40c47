/* dev_nvml_topo: how the machine says its GPUs are connected, as NVML reports it (`vpsim probe`): the
 * path type of each GPU pair (nvidia-smi topo -m's NV / PIX / PXB / PHB / NODE / SYS), whether each GPU
 * has an active NVLink, each GPU's PCIe generation and width (now and at most), and the GPUs this
 * process may use. NVML is loaded at run time (as dev_nvml.c does): without it nothing is read and
 * `why` says so; the probe then writes no topology key from it. */
#ifndef VPSIM_DEV_NVML_TOPO_H
#define VPSIM_DEV_NVML_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#define DEV_TOPO_MAX 16 /* CFG_PATHS_MAX */

/* Closest first: the order of NVML's nvmlGpuTopologyLevel_t, NVLink before all. */
typedef enum {
    DEV_PATH_UNKNOWN,
    DEV_PATH_NV,   /* NVLink between the two (nvmlDeviceGetP2PStatus, NVLINK index) */
    DEV_PATH_PIX,  /* one PCIe switch (NVML_TOPOLOGY_SINGLE) */
    DEV_PATH_PXB,  /* several PCIe switches, no host bridge (MULTIPLE) */
    DEV_PATH_PHB,  /* one host bridge (HOSTBRIDGE) */
    DEV_PATH_NODE, /* host bridges of one NUMA node (NODE) */
    DEV_PATH_SYS,  /* across the socket interconnect (SYSTEM) */
    DEV_PATH_COUNT
} dev_path;
extern const char *const dev_path_names[]; /* "?", "NV", "PIX", "PXB", "PHB", "NODE", "SYS" */

typedef struct dev_topo {
    bool read; /* NVML answered for every GPU */
    char why[160];
    int n;        /* GPUs asked about */
    int box_gpus; /* GPUs NVML sees in the machine (ignores CUDA_VISIBLE_DEVICES), 0 unknown */
    int path[DEV_TOPO_MAX][DEV_TOPO_MAX]; /* dev_path; the diagonal unused */
    bool nvlink[DEV_TOPO_MAX];            /* any NVLink of the GPU active */
    int pcie_gen[DEV_TOPO_MAX], pcie_width[DEV_TOPO_MAX];         /* current: idle GPUs train down */
    int pcie_max_gen[DEV_TOPO_MAX], pcie_max_width[DEV_TOPO_MAX]; /* the most the GPU and slot allow */
} dev_topo;

/* The topology of the `n` GPUs at PCI bus ids `bus` (cudaDeviceGetPCIBusId's form). Never fails:
 * t->read says whether NVML answered, t->why why not. */
void dev_nvml_topology(const char (*bus)[32], int n, dev_topo *t);

/* GPUs this process may use: the entries of CUDA_VISIBLE_DEVICES when it is set, else NVML's count;
 * -1 when neither tells (no NVML), with why. */
int dev_nvml_gpu_count(char *why, size_t len);

/* Theoretical bytes per second of one PCIe link, per direction, in GB/s: lanes x the generation's
 * per-lane rate after line encoding (spec: PCI-SIG, 2.5 / 5 GT/s with 8b/10b, 8 / 16 / 32 GT/s with
 * 128b/130b, 64 GT/s PAM4 with FLIT ~242/256). 0 for an unknown generation or width. */
double dev_pcie_gbs(int gen, int width);

#endif

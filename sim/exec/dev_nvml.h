/* dev_nvml: the GPU's clocks, temperature and power as NVML reports them, for the environment a
 * measurement records (a throttled card explains a slow run). NVML is loaded at run time: a machine
 * without it still runs, and says the state was not read. */
#ifndef VPSIM_DEV_NVML_H
#define VPSIM_DEV_NVML_H

#include <stddef.h>

typedef struct dev_nvml {
    void *lib; /* dlopen handle of libnvidia-ml, NULL when absent */
    void *dev; /* the GPU's handle, NULL when it could not be found */
} dev_nvml;

/* libnvidia-ml loaded and initialised (dlopen + nvmlInit_v2), or NULL with why (may be NULL); dlclose it
 * when done. Every NVML reader of vpsim (this state, dev_nvml_topo.c) loads it here. */
void *dev_nvml_load(char *why, size_t len);
/* An NVML function by name from a loaded library (NULL: lib is NULL or the driver lacks it). */
void *dev_nvml_sym(void *lib, const char *name);

/* Open NVML and find the GPU at PCI bus id `bus` (cudaDeviceGetPCIBusId's form). */
void dev_nvml_open(dev_nvml *n, const char *bus);
/* "SM 1980 MHz, memory 3201 MHz, 39 C, 90 W", or -1 when NVML or the GPU is unavailable. */
int dev_nvml_state(const dev_nvml *n, char *buf, size_t len);
void dev_nvml_close(dev_nvml *n);

#endif

/* The GPU's state through NVML, loaded at run time (see dev_nvml.h). */
#include "dev_nvml.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_bus_fn)(const char *, void **);
typedef int (*nvml_clock_fn)(void *, int, unsigned *);
typedef int (*nvml_temp_fn)(void *, int, unsigned *);
typedef int (*nvml_power_fn)(void *, unsigned *);

void *dev_nvml_sym(void *lib, const char *name)
{
    return lib ? dlsym(lib, name) : NULL;
}

void *dev_nvml_load(char *why, size_t len)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    nvml_init_fn init = (nvml_init_fn)(uintptr_t)dev_nvml_sym(lib, "nvmlInit_v2");
    if (!lib || !init || init() != 0) {
        if (why)
            snprintf(why, len, "%s", lib ? "nvmlInit failed" : "libnvidia-ml.so.1 not found");
        if (lib)
            dlclose(lib);
        return NULL;
    }
    return lib;
}

void dev_nvml_open(dev_nvml *n, const char *bus)
{
    n->dev = NULL;
    n->lib = dev_nvml_load(NULL, 0);
    nvml_by_bus_fn by_bus = (nvml_by_bus_fn)(uintptr_t)dev_nvml_sym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    if (!by_bus || !bus || by_bus(bus, &n->dev) != 0)
        n->dev = NULL;
}

int dev_nvml_state(const dev_nvml *n, char *buf, size_t len)
{
    if (!n->dev)
        return -1;
    nvml_clock_fn clock = (nvml_clock_fn)(uintptr_t)dlsym(n->lib, "nvmlDeviceGetClockInfo");
    nvml_temp_fn temp = (nvml_temp_fn)(uintptr_t)dlsym(n->lib, "nvmlDeviceGetTemperature");
    nvml_power_fn power = (nvml_power_fn)(uintptr_t)dlsym(n->lib, "nvmlDeviceGetPowerUsage");
    unsigned sm = 0, mem = 0, t = 0, mw = 0;
    /* NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0. */
    if (clock)
        clock(n->dev, 1, &sm), clock(n->dev, 2, &mem);
    if (temp)
        temp(n->dev, 0, &t);
    if (power)
        power(n->dev, &mw);
    snprintf(buf, len, "SM %u MHz, memory %u MHz, %u C, %.0f W", sm, mem, t, mw / 1000.0);
    return 0;
}

void dev_nvml_close(dev_nvml *n)
{
    if (n->lib)
        dlclose(n->lib);
    n->lib = n->dev = NULL;
}

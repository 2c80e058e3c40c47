/* The CUDA device's facts (dev_cuda_facts.h): the GPU a rank runs on, as cudaGetDeviceProperties and
 * NVML report it, for the gpu section of a measured system file. */
#include "dev_cuda_facts.h"

#include "dev_nvml.h"

#include <cuda_runtime.h>
#include <stdio.h>

void dev_cuda_facts(int local_rank, exec_facts *f)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1)
        return; /* exec_device_ready refused such a machine before anyone asks */
    const int dev = local_rank % count;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        return;
    snprintf(f->gpu_name, sizeof(f->gpu_name), "%.95s", prop.name);
    f->sms = prop.multiProcessorCount;
    f->memory_gib = prop.totalGlobalMem / 1073741824.0;
    f->cc = prop.major * 10 + prop.minor;
    snprintf(f->label, sizeof(f->label), "%.100s (sm_%d%d, %d SMs, %.1f GiB)", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount, f->memory_gib);
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(f->uuid, sizeof(f->uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    char bus[32];
    dev_nvml n;
    dev_nvml_open(&n, cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) == cudaSuccess ? bus : NULL);
    if (dev_nvml_state(&n, f->clocks, sizeof(f->clocks)))
        f->clocks[0] = '\0';
    dev_nvml_close(&n);
}

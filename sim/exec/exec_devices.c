/* Which devices this build has, generated from CFG_DEVICE_LIST (cfg_lists.h): the one place that knows
 * whether the CUDA device was built in. */
#include "exec.h"

#include <stdio.h>

/* A device's table is exec_device_<key>; those marked CUDA exist only in CUDA builds. */
#define DECLARE(ID, name, key, ...) extern const exec_device exec_device_##key;
CFG_DEVICE_LIST(DECLARE)
#undef DECLARE

#define IN_BUILD_HOST(key) &exec_device_##key
#if VPSIM_HAVE_CUDA
#define IN_BUILD_CUDA(key) &exec_device_##key
#else
#define IN_BUILD_CUDA(key) NULL
#endif
#define ENTRY(ID, name, key, where, ...) [CFG_DEVICE_##ID] = IN_BUILD_##where(key),
static const exec_device *const devices[CFG_DEVICE_COUNT] = {CFG_DEVICE_LIST(ENTRY)};
#undef ENTRY

const exec_device *exec_find_device(int device, char *why, size_t len)
{
    if (device < 0 || device >= CFG_DEVICE_COUNT) {
        snprintf(why, len, "unknown device %d", device);
        return NULL;
    }
    if (!devices[device])
        snprintf(why, len, "no usable %s device here (this build has no CUDA: built with CUDA=0): use --device cpu",
                 cfg_device_names[device]);
    return devices[device];
}

int exec_device_ready(const dist_job *d, int device, char *why, size_t len)
{
    char mine[400] = "";
    const exec_device *dev = exec_find_device(device, mine, sizeof(mine));
    int rc = dev ? 0 : -1;
    if (dev && dev->probe)
        rc = dev->probe(mine, sizeof(mine));
    if (dist_agree(d, rc, mine, sizeof(mine)) == 0)
        return 0;
    snprintf(why, len, "%s", mine);
    return -1;
}

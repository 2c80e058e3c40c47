/* Which devices this build has, generated from CFG_DEVICE_LIST (cfg_lists.h): the one place that knows
 * whether the CUDA device was built in. */
#include "exec.h"

#include "../util/util.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

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

/* cfg_cpu_vendor_names' entry for this host's CPU, or "" when /proc/cpuinfo does not say. */
static const char *host_cpu_vendor(void)
{
    struct utsname u;
    if (uname(&u) == 0 && (strncmp(u.machine, "aarch64", 7) == 0 || strncmp(u.machine, "arm", 3) == 0))
        return "arm";
    char id[64];
    util_cpuinfo("vendor_id", id, sizeof(id));
    return strcmp(id, "AuthenticAMD") == 0 ? "amd" : strcmp(id, "GenuineIntel") == 0 ? "intel" : "";
}

void exec_device_facts(const dist_job *d, int device, exec_facts *f)
{
    memset(f, 0, sizeof(*f));
    char why[200];
    const exec_device *dev = exec_find_device(device, why, sizeof(why));
    snprintf(f->device, sizeof(f->device), "%s", device >= 0 && device < CFG_DEVICE_COUNT ? cfg_device_names[device] : "?");
    snprintf(f->host, sizeof(f->host), "%s", d->host);
    snprintf(f->cpu_vendor, sizeof(f->cpu_vendor), "%s", host_cpu_vendor());
    util_cpuinfo("model name", f->cpu_model, sizeof(f->cpu_model));
    if (dev && dev->facts)
        dev->facts(d->local_rank, f);
    /* Quotes and comment marks would break the YAML strings and comments these go into. */
    for (char *s = f->gpu_name; *s; s++)
        if (*s == '"' || *s == '\\' || *s == '#' || *s == '\n')
            *s = '\'';
}

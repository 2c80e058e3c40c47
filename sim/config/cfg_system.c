#include "cfg_system.h"

#include <float.h>
#include <stddef.h>

const char *const cfg_p2p_names[] = {"direct", "sysmem", "off", NULL};

#define S(f) offsetof(cfg_system, f)

static const cfg_field gpu_fields[] = {
    {.key = "name", .type = CFG_T_STRING, .offset = offsetof(cfg_system, gpu.name) - S(gpu), .doc = "GPU model name"},
    {.key = "sms", .type = CFG_T_INT, .offset = offsetof(cfg_system, gpu.sms) - S(gpu), .def = "132",
     CFG_RANGE(1, 4096), .doc = "streaming multiprocessors"},
    {0},
};

static const cfg_field topology_fields[] = {
    {.key = "p2p", .type = CFG_T_ENUM, .offset = offsetof(cfg_system, topology.p2p) - S(topology), .def = "direct",
     .choices = cfg_p2p_names, .doc = "how GPU-to-GPU loads and stores travel"},
    {0},
};

const cfg_field cfg_system_fields[] = {
    {.key = "name", .type = CFG_T_STRING, .offset = S(name), .doc = "system name"},
    {.key = "description", .type = CFG_T_STRING, .offset = S(description), .def = "''", .doc = "free text"},
    {.key = "gpus", .type = CFG_T_INT, .offset = S(gpus), CFG_RANGE(1, 1024), .doc = "GPUs in the system"},
    {.key = "gpu", .type = CFG_T_MAP, .offset = S(gpu), .fields = gpu_fields, .doc = "the GPU"},
    {.key = "topology", .type = CFG_T_MAP, .offset = S(topology), .fields = topology_fields, .doc = "interconnect"},
    {0},
};

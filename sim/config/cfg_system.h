/* cfg_system: the hardware a scenario runs on (or is modelled on): GPU, topology, host.
 * Every number in a system file carries its provenance in a comment beside it. */
#ifndef VPSIM_CFG_SYSTEM_H
#define VPSIM_CFG_SYSTEM_H

#include "cfg_schema.h"

typedef enum { CFG_P2P_DIRECT, CFG_P2P_SYSMEM, CFG_P2P_OFF } cfg_p2p;
extern const char *const cfg_p2p_names[];

typedef struct cfg_system {
    char *name;
    char *description;
    int gpus; /* GPUs in the box */
    struct {
        char *name;
        int sms;
    } gpu;
    struct {
        int p2p; /* cfg_p2p */
    } topology;
} cfg_system;

extern const cfg_field cfg_system_fields[];

#endif

/* comm_p2p: which backends --p2p concerns (the custom ones), the mode a run's environment reports, and
 * the note when the model's system describes another path (comm_p2p.h). */
#include "comm_p2p.h"

#include "comm.h"

#include "../config/cfg.h"
#include "../config/cfg_system.h"

#include <stdio.h>
#include <string.h>

/* The custom backends are the model's `ipc` family (cfg_lists.h): the ones --p2p applies to. */
#define IS_CUSTOM_nccl false
#define IS_CUSTOM_symm false
#define IS_CUSTOM_ipc true
#define IS_CUSTOM_host false
#define IS_CUSTOM_none false
#define IS_CUSTOM(ID, name, key, where, policy, table, family, ...) [CFG_BACKEND_##ID] = IS_CUSTOM_##family,
static const bool custom[CFG_BACKEND_COUNT] = {CFG_BACKEND_LIST(IS_CUSTOM)};
#undef IS_CUSTOM

bool comm_backend_is_custom(int backend) { return backend >= 0 && backend < CFG_BACKEND_COUNT && custom[backend]; }

int comm_p2p_of_env(const util_env_item *env, int n_env)
{
    const char *v = util_env_get(env, n_env, "custom_p2p");
    if (!v)
        return -1;
    for (int m = 0; m < COMM_P2P_COUNT; m++) {
        const size_t len = strlen(comm_p2p_names[m]);
        if (!strncmp(v, comm_p2p_names[m], len) && (v[len] == '\0' || v[len] == ' '))
            return m;
    }
    return -1;
}

bool comm_p2p_model_differs(int p2p, int system_p2p)
{
    _Static_assert(COMM_P2P_DIRECT == (int)CFG_P2P_DIRECT && COMM_P2P_SYSMEM == (int)CFG_P2P_SYSMEM,
                   "comm_p2p and cfg_p2p disagree");
    return p2p >= 0 && p2p != system_p2p;
}

void comm_p2p_model_hint(char *buf, size_t len, const char *who, int p2p, int system_p2p)
{
    snprintf(buf, len,
             "%s ran with --p2p %s but the model's system has topology.p2p=%s; add --set system.topology.p2p=%s to "
             "compare like with like",
             who, comm_p2p_names[p2p], cfg_p2p_names[system_p2p], cfg_p2p_names[p2p]);
}

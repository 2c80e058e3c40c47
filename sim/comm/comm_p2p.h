/* comm_p2p: the --p2p mode (comm.h's comm_p2p) beside the backends it concerns and the model's system. */
#ifndef VPSIM_COMM_P2P_H
#define VPSIM_COMM_P2P_H

#include "../util/util_env.h"

#include <stdbool.h>
#include <stddef.h>

/* A custom backend (oneshot, twoshot, push: the model's `ipc` family, the ones --p2p applies to). */
bool comm_backend_is_custom(int backend);
/* The mode a custom backend reported in its environment ("custom_p2p"), or -1 when none ran. */
int comm_p2p_of_env(const util_env_item *env, int n_env);
/* The replay's mode (-1: no custom backend ran) is not the model system's topology.p2p (cfg_p2p). */
bool comm_p2p_model_differs(int p2p, int system_p2p);
/* "WHO ran with --p2p X but the model's system has topology.p2p=Y; add --set ... to compare like with like" */
void comm_p2p_model_hint(char *buf, size_t len, const char *who, int p2p, int system_p2p);

#endif

/* --p2p direct|sysmem of `vpsim bench-allreduce` and `vpsim run`: which path the custom backends
 * (oneshot, twoshot, push) take to their peers' buffers (comm.h, comm_p2p), whether the request has
 * anything to apply to, and the note when the model's system describes another path. */
#include "cli.h"

#include "../comm/comm.h"
#include "../config/cfg_policy.h"

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

bool cli_backend_is_custom(int backend) { return backend >= 0 && backend < CFG_BACKEND_COUNT && custom[backend]; }

/* Backend b into the list of those --p2p applies to, or of those it does not; each once (a policy
 * may name a backend twice). */
static void sort_backend(int b, bool seen[CFG_BACKEND_COUNT], char *yes, char *no, size_t len)
{
    if (b < 0 || b >= CFG_BACKEND_COUNT || seen[b])
        return;
    seen[b] = true;
    char *list = cli_backend_is_custom(b) ? yes : no;
    snprintf(list + strlen(list), len - strlen(list), "%s%s", list[0] ? ", " : "", cfg_backend_names[b]);
}

int cli_p2p_check(const char *cmd, int p2p, int device, const int *backends, int n, const cfg_policy *policy,
                  bool say)
{
    if (p2p == COMM_P2P_DIRECT)
        return VP_EXIT_OK;
    if (device != CFG_DEVICE_CUDA) {
        if (say)
            cli_usage_error(cmd, "--p2p %s: the %s device has no custom kernels (oneshot, twoshot and push run on "
                                 "--device cuda)",
                            comm_p2p_names[p2p], cfg_device_names[device]);
        return VP_EXIT_USAGE;
    }
    char yes[160] = "", no[160] = "";
    bool seen[CFG_BACKEND_COUNT] = {false};
    for (int i = 0; i < n; i++)
        sort_backend(backends[i], seen, yes, no, sizeof(yes));
    for (int i = 0; policy && i < policy->n; i++)
        sort_backend(policy->rule[i].backend, seen, yes, no, sizeof(yes));
    if (!yes[0]) {
        if (say)
            cli_usage_error(cmd, "--p2p %s applies to the custom backends (oneshot, twoshot, push) only, and none of "
                                 "them is requested (%s)",
                            comm_p2p_names[p2p], no[0] ? no : "no backend");
        return VP_EXIT_USAGE;
    }
    if (no[0] && say)
        fprintf(stderr, "vpsim %s: note: --p2p %s applies to %s; %s run%s as usual\n", cmd, comm_p2p_names[p2p], yes,
                no, strchr(no, ',') ? "" : "s");
    return VP_EXIT_OK;
}

int cli_p2p_of_env(const util_env_item *env, int n_env)
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

bool cli_p2p_model_differs(int p2p, int system_p2p)
{
    _Static_assert(COMM_P2P_DIRECT == (int)CFG_P2P_DIRECT && COMM_P2P_SYSMEM == (int)CFG_P2P_SYSMEM,
                   "comm_p2p and cfg_p2p disagree");
    return p2p >= 0 && p2p != system_p2p;
}

void cli_p2p_model_hint(char *buf, size_t len, const char *who, int p2p, int system_p2p)
{
    snprintf(buf, len,
             "%s ran with --p2p %s but the model's system has topology.p2p=%s; add --set system.topology.p2p=%s to "
             "compare like with like",
             who, comm_p2p_names[p2p], cfg_p2p_names[system_p2p], cfg_p2p_names[p2p]);
}

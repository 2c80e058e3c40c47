/* --p2p direct|sysmem of `vpsim bench-allreduce` and `vpsim run`: whether the request has anything to
 * apply to (the custom backends, comm_p2p.h). */
#include "cli.h"

#include "../comm/comm.h"
#include "../comm/comm_p2p.h"
#include "../config/cfg_policy.h"

#include <stdio.h>
#include <string.h>

/* Backend b into the list of those --p2p applies to, or of those it does not; each once (a policy
 * may name a backend twice). */
static void sort_backend(int b, bool seen[CFG_BACKEND_COUNT], char *yes, char *no, size_t len)
{
    if (b < 0 || b >= CFG_BACKEND_COUNT || seen[b])
        return;
    seen[b] = true;
    char *list = comm_backend_is_custom(b) ? yes : no;
    snprintf(list + strlen(list), len - strlen(list), "%s%s", list[0] ? ", " : "", cfg_backend_names[b]);
}

int cli_p2p_check(const char *cmd, int p2p, int device, const int *backends, int n, const cfg_policy *policy,
                  bool say)
{
    if (p2p == COMM_P2P_DIRECT)
        return VP_EXIT_OK;
    if (device != CFG_DEVICE_CUDA) {
        if (say)
            util_usage_error(cmd, "--p2p %s: the %s device has no custom kernels (oneshot, twoshot and push run on "
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
            util_usage_error(cmd, "--p2p %s applies to the custom backends (oneshot, twoshot, push) only, and none of "
                                 "them is requested (%s)",
                            comm_p2p_names[p2p], no[0] ? no : "no backend");
        return VP_EXIT_USAGE;
    }
    if (no[0] && say)
        fprintf(stderr, "vpsim %s: note: --p2p %s applies to %s; %s run%s as usual\n", cmd, comm_p2p_names[p2p], yes,
                no, strchr(no, ',') ? "" : "s");
    return VP_EXIT_OK;
}

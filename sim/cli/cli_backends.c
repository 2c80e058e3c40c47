/* --backend LIST of the model-mode commands (model, compare, sweep): the backends they take. */
#include "cli.h"

#include "../config/cfg_schema.h"
#include "../util/util.h"

#include <stdio.h>
#include <string.h>

/* Model mode takes every backend of the list but 'model', which stands for the model itself (run only). */
static bool model_takes(int b) { return b != CFG_BACKEND_MODEL; }

const char *cli_model_backend_names(void)
{
    /* The list's names but the replay-only 'model', as --help prints them: built once from cfg_lists.h. */
    static char names[256];
    return names[0] ? names : cli_names_where(cfg_backend_names, CFG_BACKEND_COUNT, model_takes, names, sizeof(names));
}

void cli_backends_all(cli_backends *b)
{
    b->n = 0;
    for (int i = 0; i < CFG_BACKEND_COUNT; i++)
        if (model_takes(i))
            b->v[b->n++] = (cfg_backend)i;
}

int cli_set_backends(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    cli_backends *b = dest;
    char **items;
    const int n_items = util_split_list(ps->cmd, "--backend", arg, &items);
    if (n_items < 0)
        return VP_EXIT_USAGE;
    int n = 0, rc = VP_EXIT_OK;
    for (int i = 0; i < n_items && rc == VP_EXIT_OK; i++) {
        int k = cfg_enum_index(cfg_backend_names, items[i]);
        if (k < 0) {
            char names[256];
            rc = util_usage_error(ps->cmd, "--backend: unknown backend '%s'; valid: %s", items[i],
                                 cfg_enum_list(cfg_backend_names, names, sizeof(names)));
        } else if (n == CFG_BACKEND_COUNT) {
            rc = util_usage_error(ps->cmd, "--backend: too many backends (at most %d)", CFG_BACKEND_COUNT);
        } else {
            b->v[n++] = (cfg_backend)k;
        }
    }
    util_list_free(items, n_items);
    if (rc == VP_EXIT_OK)
        b->n = n;
    return rc;
}

/* cli_model: what `vpsim model`, `compare` and `sweep` share (cli_model.h): the backend list they take,
 * and the results header of a modelled scenario. */
#include "cli_model.h"
#include "cli.h"

#include "../config/cfg_accept.h"
#include "../util/util.h"

#include <stdio.h>
#include <string.h>

/* Model mode takes every backend of the list but 'model', which stands for the model itself (run only). */
static bool model_takes(int b) { return b != CFG_BACKEND_MODEL; }

const char *cli_model_backend_names(void)
{
    /* The list's names but the replay-only 'model', as --help prints them: built once from cfg_lists.h. */
    static char names[256];
    if (!names[0])
        for (int b = 0; b < CFG_BACKEND_COUNT; b++)
            if (model_takes(b))
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "",
                         cfg_backend_names[b]);
    return names;
}

int cli_parse_backends(const char *list, cfg_backend *out, int max, const char *cmd)
{
    if (!list) {
        int n = 0;
        for (int b = 0; b < CFG_BACKEND_COUNT && n < max; b++)
            if (model_takes(b))
                out[n++] = (cfg_backend)b;
        return n;
    }
    char **items;
    const int n_items = cli_split_list(cmd, "--backend", list, &items);
    if (n_items < 0)
        return -1;
    int n = 0;
    for (int i = 0; i < n_items; i++) {
        int b = cfg_enum_index(cfg_backend_names, items[i]);
        if (b < 0) {
            char names[256];
            cli_usage_error(cmd, "--backend: unknown backend '%s'; valid: %s", items[i],
                            cfg_enum_list(cfg_backend_names, names, sizeof(names)));
            n = -1;
            break;
        }
        if (n == max) {
            cli_usage_error(cmd, "--backend: too many backends (at most %d)", max);
            n = -1;
            break;
        }
        out[n++] = (cfg_backend)b;
    }
    cli_list_free(items, n_items);
    return n;
}

void cli_model_meta(const cfg_scenario *sc, const plan *p, const char *path, char *tok_buf, size_t tok_len,
                      report_results_meta *m)
{
    memset(m, 0, sizeof(*m));
    m->mode = "model";
    m->scenario = sc->name;
    m->scenario_path = path;
    m->system = sc->system.name;
    m->model = sc->target.name;
    m->tp = p->ranks;
    m->batch = p->batch;
    m->context = p->context;
    m->graph = sc->run.graph;
    cfg_accept a;
    cfg_accept_eval(sc, &a);
    m->expected_tokens = a.tokens;
    /* The rates' provenance only when the rates decide (a measured accept length names itself); an
     * extrapolation is a warning of its own under the table (acceptance-extrapolated). */
    if (a.source == CFG_ACCEPT_CHAIN || a.source == CFG_ACCEPT_TREE)
        snprintf(tok_buf, tok_len, "%s (speculative.acceptance: %s)", a.explain,
                 sc->speculative.acceptance_source ? sc->speculative.acceptance_source : "?");
    else
        snprintf(tok_buf, tok_len, "%s", a.explain);
    m->tokens_formula = tok_buf;
    m->provenance = "modelled: analytic model (docs/model.md) on the system file's figures";
}

/* report_meta: the results header (report_results_meta) of a modelled scenario and of a measurement
 * (report_meta.h), which model, run and import-trace write above their rows. */
#include "report_meta.h"

#include "../config/cfg_accept.h"

#include <stdio.h>
#include <string.h>

void report_meta_modelled(const cfg_scenario *sc, const plan *p, const char *path, char *tok_buf, size_t tok_len,
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

report_results_meta report_meta_measured(const char *scenario_path, const cfg_scenario *sc, const plan *p,
                                         const char *mode, bool graph)
{
    report_results_meta m = {
        .mode = mode,
        .scenario = sc ? sc->name : p->scenario,
        .scenario_path = scenario_path,
        .system = sc ? sc->system.name : NULL,
        .model = sc ? sc->target.name : NULL,
        .tp = p->ranks,
        .batch = p->batch,
        .context = p->context,
        .graph = graph,
        .expected_tokens = p->expected_tokens,
        .tokens_formula = "the plan's expected_tokens: chain formula (topk=1), tree model (topk>1) or a measured "
                          "accept length (docs/model.md \"Acceptance\")",
        .provenance = strcmp(mode, "run") == 0 ? "measured (vpsim run; see environment)" : "modelled",
    };
    return m;
}

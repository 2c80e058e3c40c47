/* What an answer's sign rests on: the platform facts nobody measured on the box, each with its plausible
 * other value and the reading that decides it. A gain whose sign flips when one of them takes its other
 * value is an answer that rests on that input; compare, model and the sweep summary say so
 * (docs/model.md "What an answer rests on"). Plain re-evaluation with the other value set. */
#include "model.h"

#include "../config/cfg_provenance.h"
#include "../util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* key, the other value ("x0.5": that factor of the current value; "other": the other of the two modes),
 * and the reading that decides it. */
const model_rest model_rests[] = {
    {"system.topology.peer_loads", "other", "vpsim probe: paths.load_rtt_us against host_load_rtt_us"},
    {"system.topology.peer_stores", "other", "vpsim probe: paths.visible_us"},
    {"system.links.sysmem_load_gbs", "x0.5", "vpsim probe: paths.host_all_load_gbs"},
    {"system.links.sysmem_load_gbs", "x2", "vpsim probe: paths.host_all_load_gbs"},
    {"system.topology.cpu_vendor", "other", "lscpu on the box"},
    {"system.nccl.version", "other", "NCCL_DEBUG=INFO's version line"},
    {"run.graph", "other", "the server's launch mode (SGLang logs 'Capture cuda graph')"},
    {"system.launch.eager_jitter_us", "x4", "vpsim probe: launch.eager_jitter_us"},
};
const int model_n_rests = (int)(sizeof(model_rests) / sizeof(model_rests[0]));

/* The key's current value as --set text, and a number for the provenance lookup. */
static bool current(const cfg_scenario *sc, const char *key, char *buf, size_t len, double *num)
{
    const cfg_system *s = &sc->system;
    *num = NAN;
    if (!strcmp(key, "system.topology.peer_loads"))
        snprintf(buf, len, "%s", cfg_peer_mode_names[s->topology.peer_loads]);
    else if (!strcmp(key, "system.topology.peer_stores"))
        snprintf(buf, len, "%s", cfg_peer_mode_names[s->topology.peer_stores]);
    else if (!strcmp(key, "system.topology.cpu_vendor"))
        snprintf(buf, len, "%s", cfg_cpu_vendor_names[s->topology.cpu_vendor]);
    else if (!strcmp(key, "system.nccl.version"))
        snprintf(buf, len, "%s", s->nccl.version ? s->nccl.version : "");
    else if (!strcmp(key, "run.graph"))
        snprintf(buf, len, "%s", sc->run.graph ? "true" : "false");
    else if (!strcmp(key, "system.links.sysmem_load_gbs"))
        *num = s->links.sysmem_load_gbs;
    else if (!strcmp(key, "system.launch.eager_jitter_us"))
        *num = s->launch.eager_jitter_us;
    else
        return false;
    if (!isnan(*num))
        snprintf(buf, len, "%.17g", *num);
    return true;
}

static const char *other_mode(const char *key, const char *cur)
{
    if (!strcmp(key, "system.topology.peer_loads") || !strcmp(key, "system.topology.peer_stores"))
        return !strcmp(cur, "native") ? "staged" : !strcmp(cur, "staged") ? "native" : NULL;
    if (!strcmp(key, "system.topology.cpu_vendor"))
        return !strcmp(cur, "amd") ? "intel" : !strcmp(cur, "intel") ? "amd" : NULL;
    if (!strcmp(key, "system.nccl.version"))
        return cfg_nccl_version_code(cur) >= 22304 ? "2.22.3" : "2.28.3";
    if (!strcmp(key, "run.graph"))
        return !strcmp(cur, "true") ? "false" : "true";
    return NULL;
}

/* Rest r's other value as --set text: 0, or -1 when it has none here or the file says it is not in doubt. */
static int rest_set(const cfg_scenario *sc, const cfg_prov *p, const model_rest *r, char *buf, size_t len)
{
    char cur[64];
    double num;
    if (!current(sc, r->key, cur, sizeof(cur), &num))
        return -1;
    /* A measured or public value is not in doubt; run.graph is the scenario's, the seed leaves it open. */
    if (!strncmp(r->key, "system.", 7)) {
        char tag[32];
        cfg_prov_lookup(p, r->key + 7, num, tag, sizeof(tag), NULL, 0);
        if (!strcmp(tag, "measured") || !strcmp(tag, "spec"))
            return -1;
    }
    if (r->alt[0] == 'x') {
        if (isnan(num) || num <= 0)
            return -1; /* a factor of zero is zero: no other value */
        snprintf(buf, len, "%s=%.6g", r->key, num * atof(r->alt + 1));
        return 0;
    }
    const char *o = other_mode(r->key, cur);
    if (!o)
        return -1;
    snprintf(buf, len, "%s=%s", r->key, o);
    return 0;
}

int model_rests_for(const cfg_scenario *sc, model_rest_alt *out, int max)
{
    cfg_prov *p = cfg_prov_open(sc->system_path); /* read once for every input */
    int n = 0;
    for (int k = 0; k < model_n_rests && n < max; k++)
        if (rest_set(sc, p, &model_rests[k], out[n].set, sizeof(out[n].set)) == 0)
            out[n++].rest = &model_rests[k];
    cfg_prov_close(p);
    return n;
}

double model_rest_tok_per_s(const char *path, const char *system_path, const char *const *sets, int n, const plan *p,
                            cfg_backend be)
{
    cfg_scenario sc;
    cfg_error err;
    if (cfg_scenario_load(path, sets, n, system_path, &sc, &err))
        return NAN;
    char why[256];
    model_ctx *ctx = model_prepare(&sc, p, why, sizeof(why));
    double v = NAN;
    if (ctx) {
        results_cycle r;
        model_eval(ctx, be, false, &r);
        if (r.available && r.tok_per_s > 0)
            v = r.tok_per_s;
        results_cycle_free(&r);
        model_free(ctx);
    }
    cfg_scenario_free(&sc);
    return v;
}

void model_rest_line(char *buf, size_t len, double gain_pct, const char *set, double alt_gain_pct, const model_rest *r)
{
    snprintf(buf, len, "%+.1f%% flips to %+.1f%% with %s: the sign rests on it; decided by %s", gain_pct,
             alt_gain_pct, set, r->decides);
}

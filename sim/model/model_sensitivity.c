/* Sensitivity: which inputs the answer rests on. Every numeric system-file value (and the acceptance
 * rates) is moved by -frac and +frac in turn, the cycle re-modelled, and the inputs ranked by how far
 * tok/s moves — so a user knows which assumed numbers to measure first. Plain re-evaluation: no
 * derivatives, no fitted weights; the swing is whatever the formulas do with the moved value. */
#include "model_internal.h"

#include "../config/cfg_provenance.h"
#include "../config/cfg_schema.h"
#include "../config/cfg_system.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One input to move: a double (or a list of them) inside a scenario copy. */
typedef struct sens_input {
    char key[MODEL_SENS_KEY];
    size_t offset;      /* from the start of cfg_scenario */
    int count;          /* doubles at offset (lists: their current length) */
    double lo, hi;      /* the schema's range, to clamp into */
} sens_input;

typedef struct sens_inputs {
    sens_input *v;
    int n, cap;
} sens_inputs;

static void add_input(sens_inputs *in, const char *key, size_t offset, int count, double lo, double hi)
{
    if (count <= 0)
        return;
    if (in->n == in->cap) {
        in->cap = in->cap ? 2 * in->cap : 64;
        in->v = util_xrealloc(in->v, (size_t)in->cap * sizeof(*in->v));
    }
    sens_input *x = &in->v[in->n++];
    snprintf(x->key, sizeof(x->key), "%s", key);
    x->offset = offset;
    x->count = count;
    x->lo = lo <= hi ? lo : -INFINITY;
    x->hi = lo <= hi ? hi : INFINITY;
}

/* Every double of the system table, recursively; of the lists, measured durations ("us") and the link
 * quantities of `paths:` (each list moved whole): moving a table's sizes or a list of flags would not be a
 * question a user asks. */
static void collect(sens_inputs *in, const cfg_scenario *sc, const cfg_field *table, size_t base, const char *prefix)
{
    for (const cfg_field *f = table; f->key; f++) {
        char key[MODEL_SENS_KEY];
        snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", f->key);
        const size_t at = base + f->offset;
        if (f->type == CFG_T_MAP)
            collect(in, sc, f->fields, at, key);
        else if (f->type == CFG_T_DOUBLE)
            add_input(in, key, at, 1, f->min, f->max);
        else if (f->type == CFG_T_DOUBLE_LIST && (strcmp(f->key, "us") == 0 || strcmp(prefix, "system.paths") == 0))
            add_input(in, key, at, *(const int *)((const char *)sc + base + f->count_offset), f->min, f->max);
    }
}

static double model_tok_per_s(const cfg_scenario *sc, const plan *p, cfg_backend be, bool *ok)
{
    char why[256];
    model_ctx *ctx = model_prepare(sc, p, why, sizeof(why));
    *ok = false;
    if (!ctx)
        return 0.0;
    results_cycle r;
    model_eval(ctx, be, false, &r);
    model_free(ctx);
    *ok = r.available && r.tok_per_s > 0;
    const double v = r.tok_per_s;
    results_cycle_free(&r);
    return v;
}

/* A list's value to show: its first non-zero entry (a matrix of pairs starts with its empty diagonal). */
static double first_nonzero(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] != 0.0)
            return v[i];
    return n > 0 ? v[0] : 0.0;
}

/* Scale the input's doubles inside `copy` by `factor` (clamped to the schema's range); true when any
 * value hit the clamp. */
static bool scale_input(cfg_scenario *copy, const cfg_scenario *orig, const sens_input *x, double factor, double *first)
{
    double *v = (double *)((char *)copy + x->offset);
    const double *o = (const double *)((const char *)orig + x->offset);
    bool clamped = false;
    for (int i = 0; i < x->count; i++) {
        double t = o[i] * factor;
        if (t > x->hi || t < x->lo) {
            t = fmin(fmax(t, x->lo), x->hi);
            clamped = true;
        }
        v[i] = t;
    }
    *first = first_nonzero(v, x->count);
    return clamped;
}

static int by_swing(const void *a, const void *b)
{
    const model_sens_item *x = a, *y = b;
    return (y->swing > x->swing) - (y->swing < x->swing);
}

int model_sensitivity(const cfg_scenario *sc, const plan *p, cfg_backend be, double frac, model_sens_item *out,
                      int max_out)
{
    bool ok;
    const double base = model_tok_per_s(sc, p, be, &ok);
    if (!ok || max_out <= 0)
        return 0;
    sens_inputs in = {0};
    collect(&in, sc, cfg_system_fields, offsetof(cfg_scenario, system), "system");
    if (sc->speculative.algorithm != CFG_SPEC_NONE)
        add_input(&in, "speculative.acceptance", offsetof(cfg_scenario, speculative.acceptance),
                  sc->speculative.n_acceptance, 0.0, 1.0);

    cfg_scenario *copy = util_xmalloc(sizeof(*copy));
    cfg_prov *prov = cfg_prov_open(sc->system_path);
    model_sens_item *all = util_xcalloc((size_t)in.n + 1, sizeof(*all));
    int n = 0;
    for (int i = 0; i < in.n; i++) {
        const sens_input *x = &in.v[i];
        model_sens_item it = {0};
        snprintf(it.key, sizeof(it.key), "%s", x->key);
        it.value = first_nonzero((const double *)((const char *)sc + x->offset), x->count);
        it.count = x->count;
        it.base_tok_per_s = base;
        bool ok_lo, ok_hi;
        *copy = *sc; /* shallow: only the moved doubles differ, pointers stay shared and are never freed */
        it.clamped = scale_input(copy, sc, x, 1.0 - frac, &it.lo_value);
        it.lo_tok_per_s = model_tok_per_s(copy, p, be, &ok_lo);
        *copy = *sc;
        it.clamped |= scale_input(copy, sc, x, 1.0 + frac, &it.hi_value);
        it.hi_tok_per_s = model_tok_per_s(copy, p, be, &ok_hi);
        if (!ok_lo || !ok_hi)
            continue;
        it.swing = fmax(fabs(it.lo_tok_per_s - base), fabs(it.hi_tok_per_s - base)) / base;
        if (it.swing < 1e-4) /* the answer does not depend on it here */
            continue;
        if (strncmp(x->key, "system.", 7) == 0) {
            cfg_prov_lookup(prov, x->key + 7, it.value, it.tag, sizeof(it.tag), it.note, sizeof(it.note));
            /* A measured table carries its provenance in its `source` string, not in a comment. */
            if (strncmp(x->key, "system.measured.", 16) == 0 && strcmp(it.tag, "untagged") == 0)
                snprintf(it.tag, sizeof(it.tag), "measured");
        } else { /* the scenario's own provenance string: its first word is the tag */
            const char *src = sc->speculative.acceptance_source ? sc->speculative.acceptance_source : "";
            snprintf(it.tag, sizeof(it.tag), "%.*s", (int)strcspn(src, " (:;,"), src);
            snprintf(it.note, sizeof(it.note), "speculative.acceptance_source: %s", src);
        }
        all[n++] = it;
    }
    qsort(all, (size_t)n, sizeof(*all), by_swing);
    const int kept = n < max_out ? n : max_out;
    memcpy(out, all, (size_t)kept * sizeof(*all));
    free(all);
    cfg_prov_close(prov);
    free(copy);
    free(in.v);
    return kept;
}

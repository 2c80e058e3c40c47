/* The points of a `vpsim sweep`: --vary values (lists and integer ranges), the tied key, the --set list
 * of each point, and the check of every value before anything runs. */
#include "sweep.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void push_value(vary *v, char *value)
{
    v->values = util_xrealloc(v->values, (size_t)(v->n + 1) * sizeof(char *));
    v->values[v->n++] = value;
}

/* "A..B" with integers A <= B: its values pushed; 1 when it was a range, 0 when not one, -1 when bad. */
static int push_range(vary *v, const char *item, size_t len)
{
    char *text = util_xstrndup(item, len);
    char *dots = strstr(text, "..");
    long long a, b;
    int rc = 0;
    if (dots && dots != text) {
        *dots = '\0';
        if (util_parse_ll(text, &a) == 0 && util_parse_ll(dots + 2, &b) == 0) {
            rc = a <= b && b - a < SWEEP_MAX_VALUES - v->n ? 1 : -1;
            for (long long x = a; rc == 1 && x <= b; x++)
                push_value(v, util_xasprintf("%lld", x));
        }
    }
    free(text);
    return rc;
}

/* Split "a,b,[c,d],1..5" at commas outside brackets; A..B ranges expand. */
static int split_values(const char *s, vary *v)
{
    const char *start = s;
    int depth = 0;
    for (const char *p = s;; p++) {
        if (*p == '[' || *p == '{')
            depth++;
        else if ((*p == ']' || *p == '}') && depth > 0)
            depth--;
        if ((*p == ',' && depth == 0) || *p == '\0') {
            if (p == start || v->n == SWEEP_MAX_VALUES)
                return -1;
            const int r = push_range(v, start, (size_t)(p - start));
            if (r < 0)
                return -1;
            if (r == 0)
                push_value(v, util_xstrndup(start, (size_t)(p - start)));
            if (*p == '\0')
                return 0;
            start = p + 1;
        }
    }
}

int sweep_add_vary(sweep *sw, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (sw->n_vary == SWEEP_MAX_VARY)
        return util_usage_error("sweep", "at most %d --vary options", SWEEP_MAX_VARY);
    if (!eq || eq == arg || !eq[1])
        return util_usage_error("sweep", "--vary '%s': expected KEY=V1,V2,... or KEY=A..B", arg);
    cfg_error err;
    int bad = cfg_check_set_key(arg, &err);
    if (bad)
        return util_usage_error("sweep", "--vary '%s': %s", arg, err.msg);
    /* The key is kept only once it is accepted: sweep_free frees the first n_vary. */
    const int kl = (int)(eq - arg);
    for (int i = 0; i < sw->n_vary; i++)
        if ((int)strlen(sw->v[i].key) == kl && !strncmp(sw->v[i].key, arg, (size_t)kl))
            return util_usage_error("sweep", "--vary: key '%.*s' is given twice", kl, arg);
    for (int i = 0; i < sw->n_sets; i++)
        if (!strncmp(sw->sets[i], arg, (size_t)kl) && sw->sets[i][kl] == '=')
            return util_usage_error("sweep", "key '%.*s' is both --set and --vary", kl, arg);
    vary *v = &sw->v[sw->n_vary];
    memset(v, 0, sizeof(*v));
    v->key = util_xstrndup(arg, (size_t)kl);
    sw->n_vary++;
    if (split_values(eq + 1, v))
        return util_usage_error("sweep", "--vary '%s': an empty value, a range A..B with A > B, or more than %d values",
                               arg, SWEEP_MAX_VALUES);
    return 0;
}

static int vary_index(const sweep *sw, const char *key)
{
    for (int k = 0; k < sw->n_vary; k++)
        if (!strcmp(sw->v[k].key, key))
            return k;
    return -1;
}

static bool in_sets(const sweep *sw, const char *key)
{
    const size_t kl = strlen(key);
    for (int i = 0; i < sw->n_sets; i++)
        if (!strncmp(sw->sets[i], key, kl) && sw->sets[i][kl] == '=')
            return true;
    return false;
}

#define KEY_STEPS "speculative.steps"
#define KEY_NDT "speculative.num_draft_tokens"

void sweep_setup_tie(sweep *sw)
{
    sweep_tie *t = &sw->tie;
    t->from = -1;
    t->topk_vary = vary_index(sw, "speculative.topk");
    t->base_topk = 1;
    sw->n_cols = sw->n_vary;
    const int steps = vary_index(sw, KEY_STEPS), ndt = vary_index(sw, KEY_NDT);
    if (steps >= 0 && ndt < 0 && !in_sets(sw, KEY_NDT)) {
        *t = (sweep_tie){steps, KEY_NDT, +1, t->topk_vary, 1};
    } else if (ndt >= 0 && steps < 0 && !in_sets(sw, KEY_STEPS)) {
        *t = (sweep_tie){ndt, KEY_STEPS, -1, t->topk_vary, 1};
    } else {
        return;
    }
    sw->n_cols = sw->n_vary + 1;
    cfg_scenario sc;
    cfg_error err;
    const char *sets[CFG_MAX_SETS];
    for (int i = 0; i < sw->n_sets; i++)
        sets[i] = sw->sets[i];
    /* A scenario that only loads with the varied values keeps topk 1: the tie is what it needs then. */
    if (cfg_scenario_load(sw->scenario_path, sets, sw->n_sets, sw->system_path, &sc, &err) == 0) {
        t->base_topk = sc.speculative.topk;
        cfg_scenario_free(&sc);
    }
    fprintf(stderr, "vpsim sweep: %s follows %s (%s = %s %s 1) wherever speculative.topk=1, as SGLang requires; "
                    "vary both keys to choose them yourself\n",
            t->key, sw->v[t->from].key, t->key, sw->v[t->from].key, t->offset > 0 ? "+" : "-");
}

/* The tied key's value at a point, or NULL when the tie does not apply there (topk > 1, or a value
 * that is not an integer: loading reports that). Caller frees. */
static char *tied_value(const sweep *sw, const char **vals)
{
    const sweep_tie *t = &sw->tie;
    if (t->from < 0)
        return NULL;
    long long topk = t->base_topk, v;
    if (t->topk_vary >= 0 && util_parse_ll(vals[t->topk_vary], &topk))
        return NULL;
    if (topk != 1 || util_parse_ll(vals[t->from], &v))
        return NULL;
    return util_xasprintf("%lld", v + t->offset);
}

int sweep_sets_from_vals(const sweep *sw, const char **vals, const char **sets, char **owned)
{
    int n = sw->n_sets;
    for (int i = 0; i < n; i++)
        sets[i] = sw->sets[i];
    for (int k = 0; k < sw->n_vary; k++)
        sets[n++] = owned[k] = util_xasprintf("%s=%s", sw->v[k].key, vals[k]);
    owned[sw->n_vary] = NULL;
    char *tv = tied_value(sw, vals);
    if (tv) {
        sets[n++] = owned[sw->n_vary] = util_xasprintf("%s=%s", sw->tie.key, tv);
        free(tv);
    }
    return n;
}

int sweep_scenario_sets(const sweep *sw, long long idx, const char **sets, char **owned, const char **vals)
{
    for (int k = sw->n_vary - 1; k >= 0; k--) {
        const vary *v = &sw->v[k];
        vals[k] = v->values[idx % v->n];
        idx /= v->n;
    }
    return sweep_sets_from_vals(sw, vals, sets, owned);
}

void sweep_free_sets(const sweep *sw, char **owned)
{
    for (int k = 0; k <= sw->n_vary; k++)
        free(owned[k]);
}

#define SWEEP_CHECK_TRIES 64

static bool is_shape_key(const char *key)
{
    return !strcmp(key, KEY_STEPS) || !strcmp(key, KEY_NDT) || !strcmp(key, "speculative.topk");
}

/* Two or more of steps / topk / num_draft_tokens varied: a search over draft shapes, where a value
 * that fits none of the others tried (steps=2 next to num_draft_tokens=2,4,6 with topk=1) is a
 * combination SGLang rejects, to be skipped and counted, not a typo. */
static bool shape_search(const sweep *sw)
{
    int n = 0;
    for (int k = 0; k < sw->n_vary; k++)
        n += is_shape_key(sw->v[k].key);
    return n >= 2;
}

/* A value is accepted when the scenario loads with it and some choice of the other --vary values (the
 * first SWEEP_CHECK_TRIES tried): speculative.steps=3 is fine next to num_draft_tokens=3,4 even though
 * (3, 3) is not. Combinations that fail only jointly become rows with available=false and the reason.
 * In a draft-shape search the shape keys need only be integers (shape_search). */
int sweep_check_values(const sweep *sw)
{
    const char *sets[CFG_MAX_SETS + SWEEP_MAX_VARY + 1];
    const bool shapes = shape_search(sw);
    for (int k = 0; k < sw->n_vary; k++) {
        if (shapes && is_shape_key(sw->v[k].key)) {
            for (int j = 0; j < sw->v[k].n; j++) {
                long long x;
                if (util_parse_ll(sw->v[k].values[j], &x)) {
                    fprintf(stderr, "vpsim sweep: --vary %s: value '%s' is rejected: expected an integer\n",
                            sw->v[k].key, sw->v[k].values[j]);
                    return -1;
                }
            }
            continue;
        }
        long long others = 1;
        for (int o = 0; o < sw->n_vary; o++)
            if (o != k)
                others *= sw->v[o].n;
        if (others > SWEEP_CHECK_TRIES)
            others = SWEEP_CHECK_TRIES;
        for (int j = 0; j < sw->v[k].n; j++) {
            cfg_error first;
            bool ok = false;
            for (long long a = 0; a < others && !ok; a++) {
                const char *vals[SWEEP_MAX_VARY];
                long long rest = a;
                for (int o = sw->n_vary - 1; o >= 0; o--) {
                    if (o == k) {
                        vals[o] = sw->v[k].values[j];
                        continue;
                    }
                    vals[o] = sw->v[o].values[rest % sw->v[o].n];
                    rest /= sw->v[o].n;
                }
                char *owned[SWEEP_MAX_VARY + 1];
                const int n = sweep_sets_from_vals(sw, vals, sets, owned);
                cfg_scenario sc;
                cfg_error err;
                ok = cfg_scenario_load(sw->scenario_path, sets, n, sw->system_path, &sc, &err) == 0;
                if (ok)
                    cfg_scenario_free(&sc);
                else if (a == 0)
                    first = err;
                sweep_free_sets(sw, owned);
            }
            if (!ok) {
                fprintf(stderr, "vpsim sweep: --vary %s: value '%s' is rejected: %s\n", sw->v[k].key,
                        sw->v[k].values[j], first.msg);
                return -1;
            }
        }
    }
    return 0;
}

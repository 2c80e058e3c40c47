/* compare_run: the compare engine (compare.h): every variant modelled with every backend asked for (plans
 * shared by the variants that differ only in system or run settings), the rows ranked against the
 * baseline, where each figure comes from, what the engines would need, and what each gain's sign rests
 * on. */
#include "compare.h"

#include "../model/model.h"
#include "../util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Plans depend on the scenario and model settings, not on the system or run ones: variants that only
 * change a backend, a P2P path or the launch mode share one (building Kimi's plan dominates a row). */
struct compare_plan {
    char *key;
    plan p;
    bool ok;
    char why[512];
};
typedef struct compare_plan plan_slot;

typedef struct cmp_state {
    const compare_in *c;
    const cfg_backend *bes;
    int n_bes;
    plan_slot *plans;
    int n_plans;
    compare_row *rows;
    int n_rows;
} cmp_state;

static const plan_slot *plan_for(cmp_state *st, const compare_variant *v, const cfg_scenario *sc)
{
    util_buf key = {0};
    util_buf_printf(&key, "|");
    for (int i = 0; i < v->set.n; i++)
        if (strncmp(v->set.v[i], "system.", 7) && strncmp(v->set.v[i], "run.", 4))
            util_buf_printf(&key, "%s|", v->set.v[i]);
    for (int i = 0; i < st->n_plans; i++)
        if (!strcmp(st->plans[i].key, key.s)) {
            util_buf_free(&key);
            return &st->plans[i];
        }
    plan_slot *s = &st->plans[st->n_plans++];
    s->key = key.s;
    s->ok = plan_build(sc, &s->p, s->why, sizeof(s->why)) == 0;
    return s;
}

/* probed / measured / formula / mixed, from the verify allreduce's method and how the plan's compute ops
 * are priced (model_op_source): per op kind, probed when every op of it has a probed law, partly probed
 * when some have, else measured when its measured.ops table applies, else formula. A backend without
 * communication (one rank, `none`) has no allreduce figure to name. */
static void row_source(const cfg_scenario *sc, const plan *p, const results_cycle *r, char *buf, size_t len)
{
    const cfg_system *s = &sc->system;
    int ops[PLAN_OP_KIND_COUNT] = {0}, probed[PLAN_OP_KIND_COUNT] = {0};
    for (int ph = 0; ph < p->n_phases; ph++)
        for (int i = 0; i < p->phases[ph].n_ops; i++) {
            const plan_op *op = &p->phases[ph].ops[i];
            if (!plan_op_is_compute(op->kind))
                continue;
            ops[op->kind]++;
            probed[op->kind] += strcmp(model_op_source(s, op), "probed") == 0;
        }
    int n_kinds = 0, n_probed = 0, n_partly = 0, n_measured = 0;
    for (int k = 0; k < PLAN_OP_KIND_COUNT; k++) {
        if (!ops[k])
            continue;
        n_kinds++;
        if (probed[k] == ops[k])
            n_probed++;
        else if (probed[k])
            n_partly++;
        else
            n_measured += s->measured.use && k < (int)CFG_SYS_OPS_COUNT && s->measured.ops[k].n_us > 0;
    }
    const int n_formula = n_kinds - n_probed - n_partly - n_measured;
    const char *ar = !r->allreduce_method[0] || strstr(r->allreduce_method, "no communication") ? NULL
                     : !strncmp(r->allreduce_method, "measured", 8)                           ? "measured"
                                                                                                : "formula";
    const char *all = !n_kinds                ? NULL
                      : n_probed == n_kinds   ? "probed"
                      : n_measured == n_kinds ? "measured"
                      : n_formula == n_kinds  ? "formula"
                                              : NULL;
    if (!n_kinds)
        snprintf(buf, len, "%s", ar ? ar : "formula");
    else if (all && (!ar || !strcmp(ar, all)))
        snprintf(buf, len, "%s", all);
    else if (all)
        snprintf(buf, len, "mixed: allreduce %s, ops %s", ar, all);
    else if (n_probed + n_partly == 0)
        snprintf(buf, len, "mixed: %s%s%s%d of %d op kinds measured", ar ? "allreduce " : "", ar ? ar : "",
                 ar ? ", " : "", n_measured, n_kinds);
    else
        snprintf(buf, len, "mixed: %s%s%sop kinds %d probed, %d partly probed, %d measured, %d formula",
                 ar ? "allreduce " : "", ar ? ar : "", ar ? ", " : "", n_probed, n_partly, n_measured, n_formula);
}

/* What the engines would need: "runs as is" for "yes", else their own "no: why". */
static void row_engine(const results_cycle *r, char *buf, size_t len)
{
    const char *sg = r->engine_sglang, *vl = r->engine_vllm;
    if (!sg[0] && !vl[0]) {
        snprintf(buf, len, "-");
        return;
    }
    const char *sgt = !strcmp(sg, "yes") ? "runs as is" : sg, *vlt = !strcmp(vl, "yes") ? "runs as is" : vl;
    if (!strcmp(sgt, vlt))
        snprintf(buf, len, "sglang, vllm: %s", sgt);
    else
        snprintf(buf, len, "sglang: %s; vllm: %s", sgt, vlt);
}

static compare_row *new_row(cmp_state *st, const compare_variant *v, const char *backend)
{
    compare_row *row = &st->rows[st->n_rows++];
    memset(row, 0, sizeof(*row));
    row->variant = v;
    snprintf(row->r.backend, sizeof(row->r.backend), "%s", backend);
    snprintf(row->source, sizeof(row->source), "-");
    snprintf(row->engine, sizeof(row->engine), "-");
    return row;
}

/* Model one variant with every backend asked for (or its own run.backend); rows carry any failure.
 * Returns whether the variant's scenario speculates (false when it did not load). */
static bool eval_variant(cmp_state *st, const compare_variant *v)
{
    const compare_in *c = st->c;
    const char *sets[CFG_MAX_SETS + COMPARE_MAX_SETS];
    int n = 0;
    for (int i = 0; i < c->n_sets; i++)
        sets[n++] = c->sets[i];
    for (int i = 0; i < v->set.n; i++)
        sets[n++] = v->set.v[i];
    cfg_scenario sc;
    cfg_error err;
    if (cfg_scenario_load(c->scenario_path, sets, n, c->system_path, &sc, &err)) {
        for (int b = 0; b < (st->n_bes ? st->n_bes : 1); b++) {
            compare_row *row = new_row(st, v, st->n_bes ? cfg_backend_names[st->bes[b]] : "-");
            snprintf(row->r.reason, sizeof(row->r.reason), "%.255s", err.msg);
        }
        return false;
    }
    const cfg_backend own = (cfg_backend)sc.run.backend;
    const cfg_backend *bes = st->n_bes ? st->bes : &own;
    const int n_bes = st->n_bes ? st->n_bes : 1;
    const plan_slot *ps = plan_for(st, v, &sc);
    char why[512];
    model_ctx *ctx = ps->ok ? model_prepare(&sc, &ps->p, why, sizeof(why)) : NULL;
    for (int b = 0; b < n_bes; b++) {
        compare_row *row = new_row(st, v, cfg_backend_names[bes[b]]);
        if (!ctx) {
            snprintf(row->r.reason, sizeof(row->r.reason), "%.255s", ps->ok ? why : ps->why);
            continue;
        }
        row->loaded = true;
        row->plan = &ps->p;
        model_eval(ctx, bes[b], false, &row->r);
        row_engine(&row->r, row->engine, sizeof(row->engine));
        if (row->r.available)
            row_source(&sc, &ps->p, &row->r, row->source, sizeof(row->source));
    }
    model_free(ctx);
    const bool spec = sc.speculative.algorithm != CFG_SPEC_NONE;
    cfg_scenario_free(&sc);
    return spec;
}

static bool sets_nospec(const compare_variant *v)
{
    for (int i = 0; i < v->set.n; i++)
        if (!strcmp(v->set.v[i], "speculative.algorithm=none"))
            return true;
    return false;
}

/* The baseline without speculation: its overrides but the speculative.* ones, plus algorithm=none. */
static compare_variant *add_nospec(compare_file *f)
{
    const compare_variant *base = &f->v[f->baseline];
    compare_variant *v = &f->v[f->n];
    memset(v, 0, sizeof(*v));
    bool taken = false;
    for (int i = 0; i < f->n; i++)
        taken |= !strcmp(f->v[i].name, "speculation off");
    snprintf(v->name, sizeof(v->name), "%s", taken ? "speculation off (added)" : "speculation off");
    for (int i = 0; i < base->set.n && v->set.n < COMPARE_MAX_SETS - 1; i++)
        if (strncmp(base->set.v[i], "speculative.", 12))
            v->set.v[v->set.n++] = util_xstrdup(base->set.v[i]);
    v->set.v[v->set.n++] = util_xstrdup("speculative.algorithm=none");
    v->note = util_xasprintf("added by vpsim compare: %s with speculative.algorithm=none (plain decode, one token "
                             "per cycle): does speculation pay on this box?", base->name);
    v->added = true;
    f->n++;
    return v;
}

static const compare_row *sort_rows;
static int by_rank(const void *a, const void *b)
{
    const compare_row *x = &sort_rows[*(const int *)a], *y = &sort_rows[*(const int *)b];
    if (x->r.available != y->r.available)
        return x->r.available ? -1 : 1;
    if (x->apart != y->apart)
        return x->apart ? 1 : -1;
    if (x->r.available && x->r.tok_per_s != y->r.tok_per_s)
        return x->r.tok_per_s > y->r.tok_per_s ? -1 : 1;
    return *(const int *)a - *(const int *)b; /* ties and unavailable rows: file order */
}

/* Gains against the baseline variant's first row; then the rows best first. */
static void rank_rows(cmp_state *st, const compare_variant *base)
{
    const compare_row *b = NULL;
    for (int i = 0; i < st->n_rows && !b; i++)
        if (st->rows[i].variant == base)
            b = &st->rows[i];
    for (int i = 0; i < st->n_rows; i++) {
        compare_row *row = &st->rows[i];
        row->baseline = row == b;
        for (int w = 0; w < row->r.n_warnings && row->r.available; w++)
            row->apart |= strcmp(row->r.warnings[w].code, "table-not-applied") == 0 ||
                          strcmp(row->r.warnings[w].code, "split-formula") == 0; /* collectives.allreduce_split */
        row->have_gain = b && b->r.available && row->r.available && b->r.tok_per_s > 0;
        if (row->have_gain)
            row->gain_pct = 100.0 * (row->r.tok_per_s / b->r.tok_per_s - 1.0);
    }
    int *order = util_xmalloc((size_t)st->n_rows * sizeof(int) + 1);
    for (int i = 0; i < st->n_rows; i++)
        order[i] = i;
    sort_rows = st->rows;
    qsort(order, (size_t)st->n_rows, sizeof(int), by_rank);
    compare_row *sorted = util_xmalloc((size_t)st->n_rows * sizeof(compare_row) + 1);
    for (int i = 0; i < st->n_rows; i++)
        sorted[i] = st->rows[order[i]];
    memcpy(st->rows, sorted, (size_t)st->n_rows * sizeof(compare_row));
    free(sorted);
    free(order);
}

/* tok/s of `row` with `extra` set before the variant's own overrides (a variant that sets the same key
 * keeps its value: the row's own what-if wins over the unknown). */
static double tok_with(const cmp_state *st, const compare_row *row, const char *extra)
{
    const compare_in *c = st->c;
    const char *sets[CFG_MAX_SETS + COMPARE_MAX_SETS + 1];
    int n = 0;
    for (int i = 0; i < c->n_sets; i++)
        sets[n++] = c->sets[i];
    sets[n++] = extra;
    for (int i = 0; i < row->variant->set.n; i++)
        sets[n++] = row->variant->set.v[i];
    const int be = cfg_enum_index(cfg_backend_names, row->r.backend);
    return be < 0 || !row->plan ? NAN
                                : model_rest_tok_per_s(c->scenario_path, c->system_path, sets, n, row->plan, (cfg_backend)be);
}

/* What each gain's sign rests on: every unmeasured input of the box at its other value, the row and the
 * baseline re-modelled with it; the first input that flips a row's sign is named on that row. Gains
 * within 0.5% of zero have no sign to keep. */
static void rests_rows(cmp_state *st, const cfg_scenario *base, compare_doc *d)
{
    const compare_row *b = NULL;
    for (int i = 0; i < st->n_rows && !b; i++)
        if (st->rows[i].baseline && st->rows[i].r.available)
            b = &st->rows[i];
    if (!b)
        return;
    model_rest_alt alts[MODEL_MAX_RESTS];
    const int n_alts = model_rests_for(base, alts, MODEL_MAX_RESTS);
    size_t len = 0;
    for (int k = 0; k < n_alts; k++) {
        const char *set = alts[k].set;
        if (len < sizeof(d->rests_tried))
            len += (size_t)snprintf(d->rests_tried + len, sizeof(d->rests_tried) - len, "%s%s", len ? ", " : "", set);
        const double tb = tok_with(st, b, set);
        if (!(tb > 0))
            continue;
        for (int i = 0; i < st->n_rows; i++) {
            compare_row *row = &st->rows[i];
            if (row == b || !row->have_gain || row->rests[0] || fabs(row->gain_pct) < 0.5)
                continue;
            const double tr = tok_with(st, row, set);
            if (!(tr > 0))
                continue;
            const double g = 100.0 * (tr / tb - 1.0);
            if (fabs(g) >= 0.5 && (g > 0) != (row->gain_pct > 0))
                model_rest_line(row->rests, sizeof(row->rests), row->gain_pct, set, g, alts[k].rest);
        }
    }
}

void compare_rank(const compare_in *in, const cfg_scenario *base, compare_file *f, compare_doc *d)
{
    const int per_variant = in->n_bes ? in->n_bes : 1;
    cmp_state st = {.c = in, .bes = in->bes, .n_bes = in->n_bes};
    st.plans = util_xcalloc((size_t)f->n + 1, sizeof(plan_slot));
    st.rows = util_xcalloc((size_t)(f->n + 1) * (size_t)per_variant, sizeof(compare_row));
    bool base_spec = false, any_nospec = false;
    const int n_file = f->n;
    for (int i = 0; i < n_file; i++) {
        const bool spec = eval_variant(&st, &f->v[i]);
        if (i == f->baseline)
            base_spec = spec;
        any_nospec |= sets_nospec(&f->v[i]);
    }
    d->scenario = base->name;
    d->system = base->system.name;
    d->model = base->target.name;
    if (base_spec && !any_nospec) {
        eval_variant(&st, add_nospec(f));
        d->auto_nospec = "the scenario speculates and no variant sets speculative.algorithm=none: a 'speculation off' "
                         "row (the baseline with speculative.algorithm=none) was added";
    }
    rank_rows(&st, &f->v[f->baseline]);
    rests_rows(&st, base, d);
    d->rows = st.rows;
    d->n_rows = st.n_rows;
    d->plans = st.plans;
    d->n_plans = st.n_plans;
}

void compare_doc_free(compare_doc *d)
{
    for (int i = 0; i < d->n_rows; i++)
        results_cycle_free(&d->rows[i].r);
    for (int i = 0; i < d->n_plans; i++) {
        free(d->plans[i].key);
        if (d->plans[i].ok)
            plan_free(&d->plans[i].p);
    }
    free(d->plans);
    free(d->rows);
    d->rows = NULL;
    d->plans = NULL;
    d->n_rows = d->n_plans = 0;
}

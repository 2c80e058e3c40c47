/* The summary of a finished `vpsim sweep`, read back from its CSV rows (so a resumed sweep summarises the
 * rows of earlier runs the same way): the answer per point, the best point per backend against no
 * speculation, what was skipped and why, and every warning with the points it hits. */
#include "sweep.h"

#include "../model/model.h"
#include "../plan/plan.h"
#include "../report/report_results.h"
#include "../util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One CSV record of the sweep. */
typedef struct srec {
    char **f;
    int nf;
} srec;

/* Split CSV text into records (quoted fields may hold commas, quotes and newlines). */
static int parse_csv(const char *s, srec **out)
{
    srec *recs = NULL;
    int n = 0;
    util_buf field = {0};
    srec cur = {0};
    bool quoted = false;
    for (const char *p = s; p && *p; p++) {
        if (quoted) {
            if (*p == '"' && p[1] == '"')
                util_buf_printf(&field, "\""), p++;
            else if (*p == '"')
                quoted = false;
            else
                util_buf_printf(&field, "%c", *p);
            continue;
        }
        if (*p == '"') {
            quoted = true;
        } else if (*p == ',' || *p == '\n') {
            cur.f = util_xrealloc(cur.f, (size_t)(cur.nf + 1) * sizeof(char *));
            cur.f[cur.nf++] = util_xstrdup(field.s ? field.s : "");
            field.len = 0;
            if (field.s)
                field.s[0] = '\0';
            if (*p == '\n') {
                recs = util_xrealloc(recs, (size_t)(n + 1) * sizeof(srec));
                recs[n++] = cur;
                memset(&cur, 0, sizeof(cur));
            }
        } else {
            util_buf_printf(&field, "%c", *p);
        }
    }
    util_buf_free(&field);
    for (int i = 0; i < cur.nf; i++)
        free(cur.f[i]);
    free(cur.f);
    *out = recs;
    return n;
}

typedef struct summary {
    const sweep *sw;
    srec *recs;
    int n_recs;
    long long n_points;
    int c_backend, c_available, c_reason, c_method, c_tokens, c_tok, c_tpot, c_nospec, c_warn;
} summary;

static const char *fld(const summary *s, long long pt, int be, int col)
{
    const long long i = pt * s->sw->n_bes + be;
    if (i >= s->n_recs || col >= s->recs[i].nf)
        return "";
    return s->recs[i].f[col];
}

static bool avail(const summary *s, long long pt, int be) { return !strcmp(fld(s, pt, be, s->c_available), "true"); }
static double num(const summary *s, long long pt, int be, int col)
{
    const char *v = fld(s, pt, be, col);
    return *v ? atof(v) : NAN;
}
static bool measured(const summary *s, long long pt, int be)
{
    return !strncmp(fld(s, pt, be, s->c_method), "measured", 8);
}

static bool extrapolated(const summary *s, long long pt, int be)
{
    return strstr(fld(s, pt, be, s->c_warn), "acceptance-extrapolated:") != NULL;
}

/* The last part of a dotted key: "steps" for speculative.steps. */
static const char *short_key(const char *key)
{
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

static const char *col_key(const sweep *sw, int k) { return k < sw->n_vary ? sw->v[k].key : sw->tie.key; }

static void point_label(const summary *s, long long pt, util_buf *b)
{
    for (int k = 0; k < s->sw->n_cols; k++)
        util_buf_printf(b, "%s%s=%s", k ? " " : "", short_key(col_key(s->sw, k)), fld(s, pt, 0, k));
}

/* Best and runner-up backend of a point by tok/s (-1 when none / only one is available). */
static void best_two(const summary *s, long long pt, int *best, int *second)
{
    *best = *second = -1;
    for (int b = 0; b < s->sw->n_bes; b++) {
        if (!avail(s, pt, b))
            continue;
        const double t = num(s, pt, b, s->c_tok);
        if (*best < 0 || t > num(s, pt, *best, s->c_tok)) {
            *second = *best;
            *best = b;
        } else if (*second < 0 || t > num(s, pt, *second, s->c_tok)) {
            *second = b;
        }
    }
}

static double best_tok(const summary *s, long long pt)
{
    int b, r;
    best_two(s, pt, &b, &r);
    return b < 0 ? -1.0 : num(s, pt, b, s->c_tok);
}

static const summary *sort_ctx;
static int by_best_desc(const void *a, const void *b)
{
    const double x = best_tok(sort_ctx, *(const long long *)a), y = best_tok(sort_ctx, *(const long long *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

static void print_points(const summary *s, FILE *out)
{
    const sweep *sw = s->sw;
    long long *order = util_xcalloc((size_t)s->n_points, sizeof(long long));
    long long n = 0;
    for (long long pt = 0; pt < s->n_points; pt++)
        if (best_tok(s, pt) >= 0)
            order[n++] = pt;
    const bool cut = n > sw->top;
    if (cut) {
        sort_ctx = s;
        qsort(order, (size_t)n, sizeof(long long), by_best_desc);
    }
    int w[SWEEP_MAX_VARY + 1];
    for (int k = 0; k < sw->n_cols; k++) {
        w[k] = (int)strlen(short_key(col_key(sw, k)));
        for (long long i = 0; i < n; i++)
            if ((int)strlen(fld(s, order[i], 0, k)) > w[k])
                w[k] = (int)strlen(fld(s, order[i], 0, k));
    }
    fprintf(out, "%s; gap: the best against the runner-up; src: allreduce figure measured (M) or formula (F),\n"
                 "best/runner-up; vs nospec: the best backend against itself with speculative.algorithm=none;\n"
                 "accept: acceptance rates as given, or extrapolated past the vector\n",
            cut ? "the best points" : "per point");
    fprintf(out, " ");
    for (int k = 0; k < sw->n_cols; k++)
        fprintf(out, " %-*s", w[k], short_key(col_key(sw, k)));
    fprintf(out, "  %-10s %8s %8s  %-10s %7s %4s %9s  %s\n", "best", "tok/s", "tpot_ms", "runner-up", "gap", "src",
            "vs nospec", "accept");
    const long long shown = cut ? sw->top : n;
    for (long long i = 0; i < shown; i++) {
        const long long pt = order[i];
        int b, r;
        best_two(s, pt, &b, &r);
        fprintf(out, " ");
        for (int k = 0; k < sw->n_cols; k++)
            fprintf(out, " %-*s", w[k], fld(s, pt, 0, k));
        const double tb = num(s, pt, b, s->c_tok), ns = num(s, pt, b, s->c_nospec);
        char gap[16] = "-", src[8], vs[16] = "-";
        if (r >= 0)
            snprintf(gap, sizeof(gap), "%+.1f%%", 100.0 * (tb / num(s, pt, r, s->c_tok) - 1.0));
        snprintf(src, sizeof(src), "%c/%c", measured(s, pt, b) ? 'M' : 'F',
                 r < 0 ? '-' : measured(s, pt, r) ? 'M' : 'F');
        if (isfinite(ns) && ns > 0)
            snprintf(vs, sizeof(vs), "%+.1f%%", 100.0 * (tb / ns - 1.0));
        fprintf(out, "  %-10s %8.1f %8.2f  %-10s %7s %4s %9s  %s\n", fld(s, pt, b, s->c_backend), tb,
                num(s, pt, b, s->c_tpot), r >= 0 ? fld(s, pt, r, s->c_backend) : "-", gap, src, vs,
                extrapolated(s, pt, b) ? "extrap." : "given");
    }
    if (cut)
        fprintf(out, "  ... %lld more point%s left out (every row is in %s; --top N shows more)\n", n - shown,
                n - shown == 1 ? "" : "s", sw->out_path);
    free(order);
}

static void print_backends(const summary *s, FILE *out)
{
    const sweep *sw = s->sw;
    fprintf(out, "\nbest point per backend (break-even: the same point with speculative.algorithm=none):\n");
    for (int b = 0; b < sw->n_bes; b++) {
        long long best = -1, n_ok = 0, n_lose = 0, n_base = 0;
        for (long long pt = 0; pt < s->n_points; pt++) {
            if (!avail(s, pt, b))
                continue;
            n_ok++;
            const double t = num(s, pt, b, s->c_tok), ns = num(s, pt, b, s->c_nospec);
            if (isfinite(ns) && ns > 0) {
                n_base++;
                n_lose += t < ns;
            }
            if (best < 0 || t > num(s, best, b, s->c_tok))
                best = pt;
        }
        const char *name = cfg_backend_names[sw->bes[b]];
        if (best < 0) {
            fprintf(out, "  %-10s unavailable at every point\n", name);
            continue;
        }
        util_buf lab = {0};
        point_label(s, best, &lab);
        fprintf(out, "  %-10s %8.1f tok/s  tpot %6.2f ms  at %s (acceptance %s)\n", name, num(s, best, b, s->c_tok),
                num(s, best, b, s->c_tpot), lab.s, extrapolated(s, best, b) ? "extrapolated" : "as given");
        util_buf_free(&lab);
        const double ns = num(s, best, b, s->c_nospec);
        if (isfinite(ns) && ns > 0)
            fprintf(out, "  %-10s %8.1f tok/s without speculation there: %+.1f%%; speculation loses at %lld of %lld "
                         "points\n",
                    "", ns, 100.0 * (num(s, best, b, s->c_tok) / ns - 1.0), n_lose, n_base);
    }
}

/* The best point's ranking and what it rests on: the winner against the runner-up there, re-modelled with
 * each unmeasured input of the box at its other value (model_rests.c); one line. */
static void print_rests(const summary *s, FILE *out)
{
    const sweep *sw = s->sw;
    /* The point where the best real allreduce peaks (none is the no-communication reference, not a
     * contender), and the two best real allreduces there. */
    long long pt = -1;
    int b = -1, r = -1;
    double top = -1.0;
    for (long long i = 0; i < s->n_points; i++) {
        int bi = -1, ri = -1;
        for (int k = 0; k < sw->n_bes; k++) {
            if (!avail(s, i, k) || !cfg_backend_reduces(sw->bes[k]))
                continue;
            const double t = num(s, i, k, s->c_tok);
            if (bi < 0 || t > num(s, i, bi, s->c_tok)) {
                ri = bi;
                bi = k;
            } else if (ri < 0 || t > num(s, i, ri, s->c_tok)) {
                ri = k;
            }
        }
        if (bi >= 0 && num(s, i, bi, s->c_tok) > top) {
            top = num(s, i, bi, s->c_tok);
            pt = i;
            b = bi;
            r = ri;
        }
    }
    if (r < 0)
        return;
    const char *sets[CFG_MAX_SETS + SWEEP_MAX_VARY + 4], *vals[SWEEP_MAX_VARY + 1];
    char *owned[SWEEP_MAX_VARY + 2];
    int n = sweep_scenario_sets(sw, pt, sets, owned, vals);
    cfg_scenario sc;
    cfg_error err;
    plan p;
    char why[256];
    const bool ok = !cfg_scenario_load(sw->scenario_path, sets, n, sw->system_path, &sc, &err);
    const bool planned = ok && plan_build(&sc, &p, why, sizeof(why)) == 0;
    const double gap = 100.0 * (num(s, pt, b, s->c_tok) / num(s, pt, r, s->c_tok) - 1.0);
    const cfg_backend bb = sw->bes[b], rb = sw->bes[r];
    char line[640] = "";
    model_rest_alt alts[MODEL_MAX_RESTS];
    const int n_alts = planned ? model_rests_for(&sc, alts, MODEL_MAX_RESTS) : 0;
    for (int k = 0; k < n_alts && !line[0]; k++) {
        sets[n] = alts[k].set;
        const double tb = model_rest_tok_per_s(sw->scenario_path, sw->system_path, sets, n + 1, &p, bb);
        const double tr = model_rest_tok_per_s(sw->scenario_path, sw->system_path, sets, n + 1, &p, rb);
        if (tb > 0 && tr > 0 && tb < tr)
            model_rest_line(line, sizeof(line), gap, alts[k].set, 100.0 * (tb / tr - 1.0), alts[k].rest);
    }
    if (planned) {
        util_buf lab = {0};
        point_label(s, pt, &lab);
        fprintf(out, "\nthe best point (%s): %s over %s ", lab.s, cfg_backend_names[bb], cfg_backend_names[rb]);
        if (line[0])
            fprintf(out, "%s\n", line);
        else
            fprintf(out, "%+.1f%% holds with every unmeasured input of the box at its other value\n", gap);
        util_buf_free(&lab);
        plan_free(&p);
    }
    if (ok)
        cfg_scenario_free(&sc);
    sweep_free_sets(sw, owned);
}

/* A text with its digit runs as '#': the same message at other values groups together. */
static char *shape_of(const char *text)
{
    util_buf b = {0};
    for (const char *p = text; *p; p++) {
        if (*p >= '0' && *p <= '9') {
            util_buf_printf(&b, "#");
            while ((p[1] >= '0' && p[1] <= '9') || (p[1] == '.' && p[2] >= '0' && p[2] <= '9'))
                p++;
        } else {
            util_buf_printf(&b, "%c", *p);
        }
    }
    return b.s ? b.s : util_xstrdup("");
}

typedef struct group {
    char *shape;
    char *first; /* the first message as written */
    long long count;
    util_buf points; /* labels of the first few points */
    int listed;
    bool varied; /* the group holds the same message at other values: `first` is an example */
} group;

#define GROUP_MAX 64
#define GROUP_LIST 4

static void group_add(group *g, int *n, const char *text, const char *label)
{
    char *shape = shape_of(text);
    int i = 0;
    while (i < *n && strcmp(g[i].shape, shape))
        i++;
    if (i == *n) {
        if (*n == GROUP_MAX) {
            free(shape);
            return;
        }
        memset(&g[i], 0, sizeof(g[i]));
        g[i].shape = shape;
        g[i].first = util_xstrdup(text);
        (*n)++;
    } else {
        g[i].varied |= strcmp(g[i].first, text) != 0;
        free(shape);
    }
    g[i].count++;
    if (g[i].listed++ < GROUP_LIST)
        util_buf_printf(&g[i].points, "%s%s", g[i].listed > 1 ? "; " : "", label);
}

static void group_print(group *g, int n, FILE *out)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "  ! %s%s%s\n    at %lld point%s: %s%s\n", g[i].varied ? "e.g. " : "", g[i].first,
                g[i].varied ? " (the same with other values at the other points)" : "", g[i].count,
                g[i].count == 1 ? "" : "s", g[i].points.s, g[i].count > GROUP_LIST ? "; ..." : "");
        free(g[i].shape);
        free(g[i].first);
        util_buf_free(&g[i].points);
    }
}

/* A message without its "file:line:col: " prefix, for grouping the same complaint about many points. */
static const char *strip_location(const char *msg)
{
    if (!strncmp(msg, "--set '", 7)) {
        const char *end = strstr(msg, "': ");
        return end ? end + 3 : msg;
    }
    const char *p = strstr(msg, ": ");
    if (!p)
        return msg;
    int colons = 0;
    for (const char *q = msg; q < p; q++)
        colons += *q == ':';
    return colons >= 2 ? p + 2 : msg;
}

static void print_skipped(const summary *s, FILE *out)
{
    group g[GROUP_MAX];
    int n = 0;
    long long total = 0;
    for (long long pt = 0; pt < s->n_points; pt++) {
        /* Refused combinations have rows with no tokens per cycle (the scenario never loaded); a
         * backend that cannot run on a loaded scenario still has them. A point that does not fit the
         * GPU's memory is skipped as a whole too (every backend holds the weights), though it loaded. */
        if (!s->sw->n_bes || avail(s, pt, 0))
            continue;
        if (num(s, pt, 0, s->c_tokens) > 0 && strncmp(fld(s, pt, 0, s->c_reason), "does not fit", 12))
            continue;
        util_buf lab = {0};
        point_label(s, pt, &lab);
        group_add(g, &n, strip_location(fld(s, pt, 0, s->c_reason)), lab.s);
        util_buf_free(&lab);
        total++;
    }
    if (!total)
        return;
    fprintf(out, "\nskipped %lld combination%s that could not be modelled (rows with available=false in %s):\n", total,
            total == 1 ? "" : "s", s->sw->out_path);
    group_print(g, n, out);
}

static void print_warnings(const summary *s, FILE *out)
{
    group g[GROUP_MAX];
    int n = 0;
    for (long long pt = 0; pt < s->n_points; pt++) {
        util_buf lab = {0}, seen = {0};
        point_label(s, pt, &lab);
        for (int b = 0; b < s->sw->n_bes; b++) {
            char *all = util_xstrdup(fld(s, pt, b, s->c_warn));
            for (char *w = all, *next; w && *w; w = next) {
                next = strstr(w, " | ");
                if (next)
                    *next = '\0', next += 3;
                const char *text = strstr(w, ": ") ? strstr(w, ": ") + 2 : w;
                /* once per point, however many backends carry it */
                if (seen.s && strstr(seen.s, text))
                    continue;
                util_buf_printf(&seen, "%s\n", text);
                group_add(g, &n, text, lab.s);
            }
            free(all);
        }
        util_buf_free(&lab);
        util_buf_free(&seen);
    }
    /* (a) a collective figure whose source changes along the sweep */
    util_buf src = {0};
    for (int b = 0; b < s->sw->n_bes; b++) {
        long long n_m = 0, n_f = 0;
        for (long long pt = 0; pt < s->n_points; pt++)
            if (avail(s, pt, b))
                *(measured(s, pt, b) ? &n_m : &n_f) += 1;
        if (!n_m || !n_f)
            continue;
        util_buf_printf(&src, "  ! %s: the allreduce figure is a measurement at %lld point%s and the formula at %lld: "
                              "tok/s along the sweep compares a measurement with a formula, not like for like\n"
                              "    measured at: ",
                        cfg_backend_names[s->sw->bes[b]], n_m, n_m == 1 ? "" : "s", n_f);
        long long listed = 0;
        for (long long pt = 0; pt < s->n_points && listed < GROUP_LIST; pt++)
            if (avail(s, pt, b) && measured(s, pt, b)) {
                util_buf_printf(&src, "%s", listed++ ? "; " : "");
                point_label(s, pt, &src);
            }
        util_buf_printf(&src, "%s\n", n_m > GROUP_LIST ? "; ..." : "");
    }
    if (n > 0 || src.len)
        fprintf(out, "\nwarnings (figures that are not like for like):\n%s", src.s ? src.s : "");
    group_print(g, n, out);
    util_buf_free(&src);
}

void sweep_print_summary(const sweep *sw, FILE *out)
{
    util_buf all = {0};
    for (long long i = 0; i < sw->total; i++)
        util_buf_printf(&all, "%s", sw->rows[i] ? sw->rows[i] : "");
    summary s = {.sw = sw, .n_points = sw->total};
    s.n_recs = parse_csv(all.s, &s.recs);
    util_buf_free(&all);
    const int base = sw->n_cols;
    s.c_backend = base + report_results_csv_column("backend");
    s.c_available = base + report_results_csv_column("available");
    s.c_reason = base + report_results_csv_column("reason");
    s.c_method = base + report_results_csv_column("allreduce_method");
    s.c_tokens = base + report_results_csv_column("tokens_per_cycle");
    s.c_tok = base + report_results_csv_column("tok_per_s");
    s.c_tpot = base + report_results_csv_column("tpot_ms");
    s.c_nospec = base + report_results_csv_column("nospec_tok_per_s");
    s.c_warn = base + report_results_csv_column("warnings");
    fprintf(out, "\nvpsim sweep summary: %lld point%s x %d backend%s (tok/s and TPOT per request stream)\n",
            sw->total, sw->total == 1 ? "" : "s", sw->n_bes, sw->n_bes == 1 ? "" : "s");
    print_points(&s, out);
    print_backends(&s, out);
    print_rests(&s, out);
    print_skipped(&s, out);
    print_warnings(&s, out);
    for (int i = 0; i < s.n_recs; i++) {
        for (int k = 0; k < s.recs[i].nf; k++)
            free(s.recs[i].f[k]);
        free(s.recs[i].f);
    }
    free(s.recs);
}

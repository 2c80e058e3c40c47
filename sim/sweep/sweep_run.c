/* sweep_run: the sweep's engine (sweep.h): every point of the --vary product modelled (plans cached
 * across points that share them), the rows appended to FILE.partial as they finish (sweep_resume.c), so
 * an interrupted sweep picks up where it stopped, and the whole CSV once every point is done. */
#include "sweep.h"

#include "../model/model.h"
#include "../report/report_results.h"
#include "../util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SWEEP_PLAN_CACHE 8

static volatile sig_atomic_t sweep_interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    sweep_interrupted = 1;
}

/* ---------------- one scenario ---------------- */

typedef struct plan_cache_entry {
    char *key;
    plan p;
    bool used;
} plan_cache_entry;

/* The plan depends on the scenario and model files, not on the system or the run settings. */
static char *plan_key(const sweep *sw, const char **vals)
{
    util_buf b = {0};
    util_buf_printf(&b, "|");
    for (int k = 0; k < sw->n_vary; k++)
        if (strncmp(sw->v[k].key, "system.", 7) && strncmp(sw->v[k].key, "run.", 4))
            util_buf_printf(&b, "%s=%s|", sw->v[k].key, vals[k]);
    return b.s;
}

static const plan *cached_plan(plan_cache_entry *cache, long long *tick, const char *key, const cfg_scenario *sc,
                               char *why, size_t len)
{
    int victim = 0;
    for (int i = 0; i < SWEEP_PLAN_CACHE; i++) {
        if (cache[i].used && !strcmp(cache[i].key, key))
            return &cache[i].p;
        if (!cache[i].used)
            victim = i;
    }
    if (cache[victim].used) {
        victim = (int)((*tick)++ % SWEEP_PLAN_CACHE);
        free(cache[victim].key);
        plan_free(&cache[victim].p);
        cache[victim].used = false;
    }
    if (plan_build(sc, &cache[victim].p, why, len))
        return NULL;
    cache[victim].key = util_xstrdup(key);
    cache[victim].used = true;
    return &cache[victim].p;
}

static void error_rows(const sweep *sw, const char **vals, const char *msg, util_buf *out)
{
    for (int i = 0; i < sw->n_bes; i++) {
        results_cycle r;
        memset(&r, 0, sizeof(r));
        snprintf(r.backend, sizeof(r.backend), "%s", cfg_backend_names[sw->bes[i]]);
        snprintf(r.reason, sizeof(r.reason), "%s", msg);
        report_results_csv_row(out, vals, sw->n_cols, &r);
    }
}

/* The break-even of speculation: the same point with speculative.algorithm=none, per backend, into
 * rs[i].nospec_tok_per_s. The loaded scenario is modelled again with speculation switched off in its
 * struct (no second YAML load: with algorithm none no other speculative.* setting is read). Left 0
 * when it cannot be modelled: the row then simply has no baseline. */
static void add_nospec(const sweep *sw, const cfg_scenario *sc, const char **vals, plan_cache_entry *cache,
                       long long *tick, results_cycle *rs)
{
    cfg_scenario base = *sc; /* shallow: only the algorithm differs, and this copy is never freed */
    base.speculative.algorithm = CFG_SPEC_NONE;
    util_buf key = {0};
    util_buf_printf(&key, "|nospec|");
    for (int k = 0; k < sw->n_vary; k++)
        if (strncmp(sw->v[k].key, "system.", 7) && strncmp(sw->v[k].key, "run.", 4) &&
            strncmp(sw->v[k].key, "speculative.", 12))
            util_buf_printf(&key, "%s=%s|", sw->v[k].key, vals[k]);
    char why[512];
    const plan *p = cached_plan(cache, tick, key.s, &base, why, sizeof(why));
    util_buf_free(&key);
    model_ctx *ctx = p ? model_prepare(&base, p, why, sizeof(why)) : NULL;
    for (int i = 0; ctx && i < sw->n_bes; i++) {
        results_cycle r;
        model_eval(ctx, sw->bes[i], false, &r);
        if (r.available)
            rs[i].nospec_tok_per_s = r.tok_per_s;
    }
    model_free(ctx);
}

typedef struct point_state {
    plan_cache_entry cache[SWEEP_PLAN_CACHE];
    long long tick;
} point_state;

/* Returns false when the combination could not be modelled at all (its rows carry the reason). */
static bool run_one(const sweep *sw, long long idx, void *vstate, util_buf *out)
{
    point_state *st = vstate;
    plan_cache_entry *cache = st->cache;
    long long *tick = &st->tick;
    bool ok = false;
    const char *sets[CFG_MAX_SETS + SWEEP_MAX_VARY + 1];
    char *owned[SWEEP_MAX_VARY + 1];
    const char *vals[SWEEP_MAX_VARY + 1];
    const int n = sweep_scenario_sets(sw, idx, sets, owned, vals);
    /* The tied column: the derived value where the tie applies, else what the scenario has. */
    char tied[32] = "";
    if (sw->tie.from >= 0)
        vals[sw->n_vary] = owned[sw->n_vary] ? strchr(owned[sw->n_vary], '=') + 1 : tied;
    cfg_scenario sc;
    cfg_error err;
    if (cfg_scenario_load(sw->scenario_path, sets, n, sw->system_path, &sc, &err)) {
        error_rows(sw, vals, err.msg, out);
    } else {
        if (sw->tie.from >= 0 && !owned[sw->n_vary])
            snprintf(tied, sizeof(tied), "%d",
                     sw->tie.offset > 0 ? sc.speculative.num_draft_tokens : sc.speculative.steps);
        char why[512];
        char *key = plan_key(sw, vals);
        const plan *p = cached_plan(cache, tick, key, &sc, why, sizeof(why));
        free(key);
        model_ctx *ctx = p ? model_prepare(&sc, p, why, sizeof(why)) : NULL;
        if (!ctx) {
            error_rows(sw, vals, why, out);
        } else {
            ok = true;
            results_cycle rs[CFG_BACKEND_COUNT];
            for (int i = 0; i < sw->n_bes; i++)
                model_eval(ctx, sw->bes[i], false, &rs[i]);
            model_free(ctx);
            if (sc.speculative.algorithm != CFG_SPEC_NONE)
                add_nospec(sw, &sc, vals, cache, tick, rs);
            for (int i = 0; i < sw->n_bes; i++)
                report_results_csv_row(out, vals, sw->n_cols, &rs[i]);
        }
        cfg_scenario_free(&sc);
    }
    sweep_free_sets(sw, owned);
    return ok;
}

static void progress(long long done, long long total, double elapsed)
{
    static double last_draw = -1.0; /* at most ten redraws a second */
    if (elapsed - last_draw < 0.1 && done != total)
        return;
    last_draw = elapsed;
    const int width = 30;
    int fill = total ? (int)(width * done / total) : width;
    double eta = done ? elapsed * (double)(total - done) / (double)done : 0.0;
    fprintf(stderr, "\r[%.*s%*s] %lld/%lld %5.1f%%  %.1fs elapsed, ~%.1fs left ", fill,
            "##############################", width - fill, "", done, total, total ? 100.0 * done / total : 100.0,
            elapsed, eta);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int sweep_run(sweep *sw, util_buf *csv)
{
    util_buf valid = {0};
    char why[512];
    long long done = sw->restart ? 0 : sweep_load_partial(sw, &valid, why, sizeof(why));
    if (done < 0) {
        fprintf(stderr, "vpsim sweep: %s belongs to a different sweep: %s; remove it or pass --restart to start "
                        "over\n",
                sw->partial_path, why);
        util_buf_free(&valid);
        return VP_EXIT_USAGE;
    }
    if (done > 0)
        fprintf(stderr, "vpsim sweep: resuming: %lld of %lld scenarios already done (%s)\n", done, sw->total,
                sw->partial_path);
    if (!valid.len)
        util_buf_printf(&valid, "%s", sw->header);
    /* Rewrite the partial file without any torn tail, then append to it. */
    char err[512];
    if (util_write_file_atomic(sw->partial_path, valid.s, valid.len, err, sizeof(err))) {
        fprintf(stderr, "vpsim sweep: %s\n", err);
        util_buf_free(&valid);
        return VP_EXIT_FAIL;
    }
    util_buf_free(&valid);
    FILE *part = fopen(sw->partial_path, "a");
    if (!part) {
        fprintf(stderr, "vpsim sweep: cannot append to %s: %s\n", sw->partial_path, strerror(errno));
        return VP_EXIT_FAIL;
    }
    const bool tty = isatty(STDERR_FILENO);
    const double t0 = now_s();
    point_state *state = util_xcalloc(1, sizeof(*state));
    void (*old_handler)(int) = signal(SIGINT, on_sigint);
    sweep_runner runner = {.point = run_one, .state = state, .stop = &sweep_interrupted,
                           .progress = tty ? progress : NULL};
    sweep_tally tally = {.done = done, .t0 = t0};
    const int workers_rc = sweep_run_points(sw, part, sw->jobs > 0 ? sw->jobs : sweep_default_jobs(), &runner, &tally);
    done = tally.done;
    const long long failed = tally.failed;
    signal(SIGINT, old_handler);
    for (int i = 0; i < SWEEP_PLAN_CACHE; i++)
        if (state->cache[i].used) {
            free(state->cache[i].key);
            plan_free(&state->cache[i].p);
        }
    free(state);
    if (tty)
        fprintf(stderr, "\n");
    if (workers_rc != 0) {
        fclose(part);
        fprintf(stderr, "vpsim sweep: %lld of %lld scenarios done; run the same command again to resume (%s)\n", done,
                sw->total, sw->partial_path);
        return VP_EXIT_FAIL;
    }
    if (failed)
        fprintf(stderr, "vpsim sweep: %lld combination(s) could not be modelled; their rows have available=false "
                        "and the reason\n",
                failed);
    if (fclose(part) != 0) {
        fprintf(stderr, "vpsim sweep: writing %s failed: %s\n", sw->partial_path, strerror(errno));
        return VP_EXIT_FAIL;
    }
    if (done < sw->total) {
        fprintf(stderr, "vpsim sweep: %s after %lld of %lld scenarios; run the same command again to resume (%s)\n",
                sweep_interrupted ? "interrupted" : "stopped by --limit", done, sw->total, sw->partial_path);
        return VP_EXIT_FAIL;
    }
    const char *keys[SWEEP_MAX_VARY + 1];
    for (int k = 0; k < sw->n_vary; k++)
        keys[k] = sw->v[k].key;
    keys[sw->n_vary] = sw->tie.key;
    report_results_csv_header(csv, keys, sw->n_cols);
    for (long long idx = 0; idx < sw->total; idx++)
        util_buf_printf(csv, "%s", sw->rows[idx]);
    sw->t0 = t0;
    sw->jobs_used = tally.jobs;
    return VP_EXIT_OK;
}

void sweep_done(sweep *sw)
{
    unlink(sw->partial_path);
    fprintf(stderr, "vpsim sweep: %lld scenarios x %d backends in %.2f s (%d process%s) -> %s\n", sw->total,
            sw->n_bes, now_s() - sw->t0, sw->jobs_used, sw->jobs_used == 1 ? "" : "es", sw->out_path);
    sweep_print_summary(sw, stdout);
}

void sweep_free(sweep *sw)
{
    for (int k = 0; k < sw->n_vary; k++) {
        for (int j = 0; j < sw->v[k].n; j++)
            free(sw->v[k].values[j]);
        free(sw->v[k].values);
        free(sw->v[k].key);
    }
    if (sw->rows)
        for (long long i = 0; i < sw->total; i++)
            free(sw->rows[i]);
    free(sw->rows);
    free(sw->partial_path);
    free(sw->header);
}

/* `vpsim compare` output: a table for people, Markdown for reports, JSON ("vpsim.compare/1") for tools. */
#include "compare.h"

#include "../report/report_results.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const how_to_read =
    "ranked by tok/s, best first; gain = tok/s / the baseline's (*) - 1; fits = per-rank GPU memory against "
    "system.gpu.memory_gib; source = where the cost figures come from (probed laws or measured tables of the "
    "system file, or formulas); a row that does not fit gets no tok/s; rows marked ~ are ranked apart, after the others: their "
    "allreduce figure is the formula because the system file's measurement for that backend does not apply "
    "under the variant's conditions (see below)";

static void fits_cell(const compare_row *row, char *buf, size_t len)
{
    const results_cycle *r = &row->r;
    if (!r->mem_known)
        snprintf(buf, len, "-");
    else if (r->fits)
        snprintf(buf, len, "yes %.1f GiB", r->mem_gib);
    else
        snprintf(buf, len, "no: needs %.1f of %.1f GiB", r->mem_gib, r->mem_capacity_gib);
}

static void gain_cell(const compare_row *row, char *buf, size_t len)
{
    if (row->baseline && row->r.available)
        snprintf(buf, len, "base");
    else if (row->have_gain)
        snprintf(buf, len, "%+.1f%%", row->gain_pct);
    else
        snprintf(buf, len, "-");
}

static void name_cell(const compare_row *row, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", row->apart ? "~ " : "", row->variant->name, row->baseline ? " *" : "");
}

static void rank_cell(const compare_doc *d, int i, char *buf, size_t len)
{
    (void)d;
    snprintf(buf, len, "%d", i + 1);
}

void compare_table(util_buf *out, const compare_doc *d)
{
    util_buf_printf(out, "compare: scenario %s on %s (%s), variants %s\n%s\n", d->scenario, d->system, d->model,
                    d->variants_path, how_to_read);
    if (d->auto_nospec)
        util_buf_printf(out, "note: %s\n", d->auto_nospec);
    util_buf_printf(out, "\n%3s  %-32s %-9s %8s %9s %8s %8s %8s  %-26s %s\n", "#", "variant", "backend", "cycle_ms",
                    "verify_ms", "comm_ms", "tok/s", "gain", "fits", "source");
    for (int i = 0; i < d->n_rows; i++) {
        const compare_row *row = &d->rows[i];
        const results_cycle *r = &row->r;
        char name[80], gain[16], fits[64], rank[16];
        name_cell(row, name, sizeof(name));
        gain_cell(row, gain, sizeof(gain));
        fits_cell(row, fits, sizeof(fits));
        rank_cell(d, i, rank, sizeof(rank));
        if (r->available)
            util_buf_printf(out, "%3s  %-32s %-9s %8.2f %9.2f %8.2f %8.1f %8s  %-26s %s\n", rank, name, r->backend,
                            r->cycle_ms, r->verify_ms, r->verify_class_ms[PLAN_CLASS_COMM], r->tok_per_s, gain, fits,
                            row->source);
        else
            util_buf_printf(out, "%3s  %-32s %-9s %8s %9s %8s %8s %8s  %-26s %s\n", rank, name, r->backend, "-", "-",
                            "-", "-", "-", fits, "(not ranked: see below)");
    }
    if (d->rests_tried[0]) {
        util_buf_printf(out, "\nwhat each gain's sign rests on (the unmeasured inputs of the box, each at its other "
                             "value: %s):\n", d->rests_tried);
        for (int i = 0; i < d->n_rows; i++) {
            const compare_row *row = &d->rows[i];
            if (row->rests[0])
                util_buf_printf(out, "  %2d %-32s %s\n", i + 1, row->variant->name, row->rests);
            else if (row->have_gain && !row->baseline && fabs(row->gain_pct) >= 0.5)
                util_buf_printf(out, "  %2d %-32s %+.1f%% holds at every other value\n", i + 1, row->variant->name,
                                row->gain_pct);
        }
    }
    util_buf_printf(out, "\nwhat the serving engine would need (verify allreduce with this backend; gates in "
                         "sim/model/model_engine.c):\n");
    for (int i = 0; i < d->n_rows; i++)
        if (d->rows[i].loaded && strcmp(d->rows[i].engine, "-"))
            util_buf_printf(out, "  %2d %-32s %s\n", i + 1, d->rows[i].variant->name, d->rows[i].engine);
    bool any = false;
    for (int i = 0; i < d->n_rows; i++)
        if (d->rows[i].apart) {
            if (!any)
                util_buf_printf(out, "\nranked apart (~): the allreduce figure is the formula because the system "
                                     "file's measurement for that backend does not apply under the variant's "
                                     "conditions; where the measurement applies it may disagree with the formula "
                                     "(compare them with `vpsim model --explain`), so measure the variant before "
                                     "trusting its gain:\n");
            any = true;
            /* collectives.allreduce_split: the formula is the reduce-scatter's, not the allreduce's. */
            const char *why = d->rows[i].r.allreduce_method;
            for (int w = 0; w < d->rows[i].r.n_warnings; w++)
                if (!strcmp(d->rows[i].r.warnings[w].code, "split-formula"))
                    why = "the split's reduce-scatters: formula (no measured reduce-scatter table)";
            util_buf_printf(out, "  %2d %-32s %s: %s\n", i + 1, d->rows[i].variant->name, d->rows[i].r.backend, why);
        }
    any = false;
    for (int i = 0; i < d->n_rows; i++)
        if (!d->rows[i].r.available) {
            if (!any)
                util_buf_printf(out, "\nnot ranked:\n");
            any = true;
            util_buf_printf(out, "  %2d %-32s %s\n", i + 1, d->rows[i].variant->name, d->rows[i].r.reason);
        }
    any = false;
    for (int i = 0; i < d->n_rows; i++)
        for (int w = 0; w < d->rows[i].r.n_warnings; w++) {
            if (!any)
                util_buf_printf(out, "\nwarnings per row (figures that are not like for like):\n");
            any = true;
            util_buf_printf(out, "  %2d ! %s\n", i + 1, d->rows[i].r.warnings[w].text);
        }
    any = false;
    for (int i = 0; i < d->n_rows; i++) {
        const compare_variant *v = d->rows[i].variant;
        if (!v->note || !v->note[0])
            continue;
        bool seen = false; /* a variant modelled with several backends: its note once */
        for (int k = 0; k < i && !seen; k++)
            seen = d->rows[k].variant == v;
        if (seen)
            continue;
        if (!any)
            util_buf_printf(out, "\nvariants:\n");
        any = true;
        util_buf_printf(out, "  %-32s %s\n", v->name, v->note);
    }
}

/* A Markdown cell: '|' would end it and a newline the row. */
static void md_cell(util_buf *out, const char *s)
{
    util_buf_printf(out, " ");
    for (const char *c = s; *c; c++) {
        if (*c == '|')
            util_buf_printf(out, "\\|");
        else if (*c == '\n' || *c == '\r')
            util_buf_printf(out, " ");
        else
            util_buf_printf(out, "%c", *c);
    }
    util_buf_printf(out, " |");
}

static void md_num(util_buf *out, bool ok, int decimals, double v)
{
    char buf[32];
    if (ok)
        snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    else
        snprintf(buf, sizeof(buf), "-");
    md_cell(out, buf);
}

void compare_markdown(util_buf *out, const compare_doc *d)
{
    util_buf_printf(out, "## Ranking: %s on %s (%s)\n\nVariants from `%s`; %s.\n", d->scenario, d->system,
                    d->model, d->variants_path, how_to_read);
    if (d->auto_nospec)
        util_buf_printf(out, "\nNote: %s.\n", d->auto_nospec);
    util_buf_printf(out, "\n| # | variant | backend | cycle ms | verify ms | comm ms | tok/s | gain | fits | source | "
                         "engine would need | warnings |\n"
                         "|---:|---|---|---:|---:|---:|---:|---:|---|---|---|---|\n");
    for (int i = 0; i < d->n_rows; i++) {
        const compare_row *row = &d->rows[i];
        const results_cycle *r = &row->r;
        const bool ok = r->available;
        char name[80], gain[16], fits[64], rank[16];
        name_cell(row, name, sizeof(name));
        gain_cell(row, gain, sizeof(gain));
        fits_cell(row, fits, sizeof(fits));
        rank_cell(d, i, rank, sizeof(rank));
        util_buf_printf(out, "|");
        md_cell(out, rank);
        md_cell(out, name);
        md_cell(out, r->backend);
        md_num(out, ok, 2, r->cycle_ms);
        md_num(out, ok, 2, r->verify_ms);
        md_num(out, ok, 2, r->verify_class_ms[PLAN_CLASS_COMM]);
        md_num(out, ok, 1, r->tok_per_s);
        md_cell(out, gain);
        md_cell(out, fits);
        md_cell(out, ok ? row->source : r->reason);
        md_cell(out, row->engine);
        util_buf w = {0};
        for (int k = 0; k < r->n_warnings; k++)
            util_buf_printf(&w, "%s%s", k ? "; " : "", r->warnings[k].code);
        md_cell(out, w.s ? w.s : "");
        util_buf_free(&w);
        util_buf_printf(out, "\n");
    }
    util_buf_printf(out, "\nWarning codes are explained in `vpsim compare --format json` (each row's `warnings`).\n");
}

/* Six significant digits, as report_results writes them (no binary noise in diffs). */
static void knum(util_json *j, const char *key, double v, bool present)
{
    util_json_key(j, key);
    util_json_null(j);
    if (!present || !isfinite(v))
        return;
    j->out.len -= 4;
    j->out.s[j->out.len] = '\0';
    util_buf_printf(&j->out, "%.6g", v);
}

static void kstr(util_json *j, const char *key, const char *s)
{
    util_json_key(j, key);
    if (s)
        util_json_str(j, s);
    else
        util_json_null(j);
}

static void json_row(util_json *j, const compare_row *row, int rank)
{
    const results_cycle *r = &row->r;
    const bool ok = r->available;
    util_json_obj_begin(j);
    util_json_kint(j, "rank", rank);
    util_json_kstr(j, "variant", row->variant->name);
    kstr(j, "note", row->variant->note && row->variant->note[0] ? row->variant->note : NULL);
    util_json_kbool(j, "added", row->variant->added);
    util_json_key(j, "set");
    util_json_arr_begin(j);
    for (int i = 0; i < row->variant->set.n; i++)
        util_json_str(j, row->variant->set.v[i]);
    util_json_arr_end(j);
    util_json_kbool(j, "baseline", row->baseline);
    util_json_kstr(j, "backend", r->backend);
    util_json_kbool(j, "available", ok);
    kstr(j, "reason", ok ? NULL : r->reason);
    knum(j, "cycle_ms", r->cycle_ms, ok);
    knum(j, "verify_ms", r->verify_ms, ok);
    knum(j, "comm_ms", r->verify_class_ms[PLAN_CLASS_COMM], ok);
    knum(j, "draft_ms", r->draft_ms, ok);
    knum(j, "tokens_per_cycle", r->tokens_per_cycle, row->loaded);
    knum(j, "tok_per_s", r->tok_per_s, ok);
    knum(j, "gain_pct", row->gain_pct, row->have_gain);
    util_json_kbool(j, "ranked_apart", row->apart);
    kstr(j, "sign_rests_on", row->rests[0] ? row->rests : NULL);
    util_json_key(j, "fits");
    if (r->mem_known)
        util_json_bool(j, r->fits);
    else
        util_json_null(j);
    knum(j, "memory_gib", r->mem_gib, r->mem_known);
    knum(j, "memory_capacity_gib", r->mem_capacity_gib, r->mem_known);
    kstr(j, "source", ok ? row->source : NULL);
    kstr(j, "allreduce_method", ok && r->allreduce_method[0] ? r->allreduce_method : NULL);
    util_json_key(j, "engine");
    util_json_obj_begin(j);
    kstr(j, "sglang", r->engine_sglang[0] ? r->engine_sglang : NULL);
    kstr(j, "vllm", r->engine_vllm[0] ? r->engine_vllm : NULL);
    kstr(j, "needs", row->loaded ? row->engine : NULL);
    util_json_obj_end(j);
    report_results_json_warnings(j, r);
    util_json_obj_end(j);
}

void compare_json(util_buf *out, const compare_doc *d)
{
    util_json j;
    util_json_init(&j, true);
    util_json_obj_begin(&j);
    util_json_kstr(&j, "schema", COMPARE_SCHEMA);
    kstr(&j, "scenario", d->scenario);
    kstr(&j, "scenario_path", d->scenario_path);
    kstr(&j, "variants_path", d->variants_path);
    kstr(&j, "system", d->system);
    kstr(&j, "model", d->model);
    const char *base = NULL;
    for (int i = 0; i < d->n_rows && !base; i++)
        if (d->rows[i].baseline)
            base = d->rows[i].variant->name;
    kstr(&j, "baseline", base);
    kstr(&j, "auto_nospec", d->auto_nospec);
    kstr(&j, "sign_inputs_tried", d->rests_tried[0] ? d->rests_tried : NULL);
    kstr(&j, "ranking", "available rows by tok_per_s, best first, then the rows that could not be modelled "
                        "(reason) in file order; gain_pct = 100 x (tok_per_s / the baseline row's - 1)");
    util_json_key(&j, "rows");
    util_json_arr_begin(&j);
    for (int i = 0; i < d->n_rows; i++)
        json_row(&j, &d->rows[i], i + 1);
    util_json_arr_end(&j);
    util_json_obj_end(&j);
    *out = j.out;
}

/* cal_system: the services `vpsim calibrate` and `vpsim probe` share — merging and checking measured
 * points, and writing a whole system file from a base with measured values
 * put in (cal_system.h). No command lives here. */
#include "cal_system.h"

#include "../config/cfg_emit.h"
#include "../config/cfg_provenance.h"
#include "../config/cfg_schema.h"
#include "../config/cfg_system.h"
#include "../config/cfg_tree.h"
#include "../util/util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cal_merge_points(const cal_point *in, int n, cal_point *out, int max)
{
    double *us = util_xmalloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int m = 0;
    for (double ratio = 1.1;; ratio *= 1.5) {
        /* A pass stops as soon as its groups would not fit `out` (a plan of 100 GEMM sizes once wrote
         * 100 points into a 33-entry stack array here), then the ratio widens. Past any ratio two
         * byte counts can have, the last group takes everything left, so the loop ends for any input. */
        const bool last = !(ratio < 1e300);
        int i = 0;
        m = 0;
        while (i < n && m < max) {
            int j = i + 1;
            double logsum = log(in[i].bytes > 0 ? in[i].bytes : 1);
            us[0] = in[i].us;
            while (j < n && (last || in[j].bytes <= in[i].bytes * ratio)) {
                us[j - i] = in[j].us;
                logsum += log(in[j].bytes > 0 ? in[j].bytes : 1);
                j++;
            }
            qsort(us, (size_t)(j - i), sizeof(double), cmp_double);
            out[m].bytes = exp(logsum / (j - i));
            out[m].us = us[(j - i) / 2];
            m++;
            i = j;
        }
        if (i == n)
            break;
    }
    free(us);
    return m;
}


int cal_check_points(const char *kind, const cal_point *pts, int n, char *why, size_t len)
{
    int slowest = -1;
    for (int i = 0; i < n; i++) {
        if (!(pts[i].us > 0)) {
            snprintf(why, len, "%s at %.0f B: %.3g us; a measured time must be > 0 (timer overhead subtracted "
                               "from an op shorter than the timer resolves?)",
                     kind, pts[i].bytes, pts[i].us);
            return i;
        }
        if (slowest >= 0) {
            const double top = pts[slowest].us, drop = top - pts[i].us;
            if (drop > CAL_FALL_REL * top && drop > CAL_FALL_ABS_US) {
                snprintf(why, len, "%s at %.0f B: %.3g us, below %.3g us at %.0f B by %.0f %% (%.2f us): the time "
                                   "falls as the size grows by more than the noise (%.0f %% or %.1f us)",
                         kind, pts[i].bytes, pts[i].us, top, pts[slowest].bytes, 100 * drop / top, drop,
                         CAL_FALL_REL * 100, CAL_FALL_ABS_US);
                return i;
            }
        }
        if (slowest < 0 || pts[i].us > pts[slowest].us)
            slowest = i;
    }
    return -1;
}

/* Put `fresh` into `dst`: a key both hold as maps is merged `depth` levels down, any other key of
 * `fresh` replaces dst's (so a measured table is replaced whole, and tables not measured stay). */
static void merge_maps(cfg_doc *doc, cfg_node *dst, cfg_node *fresh, int depth)
{
    for (size_t i = 0; i < fresh->n; i++) {
        const char *key = fresh->keys[i]->scalar;
        cfg_node *have = cfg_map_get(dst, key), *v = fresh->items[i];
        if (depth > 0 && have && have->kind == CFG_NODE_MAP && v->kind == CFG_NODE_MAP)
            merge_maps(doc, have, v, depth - 1);
        else
            cfg_map_put(doc, dst, key, v);
    }
}

typedef struct note_ctx {
    cfg_prov *prov;
    const cfg_node **nodes; /* per note: its value and its key (a block's comment sits on the key's line) */
    const cal_note *notes;
    int n_notes;
    /* A self-test: every value of the fresh text (fresh[0..n_fresh)) carries the tag, noted or not. */
    const char *self_test;
    const cfg_node **fresh;
    size_t n_fresh, cap_fresh;
    char tagged[720];
} note_ctx;

/* Every leaf value of the fresh text (scalars and lists; a block map's line is a key, not a value). */
static void collect_fresh(note_ctx *c, const cfg_node *n)
{
    for (size_t i = 0; n && n->kind == CFG_NODE_MAP && i < n->n; i++) {
        const cfg_node *v = n->items[i];
        if (v->kind == CFG_NODE_MAP && v->n > 0) {
            collect_fresh(c, v);
            continue;
        }
        if (c->n_fresh == c->cap_fresh) {
            c->cap_fresh = c->cap_fresh ? 2 * c->cap_fresh : 64;
            c->fresh = util_xrealloc(c->fresh, c->cap_fresh * sizeof(*c->fresh));
        }
        c->fresh[c->n_fresh++] = v;
    }
}

static bool is_fresh(const note_ctx *c, const cfg_node *n)
{
    for (size_t i = 0; i < c->n_fresh; i++)
        if (c->fresh[i] == n)
            return true;
    return false;
}

static const char *note_comment(const cfg_node *n, const char **more, void *ctx)
{
    note_ctx *c = ctx;
    const char *note = NULL;
    for (int i = 0; n && i < c->n_notes && !note; i++)
        if (n == c->nodes[2 * i] || n == c->nodes[2 * i + 1])
            note = c->notes[i].comment;
    if (c->self_test && (note || is_fresh(c, n))) {
        if (more)
            *more = NULL;
        snprintf(c->tagged, sizeof(c->tagged), "%s%s%s", c->self_test, note ? "; " : "", note ? note : "");
        return c->tagged;
    }
    if (note) {
        if (more)
            *more = NULL;
        return note;
    }
    return cfg_prov_node_comment(n, more, c->prov);
}

/* The key node of dotted `key` in `root` (NULL when absent). */
static const cfg_node *key_node_at(const cfg_node *root, const char *key)
{
    char parent[128];
    snprintf(parent, sizeof(parent), "%s", key);
    char *dot = strrchr(parent, '.');
    const cfg_node *map = root;
    const char *leaf = key;
    if (dot) {
        *dot = '\0';
        map = cfg_node_at(root, parent);
        leaf = key + (dot - parent) + 1;
    }
    for (size_t i = 0; map && map->kind == CFG_NODE_MAP && i < map->n; i++)
        if (strcmp(map->keys[i]->scalar, leaf) == 0)
            return map->keys[i];
    return NULL;
}

/* Empty the base's map at dotted `key` (when the base has one), so the fresh map replaces it whole. */
static void clear_key(cfg_doc *doc, cfg_node *root, const char *key)
{
    char parent[128];
    snprintf(parent, sizeof(parent), "%s", key);
    char *dot = strrchr(parent, '.');
    cfg_node *map = root;
    const char *leaf = key;
    if (dot) {
        *dot = '\0';
        map = cfg_node_at(root, parent);
        leaf = dot + 1;
    }
    if (map && map->kind == CFG_NODE_MAP && cfg_map_get(map, leaf))
        cfg_map_put(doc, map, leaf, cfg_node_new_map(doc, map));
}

int cal_system_write(const cal_system_spec *s, util_buf *out)
{
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(s->base, &err), *tdoc = NULL, *check = NULL;
    int rc = VP_EXIT_USAGE;
    if (!doc) {
        fprintf(stderr, "vpsim %s: %s: %s\n", s->cmd, s->base_opt, err.msg);
        return rc;
    }
    cfg_node *root = cfg_doc_root(doc);
    const cfg_node **nodes = util_xcalloc((size_t)(s->n_notes > 0 ? 2 * s->n_notes : 1), sizeof(*nodes));
    note_ctx nc;
    memset(&nc, 0, sizeof(nc));
    if (root->kind != CFG_NODE_MAP) {
        cfg_errorf(&err, root, "a system file is a mapping of keys");
        fprintf(stderr, "vpsim %s: %s: %s\n", s->cmd, s->base_opt, err.msg);
        goto done;
    }
    tdoc = cfg_doc_load_text(s->fresh_text, strlen(s->fresh_text), "fresh tables", false, &err);
    if (!tdoc) {
        fprintf(stderr, "vpsim %s: internal: %s\n", s->cmd, err.msg);
        goto done;
    }
    cfg_node *fresh = cfg_doc_root(tdoc);
    nc.nodes = nodes;
    nc.notes = s->notes;
    nc.n_notes = s->n_notes;
    nc.self_test = s->self_test;
    if (s->self_test)
        collect_fresh(&nc, fresh);
    cfg_doc_adopt(doc, tdoc);
    tdoc = NULL;
    for (int i = 0; i < s->n_clear; i++)
        clear_key(doc, root, s->clear[i]);
    /* measured -> ops / compute -> one table: two levels merged, the tables replaced whole. */
    merge_maps(doc, root, fresh, 2);
    util_buf_printf(out, "%s", s->header);
    /* The base's own header and the provenance comment beside each of its values travel with them. */
    for (int i = 0; i < s->n_notes; i++) {
        nodes[2 * i] = cfg_node_at(root, s->notes[i].key);
        nodes[2 * i + 1] = key_node_at(root, s->notes[i].key);
    }
    nc.prov = cfg_prov_open(s->base);
    cfg_prov_header(nc.prov, out);
    cfg_emit_yaml_commented(out, root, note_comment, &nc);
    cfg_prov_close(nc.prov);
    /* What is written must load: bind it as a system file before anything is written. */
    check = cfg_doc_load_text(out->s, out->len, s->what, false, &err);
    cfg_system sys;
    memset(&sys, 0, sizeof(sys));
    if (!check || cfg_schema_bind(cfg_system_fields, cfg_doc_root(check), &sys, "", &err)) {
        fprintf(stderr, "vpsim %s: %s %s: the result would not load: %s\n", s->cmd, s->base_opt, s->base, err.msg);
        cfg_schema_free(cfg_system_fields, &sys); /* what the failed bind took before it stopped */
        goto done;
    }
    cfg_schema_free(cfg_system_fields, &sys);
    rc = 0;
done:
    free(nc.fresh);
    free(nodes);
    cfg_doc_free(check);
    cfg_doc_free(tdoc);
    cfg_doc_free(doc);
    return rc;
}

int cal_system_text(const char *base, const char *fresh_text, const char *header, const char *note_key,
                    const char *note, util_buf *out)
{
    const cal_note one = {note_key, note};
    const cal_system_spec s = {.cmd = "calibrate", .base_opt = "--base", .what = "the calibrated system file",
                               .base = base, .fresh_text = fresh_text, .header = header,
                               .notes = note_key ? &one : NULL, .n_notes = note_key ? 1 : 0};
    return cal_system_write(&s, out);
}

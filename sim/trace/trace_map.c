/* trace_map: kernel names -> plan op kinds, and annotation names -> phases, through one table of
 * patterns (configs/trace-kernels.yaml ships it; --kernels FILE puts a user's patterns before it).
 *
 * Patterns are shell globs (fnmatch) over the whole demangled name as CUPTI reports it: the server's
 * own kernels (Marlin, fused-MoE Triton, FlashInfer, FlashMLA) have stable name stems but template
 * arguments that differ per build, which a glob skips and a literal table would not. First match wins,
 * so the user's file can override a shipped line by naming the same kernel. */
#include "trace.h"

#include "../config/cfg_schema.h"
#include "../config/cfg_tree.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct trace_pattern {
    char *match;
    char *library;
    int kind;  /* plan_op_kind (kernels) */
    int phase; /* plan_phase_kind (markers) */
} trace_pattern;

struct trace_map {
    trace_pattern *kernels, *markers;
    int n_kernels, n_markers;
};

static int bad(trace_error *err, const cfg_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(trace_error *err, const cfg_node *at, const char *fmt, ...)
{
    cfg_error ce;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    cfg_errorf(&ce, at, "%s", what);
    snprintf(err->msg, sizeof(err->msg), "%s", ce.msg);
    return -1;
}

static int enum_list(const char *const *names, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; names[i]; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", names[i]);
    return 0;
}

/* One list (`kernels:` or `markers:`) of a table file, appended to `*list`. */
static int load_list(const cfg_node *seq, bool markers, trace_pattern **list, int *n, trace_error *err)
{
    if (seq->kind != CFG_NODE_SEQ)
        return bad(err, seq, "%s must be a list of {match: GLOB, %s}", markers ? "markers" : "kernels",
                   markers ? "phase: KIND" : "kind: KIND, library: NAME");
    *list = util_xrealloc(*list, (size_t)(*n + (int)seq->n + 1) * sizeof(trace_pattern));
    for (size_t i = 0; i < seq->n; i++) {
        const cfg_node *e = seq->items[i];
        if (e->kind != CFG_NODE_MAP)
            return bad(err, e, "an entry is a mapping {match: GLOB, %s: ...}", markers ? "phase" : "kind");
        trace_pattern p = {.kind = -1, .phase = -1};
        for (size_t k = 0; k < e->n; k++) {
            const char *key = e->keys[k]->scalar;
            const cfg_node *v = e->items[k];
            const bool known = !strcmp(key, "match") || !strcmp(key, "library") ||
                               !strcmp(key, markers ? "phase" : "kind");
            if (!known)
                return bad(err, e->keys[k], "unknown key '%s' (valid: match, %s)", key,
                           markers ? "phase" : "kind, library");
            if (v->kind != CFG_NODE_SCALAR || !v->scalar[0])
                return bad(err, v, "'%s' must be a non-empty string", key);
            char choices[300];
            if (!strcmp(key, "match"))
                p.match = v->scalar;
            else if (!strcmp(key, "library"))
                p.library = v->scalar;
            else if (markers && (p.phase = cfg_enum_index(plan_phase_kind_names, v->scalar)) < 0) {
                enum_list(plan_phase_kind_names, choices, sizeof(choices));
                return bad(err, v, "phase '%s': valid choices: %s", v->scalar, choices);
            } else if (!markers && (p.kind = cfg_enum_index(plan_op_kind_names, v->scalar)) < 0) {
                enum_list(plan_op_kind_names, choices, sizeof(choices));
                return bad(err, v, "kind '%s': valid choices: %s", v->scalar, choices);
            }
        }
        if (!p.match || (markers ? p.phase < 0 : p.kind < 0))
            return bad(err, e, "an entry needs 'match' and '%s'", markers ? "phase" : "kind");
        trace_pattern *d = &(*list)[(*n)++];
        d->match = util_xstrdup(p.match);
        d->library = util_xstrdup(p.library ? p.library : "");
        d->kind = p.kind;
        d->phase = p.phase;
    }
    return 0;
}

static int load_file(trace_map *m, const char *path, trace_error *err)
{
    cfg_error ce;
    cfg_doc *doc = cfg_doc_load_file(path, &ce);
    if (!doc) {
        snprintf(err->msg, sizeof(err->msg), "%s", ce.msg);
        return -1;
    }
    const cfg_node *root = cfg_doc_root(doc);
    int rc = 0;
    if (root->kind != CFG_NODE_MAP)
        rc = bad(err, root, "a kernel table is a mapping with 'kernels' and 'markers' lists");
    for (size_t i = 0; rc == 0 && i < root->n; i++) {
        const char *key = root->keys[i]->scalar;
        if (!strcmp(key, "kernels"))
            rc = load_list(root->items[i], false, &m->kernels, &m->n_kernels, err);
        else if (!strcmp(key, "markers"))
            rc = load_list(root->items[i], true, &m->markers, &m->n_markers, err);
        else
            rc = bad(err, root->keys[i], "unknown key '%s' (valid: kernels, markers)", key);
    }
    cfg_doc_free(doc);
    return rc;
}

trace_map *trace_map_load(const char *shipped, const char *user, trace_error *err)
{
    trace_map *m = util_xcalloc(1, sizeof(*m));
    if ((user && load_file(m, user, err)) || load_file(m, shipped, err)) {
        trace_map_free(m);
        return NULL;
    }
    return m;
}

void trace_map_free(trace_map *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_kernels; i++) {
        free(m->kernels[i].match);
        free(m->kernels[i].library);
    }
    for (int i = 0; i < m->n_markers; i++) {
        free(m->markers[i].match);
        free(m->markers[i].library);
    }
    free(m->kernels);
    free(m->markers);
    free(m);
}

int trace_map_patterns(const trace_map *m) { return m->n_kernels; }

int trace_map_kind(const trace_map *m, const char *name, const char **library)
{
    for (int i = 0; i < m->n_kernels; i++)
        if (fnmatch(m->kernels[i].match, name, 0) == 0) {
            if (library)
                *library = m->kernels[i].library;
            return m->kernels[i].kind;
        }
    if (library)
        *library = "";
    return TRACE_KIND_UNMAPPED;
}

int trace_map_marker(const trace_map *m, const char *name)
{
    for (int i = 0; i < m->n_markers; i++)
        if (fnmatch(m->markers[i].match, name, 0) == 0)
            return 1 + m->markers[i].phase;
    return 0;
}

bool trace_map_keep(const char *name, void *map) { return trace_map_marker(map, name) != 0; }

void trace_map_apply(const trace_map *m, trace_rank *r)
{
    /* Names repeat (a few hundred distinct among a million kernels): match each name once. */
    short *kind_of = util_xmalloc(((size_t)r->n_names + 1) * sizeof(short));
    for (int i = 0; i < r->n_names; i++)
        kind_of[i] = -2;
    trace_kernel *k = r->kernels.data;
    for (size_t i = 0; i < r->kernels.count; i++) {
        if (kind_of[k[i].name] == -2)
            kind_of[k[i].name] = (short)trace_map_kind(m, r->names[k[i].name], NULL);
        k[i].kind = kind_of[k[i].name];
    }
    free(kind_of);
}

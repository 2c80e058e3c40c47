/* The variants file of `vpsim compare`: strict YAML bound through schema tables, like a scenario. */
#include "compare.h"

#include "../config/cfg_schema.h"
#include "../config/cfg_tree.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* `set`: a list of "KEY=VALUE" strings. The key is checked here (a typo points at its line); the value
 * only when the variant's scenario loads, so a value out of range costs that variant its row, not the
 * whole ranking. */
static int bind_sets(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err)
{
    (void)f;
    compare_sets *s = slot;
    if (n->kind != CFG_NODE_SEQ) {
        cfg_errorf(err, n, "%s: expected a list of KEY=VALUE strings, e.g. [run.backend=oneshot]", path);
        return -1;
    }
    if (n->n > COMPARE_MAX_SETS) {
        cfg_errorf(err, n, "%s: at most %d overrides per variant", path, COMPARE_MAX_SETS);
        return -1;
    }
    for (size_t i = 0; i < n->n; i++) {
        const cfg_node *it = n->items[i];
        if (it->kind != CFG_NODE_SCALAR) {
            cfg_errorf(err, it, "%s[%zu]: expected a KEY=VALUE string", path, i);
            return -1;
        }
        cfg_error why;
        if (cfg_check_set_key(it->scalar, &why)) {
            /* The checker names the argument as a --set; here it is a line of the file. */
            const char *msg = strstr(why.msg, "': ");
            cfg_errorf(err, it, "%s[%zu]: %s", path, i, msg ? msg + 3 : why.msg);
            return -1;
        }
        /* Two values for one key in one variant: the last would win silently, so the variant would not
         * be what either line says. */
        const size_t key_len = strcspn(it->scalar, "=");
        for (int k = 0; k < s->n; k++)
            if (!strncmp(s->v[k], it->scalar, key_len) && s->v[k][key_len] == '=' && strcmp(s->v[k], it->scalar)) {
                cfg_errorf(err, it, "%s[%zu]: '%s' contradicts '%s' earlier in the same variant; give the key once",
                           path, i, it->scalar, s->v[k]);
                return -1;
            }
        s->v[s->n++] = util_xstrdup(it->scalar);
    }
    return 0;
}

#define CV(f) offsetof(compare_variant, f)
static const cfg_field variant_fields[] = {
    {.key = "name", .type = CFG_T_CHARS, .offset = CV(name), .max_items = COMPARE_NAME_MAX,
     .doc = "the variant's name in the ranking"},
    {.key = "set", .type = CFG_T_CUSTOM, .offset = CV(set), .def = "[]", .bind = bind_sets,
     .doc = "scenario overrides, each as --set takes them"},
    {.key = "note", .type = CFG_T_STRING, .offset = CV(note), .def = "''", .doc = "what the variant tries"},
    {.key = "baseline", .type = CFG_T_BOOL, .offset = CV(baseline), .def = "false",
     .doc = "gains are measured against this variant (at most one; default: the first)"},
    {0},
};

static void variant_free(compare_variant *v)
{
    for (int k = 0; k < v->set.n; k++)
        free(v->set.v[k]);
    v->set.n = 0;
    cfg_schema_free(variant_fields, v);
}

static int bind_all(const cfg_node *root, compare_file *out, cfg_error *err)
{
    int baseline_at = -1;
    for (size_t i = 0; i < root->n; i++) {
        compare_variant *v = &out->v[out->n];
        char path[32];
        snprintf(path, sizeof(path), "[%zu]", i);
        if (root->items[i]->kind != CFG_NODE_MAP) {
            cfg_errorf(err, root->items[i], "%s: expected a mapping {name, set, note, baseline}", path);
            return -1;
        }
        out->n++; /* counted before binding so that a half-bound variant is freed too */
        if (cfg_schema_bind(variant_fields, root->items[i], v, path, err))
            return -1;
        if (!v->name[0]) {
            cfg_errorf(err, root->items[i], "%s: name is empty", path);
            return -1;
        }
        for (int k = 0; k < out->n - 1; k++)
            if (!strcmp(out->v[k].name, v->name)) {
                cfg_errorf(err, root->items[i], "%s: a second variant named '%s'", path, v->name);
                return -1;
            }
        if (v->baseline) {
            if (baseline_at >= 0) {
                cfg_errorf(err, root->items[i], "%s: a second baseline ('%s' is one already)", path,
                           out->v[baseline_at].name);
                return -1;
            }
            baseline_at = (int)i;
        }
    }
    out->baseline = baseline_at >= 0 ? baseline_at : 0;
    return 0;
}

int compare_load(const char *path, compare_file *out, cfg_error *err)
{
    memset(out, 0, sizeof(*out));
    cfg_doc *doc = cfg_doc_load_file(path, err);
    if (!doc)
        return -1;
    const cfg_node *root = cfg_doc_root(doc);
    int rc = -1;
    if (!root || root->kind != CFG_NODE_SEQ || root->n == 0) {
        if (root)
            cfg_errorf(err, root, "expected a non-empty list of variants ({name, set: [KEY=VALUE, ...], note, baseline})");
        else
            cfg_error_plain(err, "%s: empty file: expected a list of variants", path);
    } else if (root->n > COMPARE_MAX_VARIANTS) {
        cfg_errorf(err, root, "at most %d variants (this file has %zu)", COMPARE_MAX_VARIANTS, root->n);
    } else {
        /* One spare slot: the automatic speculation-off variant. */
        out->v = util_xcalloc(root->n + 1, sizeof(*out->v));
        rc = bind_all(root, out, err);
    }
    cfg_doc_free(doc);
    if (rc)
        compare_file_free(out);
    return rc;
}

void compare_file_free(compare_file *f)
{
    for (int i = 0; i < f->n; i++)
        variant_free(&f->v[i]);
    free(f->v);
    memset(f, 0, sizeof(*f));
}

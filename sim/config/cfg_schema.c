/* cfg_schema's binder: a cfg_tree node into the struct a table describes (cfg_schema.h), with the checks
 * and the file:line:col messages of every configuration and JSON record vpsim reads. */
#include "cfg_schema.h"
#include "cfg_schema_text.h"

#include "../util/util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool in_range(const cfg_field *f, double v)
{
    return f->min > f->max || (v >= f->min && v <= f->max);
}

/* A scalar that is usable as a number: plain (not quoted). */
static int want_scalar(const cfg_node *n, const char *path, const cfg_field *f, cfg_error *err)
{
    if (n->kind != CFG_NODE_SCALAR) {
        cfg_errorf(err, n, "%s: expected %s, got a %s", path, cfg_schema_type_name(f->type),
                   n->kind == CFG_NODE_MAP ? "mapping" : "list");
        return -1;
    }
    return 0;
}

/* JSON's null (a bare `null`): a value only where the field is nullable. */
static bool is_null(const cfg_node *n)
{
    return n->kind == CFG_NODE_SCALAR && !n->quoted && strcmp(n->scalar, "null") == 0;
}

/* A string value: any scalar in YAML; in a JSON record a JSON string, so that 5, true and null (which a
 * JSON Schema tells apart from "5") are refused here too. */
static int want_string(const cfg_node *n, const char *path, const cfg_field *f, bool json, cfg_error *err)
{
    if (want_scalar(n, path, f, err))
        return -1;
    if (json && !n->quoted) {
        cfg_errorf(err, n, "%s: expected a string (in double quotes), got %s", path, n->scalar);
        return -1;
    }
    return 0;
}

/* Integers are stored in an int unless the field is INT64. */
static bool fits(const cfg_field *f, long long v)
{
    return f->type == CFG_T_INT64 || (v <= 2147483647LL && v >= -2147483647LL);
}

static int bind_number(const cfg_field *f, const cfg_node *n, const char *path, double *out_d, long long *out_i,
                       bool integer, cfg_error *err)
{
    if (want_scalar(n, path, f, err))
        return -1;
    char rbuf[64];
    if (integer) {
        long long v;
        if (n->quoted || !cfg_parse_int(n->scalar, &v)) {
            cfg_errorf(err, n, "%s: expected an integer, got '%s'", path, n->scalar);
            return -1;
        }
        if (!in_range(f, (double)v) || !fits(f, v)) {
            cfg_schema_range_text(f, rbuf, sizeof(rbuf));
            cfg_errorf(err, n, "%s: %lld is out of range (must be %s)", path, v, rbuf);
            return -1;
        }
        *out_i = v;
    } else {
        double v;
        if (n->quoted || !cfg_parse_double(n->scalar, &v)) {
            cfg_errorf(err, n, "%s: expected a number, got '%s'", path, n->scalar);
            return -1;
        }
        if (!in_range(f, v)) {
            cfg_schema_range_text(f, rbuf, sizeof(rbuf));
            cfg_errorf(err, n, "%s: %g is out of range (must be %s)", path, v, rbuf);
            return -1;
        }
        *out_d = v;
    }
    return 0;
}

static int bind_field(const cfg_field *f, const cfg_node *n, void *base, const char *path, bool json, cfg_error *err);
static int bind_table(const cfg_field *table, const cfg_node *node, void *base, const char *path, bool json,
                      cfg_error *err);

static int bind_list(const cfg_field *f, const cfg_node *n, void *base, const char *path, cfg_error *err)
{
    if (n->kind != CFG_NODE_SEQ) {
        cfg_errorf(err, n, "%s: expected a %s like [1, 2], got %s", path, cfg_schema_type_name(f->type),
                   n->kind == CFG_NODE_MAP ? "a mapping" : "a scalar");
        return -1;
    }
    if ((int)n->n > f->max_items) {
        cfg_errorf(err, n, "%s: %zu items; at most %d are allowed", path, n->n, f->max_items);
        return -1;
    }
    bool integer = f->type == CFG_T_INT_LIST;
    for (size_t i = 0; i < n->n; i++) {
        char *ipath = util_xasprintf("%s[%zu]", path, i);
        double d = 0;
        long long v = 0;
        int rc = bind_number(f, n->items[i], ipath, &d, &v, integer, err);
        free(ipath);
        if (rc)
            return -1;
        if (integer)
            ((int *)((char *)base + f->offset))[i] = (int)v;
        else
            ((double *)((char *)base + f->offset))[i] = d;
    }
    *(int *)((char *)base + f->count_offset) = (int)n->n;
    return 0;
}

/* The items of a MAP_LIST or MAP_ARRAY. Elements are zeroed and counted before they are bound, so an
 * owner that frees by count frees a partly bound list too. */
static int bind_items(const cfg_field *f, const cfg_node *n, void *base, const char *path, bool json, cfg_error *err)
{
    if (n->kind != CFG_NODE_SEQ || (n->n == 0 && !f->empty_ok)) {
        cfg_errorf(err, n, "%s: expected a %slist of mappings", path, f->empty_ok ? "" : "non-empty ");
        return -1;
    }
    if ((long long)n->n > f->max_items) {
        cfg_errorf(err, n, "%s: %zu items; at most %d are allowed", path, n->n, f->max_items);
        return -1;
    }
    char *items;
    if (f->type == CFG_T_MAP_LIST) {
        /* An empty list is not an absent one: it keeps a (zero) element, so that a writer tells them apart. */
        items = util_xcalloc(n->n ? n->n : 1, f->elem_size);
        void **slot = (void **)((char *)base + f->offset);
        free(*slot);
        *slot = items;
    } else {
        items = (char *)base + f->offset;
        memset(items, 0, n->n * f->elem_size);
    }
    *(int *)((char *)base + f->count_offset) = (int)n->n;
    for (size_t i = 0; i < n->n; i++) {
        char *ipath = util_xasprintf("%s[%zu]", path, i);
        void *elem = items + i * f->elem_size;
        int rc = bind_table(f->fields, n->items[i], elem, ipath, json, err);
        if (!rc && f->post)
            rc = f->post(elem, n->items[i], ipath, err);
        free(ipath);
        if (rc)
            return -1;
    }
    return 0;
}

static void free_strings(char **items, int n)
{
    for (int i = 0; items && i < n; i++)
        free(items[i]);
    free(items);
}

static int bind_string_list(const cfg_field *f, const cfg_node *n, void *base, const char *path, bool json,
                            cfg_error *err)
{
    if (n->kind != CFG_NODE_SEQ) {
        cfg_errorf(err, n, "%s: expected a list of strings", path);
        return -1;
    }
    if ((long long)n->n > f->max_items) {
        cfg_errorf(err, n, "%s: %zu items; at most %d are allowed", path, n->n, f->max_items);
        return -1;
    }
    char ***slot = (char ***)((char *)base + f->offset);
    int *count = (int *)((char *)base + f->count_offset);
    free_strings(*slot, *count);
    *slot = util_xcalloc(n->n ? n->n : 1, sizeof(char *));
    *count = 0;
    for (size_t i = 0; i < n->n; i++) {
        char *ipath = util_xasprintf("%s[%zu]", path, i);
        const int rc = want_string(n->items[i], ipath, f, json, err);
        free(ipath);
        if (rc)
            return -1;
        (*slot)[(*count)++] = util_xstrdup(n->items[i]->scalar);
    }
    return 0;
}

/* An environment block: keys and values are free text, bounded by util_env_item's sizes (what a writer
 * can have held), the count by max_items. */
static int bind_string_map(const cfg_field *f, const cfg_node *n, void *base, const char *path, bool json,
                           cfg_error *err)
{
    if (n->kind != CFG_NODE_MAP) {
        cfg_errorf(err, n, "%s: expected a mapping of strings", path);
        return -1;
    }
    if ((long long)n->n > f->max_items) {
        cfg_errorf(err, n, "%s: %zu keys; at most %d are allowed", path, n->n, f->max_items);
        return -1;
    }
    util_env_item *items = (util_env_item *)((char *)base + f->offset);
    int *count = (int *)((char *)base + f->count_offset);
    *count = 0;
    for (size_t i = 0; i < n->n; i++) {
        const char *key = n->keys[i]->scalar;
        char *kpath = cfg_schema_join_path(path, key);
        int rc = want_string(n->items[i], kpath, f, json, err);
        if (!rc && strlen(key) >= sizeof(items->key)) {
            cfg_errorf(err, n->keys[i], "%s: a key of at most %zu characters", kpath, sizeof(items->key) - 1);
            rc = -1;
        } else if (!rc && strlen(n->items[i]->scalar) >= sizeof(items->value)) {
            cfg_errorf(err, n->items[i], "%s: a value of at most %zu characters", kpath, sizeof(items->value) - 1);
            rc = -1;
        }
        free(kpath);
        if (rc)
            return -1;
        snprintf(items[i].key, sizeof(items[i].key), "%s", key);
        snprintf(items[i].value, sizeof(items[i].value), "%s", n->items[i]->scalar);
        (*count)++;
    }
    return 0;
}

/* A nullable field's null: the value that reads as "none" (cfg_field.nullable). */
static void bind_null(const cfg_field *f, void *base)
{
    char *slot = (char *)base + f->offset;
    switch (f->type) {
    case CFG_T_DOUBLE: *(double *)slot = NAN; break;
    case CFG_T_INT: *(int *)slot = -1; break;
    case CFG_T_INT64: *(long long *)slot = -1; break;
    case CFG_T_BOOL: *(bool *)slot = false; break;
    case CFG_T_CHARS: slot[0] = '\0'; break;
    case CFG_T_STRING:
    case CFG_T_PATH:
        free(*(char **)slot);
        *(char **)slot = NULL;
        break;
    default: break; /* a MAP keeps its defaults; lists their zero count */
    }
}

/* Bytes a derived value takes (0: not checked on load: lists, custom values, a MAP without elem_size). */
static size_t derived_size(const cfg_field *f)
{
    switch (f->type) {
    case CFG_T_INT:
    case CFG_T_ENUM: return sizeof(int);
    case CFG_T_INT64: return sizeof(long long);
    case CFG_T_DOUBLE: return sizeof(double);
    case CFG_T_BOOL: return sizeof(bool);
    case CFG_T_STRING: return sizeof(char *);
    case CFG_T_CHARS: return (size_t)f->max_items;
    case CFG_T_MAP: return f->elem_size;
    default: return 0;
    }
}

/* A derived value is recomputed on load, but a record checked against its JSON Schema refuses one of the
 * wrong type: so is it here, bound into scratch space and dropped. */
static int check_derived(const cfg_field *f, const cfg_node *n, const char *path, bool json, cfg_error *err)
{
    const size_t size = derived_size(f);
    if (!size || (f->nullable && is_null(n)))
        return 0;
    cfg_field copy = *f;
    copy.offset = 0;
    copy.derived = false;
    copy.min = 1, copy.max = 0; /* no range: the JSON Schema gives a derived value none */
    void *scratch = util_xcalloc(1, size);
    const int rc = bind_field(&copy, n, scratch, path, json, err);
    if (f->type == CFG_T_STRING)
        free(*(char **)scratch);
    else if (f->type == CFG_T_MAP)
        cfg_schema_free(f->fields, scratch);
    free(scratch);
    return rc;
}

static int bind_path(const cfg_field *f, const cfg_node *n, void *base, const char *path, cfg_error *err)
{
    if (want_scalar(n, path, f, err))
        return -1;
    if (!n->scalar[0]) {
        cfg_errorf(err, n, "%s: empty path", path);
        return -1;
    }
    /* Relative paths in a file are relative to that file; on the command line, to the cwd. */
    char *dir = n->from_set ? util_xstrdup(".") : util_dirname(n->src);
    char *full = util_path_join(dir, n->scalar);
    free(dir);
    if (access(full, R_OK) != 0) {
        cfg_errorf(err, n, "%s: file '%s' (resolved to '%s') cannot be read: %s", path, n->scalar, full,
                   strerror(errno));
        free(full);
        return -1;
    }
    struct stat st;
    if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
        cfg_errorf(err, n, "%s: '%s' (resolved to '%s') is not a regular file", path, n->scalar, full);
        free(full);
        return -1;
    }
    char **slot = (char **)((char *)base + f->offset);
    free(*slot);
    *slot = full;
    return 0;
}

static int bind_field(const cfg_field *f, const cfg_node *n, void *base, const char *path, bool json, cfg_error *err)
{
    if (f->nullable && is_null(n)) { /* (a default may be "null" too) */
        if (!f->derived)
            bind_null(f, base);
        return 0;
    }
    if (f->derived)
        return json ? check_derived(f, n, path, json, err) : 0;
    char *slot = (char *)base + f->offset;
    double d;
    long long v;
    switch (f->type) {
    case CFG_T_INT:
        if (bind_number(f, n, path, &d, &v, true, err))
            return -1;
        *(int *)slot = (int)v;
        return 0;
    case CFG_T_DOUBLE:
        if (bind_number(f, n, path, &d, &v, false, err))
            return -1;
        *(double *)slot = d;
        return 0;
    case CFG_T_BOOL:
        if (want_scalar(n, path, f, err))
            return -1;
        if (!n->quoted && strcmp(n->scalar, "true") == 0)
            *(bool *)slot = true;
        else if (!n->quoted && strcmp(n->scalar, "false") == 0)
            *(bool *)slot = false;
        else {
            cfg_errorf(err, n, "%s: expected true or false, got '%s'", path, n->scalar);
            return -1;
        }
        return 0;
    case CFG_T_STRING:
        if (want_string(n, path, f, json, err))
            return -1;
        if (f->check && n->scalar[0]) {
            char why[400];
            if (f->check(n->scalar, why, sizeof(why))) {
                cfg_errorf(err, n, "%s: %s", path, why);
                return -1;
            }
        }
        free(*(char **)slot);
        *(char **)slot = util_xstrdup(n->scalar);
        return 0;
    case CFG_T_PATH:
        return bind_path(f, n, base, path, err);
    case CFG_T_ENUM: {
        if (want_string(n, path, f, json, err))
            return -1;
        int idx = cfg_enum_index(f->choices, n->scalar);
        if (idx < 0) {
            char list[512];
            cfg_errorf(err, n, "%s: unknown value '%s'; valid choices: %s", path, n->scalar,
                       cfg_enum_list(f->choices, list, sizeof(list)));
            return -1;
        }
        *(int *)slot = idx;
        return 0;
    }
    case CFG_T_INT64:
        if (bind_number(f, n, path, &d, &v, true, err))
            return -1;
        *(long long *)slot = v;
        return 0;
    case CFG_T_CHARS:
        if (want_string(n, path, f, json, err))
            return -1;
        if (strlen(n->scalar) >= (size_t)f->max_items) {
            cfg_errorf(err, n, "%s: '%.40s...' is longer than %d characters", path, n->scalar, f->max_items - 1);
            return -1;
        }
        if (f->choices && cfg_enum_index(f->choices, n->scalar) < 0) { /* a name kept as text (a device) */
            char list[512];
            cfg_errorf(err, n, "%s: unknown value '%s'; valid choices: %s", path, n->scalar,
                       cfg_enum_list(f->choices, list, sizeof(list)));
            return -1;
        }
        snprintf(slot, (size_t)f->max_items, "%s", n->scalar);
        return 0;
    case CFG_T_MAP:
        if (bind_table(f->fields, n, slot, path, json, err))
            return -1;
        return f->post ? f->post(slot, n, path, err) : 0;
    case CFG_T_DOUBLE_LIST:
    case CFG_T_INT_LIST:
        return bind_list(f, n, base, path, err);
    case CFG_T_MAP_LIST:
    case CFG_T_MAP_ARRAY:
        return bind_items(f, n, base, path, json, err);
    case CFG_T_STRING_LIST:
        return bind_string_list(f, n, base, path, json, err);
    case CFG_T_STRING_MAP:
        return bind_string_map(f, n, base, path, json, err);
    case CFG_T_DERIVED:
        return 0;
    case CFG_T_CUSTOM:
        return f->bind(f, n, slot, path, err);
    }
    return -1;
}

/* A field's default, parsed once per process: defaults are text in the schema tables, and parsing each of
 * them at every load (a sweep loads the scenario once per point) was a third of a sweep's time. Keyed by
 * the field (the tables are static, so its address is stable); the documents are only read. Reachable
 * from here until exit, so no leak checker counts them. */
#define DEFAULT_CACHE_SLOTS 1024 /* a power of two above the schema's fields with a default */
static struct {
    const cfg_field *f;
    cfg_doc *doc;
} default_cache[DEFAULT_CACHE_SLOTS];

static cfg_doc *default_doc(const cfg_field *f, const char *path, bool *cached, cfg_error *err)
{
    *cached = true;
    unsigned i = (unsigned)(((uintptr_t)f >> 4) * 0x9E3779B1u) & (DEFAULT_CACHE_SLOTS - 1);
    for (unsigned probes = 0; probes < DEFAULT_CACHE_SLOTS && default_cache[i].f; probes++) {
        if (default_cache[i].f == f)
            return default_cache[i].doc;
        i = (i + 1) & (DEFAULT_CACHE_SLOTS - 1);
    }
    char *src = util_xasprintf("default of %s", path);
    cfg_error derr;
    cfg_doc *d = cfg_doc_load_text(f->def, strlen(f->def), src, true, &derr);
    free(src);
    if (!d) {
        cfg_error_plain(err, "internal: bad default for %s: %s", path, derr.msg);
        return NULL;
    }
    if (!default_cache[i].f) {
        default_cache[i].f = f;
        default_cache[i].doc = d;
    } else
        *cached = false; /* the table is full: the caller frees this one */
    return d;
}

static int bind_default(const cfg_field *f, const cfg_node *parent, void *base, const char *path, bool json,
                        cfg_error *err)
{
    if (f->derived || f->optional)
        return 0;
    if (f->type == CFG_T_MAP) {
        /* An absent section is an empty one: its children's defaults apply, required ones complain. */
        cfg_node empty = {.kind = CFG_NODE_MAP, .src = parent->src, .from_set = parent->from_set,
                          .line = parent->line, .col = parent->col};
        return bind_table(f->fields, &empty, (char *)base + f->offset, path, json, err);
    }
    if (f->type == CFG_T_DERIVED)
        return 0;
    if (!f->def) {
        cfg_errorf(err, parent, "missing required key '%s' (%s)", path,
                   f->doc ? f->doc : cfg_schema_type_name(f->type));
        return -1;
    }
    bool cached;
    cfg_doc *d = default_doc(f, path, &cached, err);
    if (!d)
        return -1;
    /* Defaults are YAML text in the tables ("main", "''"): bound as YAML, whatever the document. */
    const int rc = bind_field(f, cfg_doc_root(d), base, path, false, err);
    if (!cached)
        cfg_doc_free(d);
    return rc;
}

/* A JSON record's field that only some kinds carry and has no default: required where it is carried,
 * refused where it is not (a table's fields with a default keep the record's own checks: plan ops). */
static int check_kind(const cfg_field *table, const cfg_field *f, const cfg_node *node, const void *base,
                      const char *path, bool *skip, cfg_error *err)
{
    *skip = false;
    if (!f->kinds || f->def)
        return 0;
    const int kind = cfg_schema_record_kind(table, base);
    if (cfg_schema_carried(f, kind))
        return 0;
    const cfg_node *child = cfg_map_get(node, f->key);
    if (child) {
        const cfg_field *d = table;
        while (d->key && !(d->type == CFG_T_ENUM && (d->discriminator || strcmp(d->key, "kind") == 0)))
            d++;
        cfg_errorf(err, child, "%s: only some records carry it, and not one whose \"%s\" is \"%s\"", path,
                   d->key ? d->key : "kind", d->key && kind >= 0 ? d->choices[kind] : "?");
        return -1;
    }
    *skip = true;
    return 0;
}

static int bind_table(const cfg_field *table, const cfg_node *node, void *base, const char *path, bool json,
                      cfg_error *err)
{
    if (node->kind != CFG_NODE_MAP) {
        cfg_errorf(err, node, "%s: expected a mapping of keys, got %s", *path ? path : "document",
                   node->kind == CFG_NODE_SEQ ? "a list" : "a scalar");
        return -1;
    }
    /* Unknown keys first: a typo should be reported as a typo, not as a missing key. */
    for (size_t i = 0; i < node->n; i++) {
        const char *key = node->keys[i]->scalar;
        const cfg_field *f = table;
        while (f->key && strcmp(f->key, key) != 0)
            f++;
        if (!f->key) {
            util_buf valid = {0};
            for (const cfg_field *g = table; g->key; g++)
                util_buf_printf(&valid, "%s%s", g == table ? "" : ", ", g->key);
            char *full = cfg_schema_join_path(path, key);
            cfg_errorf(err, node->keys[i], "unknown key '%s'; valid keys here: %s", full, valid.s ? valid.s : "");
            free(full);
            util_buf_free(&valid);
            return -1;
        }
    }
    for (const cfg_field *f = table; f->key; f++) {
        char *full = cfg_schema_join_path(path, f->key);
        const cfg_node *child = cfg_map_get(node, f->key);
        bool skip = false;
        int rc = json ? check_kind(table, f, node, base, full, &skip, err) : 0;
        if (!rc && !skip)
            rc = child ? bind_field(f, child, base, full, json, err) : bind_default(f, node, base, full, json, err);
        free(full);
        if (rc)
            return -1;
    }
    return 0;
}

int cfg_schema_bind(const cfg_field *table, const cfg_node *node, void *base, const char *path, cfg_error *err)
{
    return bind_table(table, node, base, path, false, err);
}

int cfg_schema_bind_json(const cfg_field *table, const cfg_node *node, void *base, const char *path, cfg_error *err)
{
    return bind_table(table, node, base, path, true, err);
}

void cfg_schema_free(const cfg_field *table, void *base)
{
    for (const cfg_field *f = table; f->key; f++) {
        char *slot = (char *)base + f->offset;
        int *count = (int *)((char *)base + f->count_offset);
        if (f->derived)
            continue;
        if (f->type == CFG_T_STRING || f->type == CFG_T_PATH) {
            free(*(char **)slot);
            *(char **)slot = NULL;
        } else if (f->type == CFG_T_MAP) {
            cfg_schema_free(f->fields, slot);
        } else if (f->type == CFG_T_STRING_LIST) {
            free_strings(*(char ***)slot, *count);
            *(char ***)slot = NULL;
            *count = 0;
        } else if (f->type == CFG_T_MAP_LIST || f->type == CFG_T_MAP_ARRAY) {
            char *items = f->type == CFG_T_MAP_LIST ? *(char **)slot : slot;
            for (int i = 0; items && i < *count; i++)
                cfg_schema_free(f->fields, items + (size_t)i * f->elem_size);
            if (f->type == CFG_T_MAP_LIST) {
                free(items);
                *(char **)slot = NULL;
            }
            *count = 0;
        }
    }
}

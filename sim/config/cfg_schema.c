#include "cfg_schema.h"

#include "../util/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The same strictness as every numeric command-line option (util_parse_ll): digits and an optional '-'. */
bool cfg_parse_int(const char *s, long long *out) { return s && util_parse_ll(s, out) == 0; }

/* strtod also reads hex floats ("0x1p-1"), "inf" and "nan", and skips leading blanks; a config
 * number is decimal, finite and bare, like the integers beside it. */
bool cfg_parse_double(const char *s, double *out)
{
    if (!s || !*s || isspace((unsigned char)*s) || strpbrk(s, "xXpP"))
        return false;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

int cfg_enum_index(const char *const *choices, const char *name)
{
    for (int i = 0; choices[i]; i++)
        if (strcmp(choices[i], name) == 0)
            return i;
    return -1;
}

const char *cfg_enum_list(const char *const *choices, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; choices[i] && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", choices[i]);
    return buf;
}

static const char *type_name(cfg_type t)
{
    switch (t) {
    case CFG_T_INT: return "integer";
    case CFG_T_DOUBLE: return "number";
    case CFG_T_BOOL: return "bool";
    case CFG_T_STRING: return "string";
    case CFG_T_PATH: return "path";
    case CFG_T_ENUM: return "enum";
    case CFG_T_MAP: return "mapping";
    case CFG_T_DOUBLE_LIST: return "list of numbers";
    case CFG_T_INT_LIST: return "list of integers";
    case CFG_T_INT64: return "integer";
    case CFG_T_CHARS: return "string";
    case CFG_T_MAP_LIST: return "list of mappings";
    case CFG_T_DERIVED: return "derived (ignored on load)";
    case CFG_T_CUSTOM: return "see meaning";
    }
    return "?";
}

static char *join_path(const char *prefix, const char *key)
{
    return prefix && *prefix ? util_xasprintf("%s.%s", prefix, key) : util_xstrdup(key);
}

static bool in_range(const cfg_field *f, double v)
{
    return f->min > f->max || (v >= f->min && v <= f->max);
}

/* Whole bounds print whole ("[0, 2147483647]", not "[0, 2.14748e+09]"). */
static const char *bound_text(double v, char *buf, size_t len)
{
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%g", v);
    return buf;
}

static void range_text(const cfg_field *f, char *buf, size_t len)
{
    char lo[32], hi[32];
    if (f->max >= 1e300)
        snprintf(buf, len, ">= %.24s", bound_text(f->min, lo, sizeof(lo)));
    else
        snprintf(buf, len, "in [%.24s, %.24s]", bound_text(f->min, lo, sizeof(lo)), bound_text(f->max, hi, sizeof(hi)));
}

/* A scalar that is usable as a number: plain (not quoted). */
static int want_scalar(const cfg_node *n, const char *path, const cfg_field *f, cfg_error *err)
{
    if (n->kind != CFG_NODE_SCALAR) {
        cfg_errorf(err, n, "%s: expected %s, got a %s", path, type_name(f->type),
                   n->kind == CFG_NODE_MAP ? "mapping" : "list");
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
            range_text(f, rbuf, sizeof(rbuf));
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
            range_text(f, rbuf, sizeof(rbuf));
            cfg_errorf(err, n, "%s: %g is out of range (must be %s)", path, v, rbuf);
            return -1;
        }
        *out_d = v;
    }
    return 0;
}

static int bind_field(const cfg_field *f, cfg_node *n, void *base, const char *path, cfg_error *err);

static int bind_list(const cfg_field *f, cfg_node *n, void *base, const char *path, cfg_error *err)
{
    if (n->kind != CFG_NODE_SEQ) {
        cfg_errorf(err, n, "%s: expected a %s like [1, 2], got %s", path, type_name(f->type),
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

/* Elements are zeroed and counted before they are bound, so an owner that frees by count frees a
 * partly bound list too. */
static int bind_map_list(const cfg_field *f, cfg_node *n, void *base, const char *path, cfg_error *err)
{
    if (n->kind != CFG_NODE_SEQ || n->n == 0) {
        cfg_errorf(err, n, "%s: expected a non-empty list of mappings", path);
        return -1;
    }
    if ((long long)n->n > f->max_items) {
        cfg_errorf(err, n, "%s: %zu items; at most %d are allowed", path, n->n, f->max_items);
        return -1;
    }
    char *items = util_xcalloc(n->n, f->elem_size);
    void **slot = (void **)((char *)base + f->offset);
    free(*slot);
    *slot = items;
    *(int *)((char *)base + f->count_offset) = (int)n->n;
    for (size_t i = 0; i < n->n; i++) {
        char *ipath = util_xasprintf("%s[%zu]", path, i);
        void *elem = items + i * f->elem_size;
        int rc = cfg_schema_bind(f->fields, n->items[i], elem, ipath, err);
        if (!rc && f->post)
            rc = f->post(elem, n->items[i], ipath, err);
        free(ipath);
        if (rc)
            return -1;
    }
    return 0;
}

static int bind_path(const cfg_field *f, cfg_node *n, void *base, const char *path, cfg_error *err)
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

static int bind_field(const cfg_field *f, cfg_node *n, void *base, const char *path, cfg_error *err)
{
    if (f->derived)
        return 0;
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
        if (want_scalar(n, path, f, err))
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
        if (want_scalar(n, path, f, err))
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
        if (want_scalar(n, path, f, err))
            return -1;
        if (strlen(n->scalar) >= (size_t)f->max_items) {
            cfg_errorf(err, n, "%s: '%.40s...' is longer than %d characters", path, n->scalar, f->max_items - 1);
            return -1;
        }
        snprintf(slot, (size_t)f->max_items, "%s", n->scalar);
        return 0;
    case CFG_T_MAP:
        if (cfg_schema_bind(f->fields, n, slot, path, err))
            return -1;
        return f->post ? f->post(slot, n, path, err) : 0;
    case CFG_T_DOUBLE_LIST:
    case CFG_T_INT_LIST:
        return bind_list(f, n, base, path, err);
    case CFG_T_MAP_LIST:
        return bind_map_list(f, n, base, path, err);
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

static int bind_default(const cfg_field *f, const cfg_node *parent, void *base, const char *path, cfg_error *err)
{
    if (f->derived)
        return 0;
    if (f->type == CFG_T_MAP) {
        /* An absent section is an empty one: its children's defaults apply, required ones complain. */
        cfg_node empty = {.kind = CFG_NODE_MAP, .src = parent->src, .from_set = parent->from_set,
                          .line = parent->line, .col = parent->col};
        return cfg_schema_bind(f->fields, &empty, (char *)base + f->offset, path, err);
    }
    if (f->type == CFG_T_DERIVED)
        return 0;
    if (!f->def) {
        cfg_errorf(err, parent, "missing required key '%s' (%s)", path, f->doc ? f->doc : type_name(f->type));
        return -1;
    }
    bool cached;
    cfg_doc *d = default_doc(f, path, &cached, err);
    if (!d)
        return -1;
    const int rc = bind_field(f, cfg_doc_root(d), base, path, err);
    if (!cached)
        cfg_doc_free(d);
    return rc;
}

int cfg_schema_bind(const cfg_field *table, cfg_node *node, void *base, const char *path, cfg_error *err)
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
            char *full = join_path(path, key);
            cfg_errorf(err, node->keys[i], "unknown key '%s'; valid keys here: %s", full, valid.s ? valid.s : "");
            free(full);
            util_buf_free(&valid);
            return -1;
        }
    }
    for (const cfg_field *f = table; f->key; f++) {
        char *full = join_path(path, f->key);
        cfg_node *child = cfg_map_get(node, f->key);
        int rc = child ? bind_field(f, child, base, full, err) : bind_default(f, node, base, full, err);
        free(full);
        if (rc)
            return -1;
    }
    return 0;
}

void cfg_schema_free(const cfg_field *table, void *base)
{
    for (const cfg_field *f = table; f->key; f++) {
        char *slot = (char *)base + f->offset;
        if (f->type == CFG_T_STRING || f->type == CFG_T_PATH) {
            free(*(char **)slot);
            *(char **)slot = NULL;
        } else if (f->type == CFG_T_MAP) {
            cfg_schema_free(f->fields, slot);
        }
    }
}

const cfg_field *cfg_schema_find(const cfg_field *table, const char *dotted)
{
    const char *dot = strchr(dotted, '.');
    size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);
    for (const cfg_field *f = table; f->key; f++) {
        if (strlen(f->key) == len && strncmp(f->key, dotted, len) == 0) {
            if (!dot)
                return f;
            return f->type == CFG_T_MAP ? cfg_schema_find(f->fields, dot + 1) : NULL;
        }
    }
    return NULL;
}

void cfg_schema_write_markdown(FILE *out, const cfg_field *table, const char *prefix)
{
    for (const cfg_field *f = table; f->key; f++) {
        char *full = join_path(prefix, f->key);
        if (f->type == CFG_T_MAP) {
            cfg_schema_write_markdown(out, f->fields, full);
            free(full);
            continue;
        }
        char type[512];
        if (f->type == CFG_T_ENUM) {
            char list[400];
            snprintf(type, sizeof(type), "one of: %s", cfg_enum_list(f->choices, list, sizeof(list)));
        } else if ((f->type == CFG_T_INT || f->type == CFG_T_INT64 || f->type == CFG_T_DOUBLE || f->type == CFG_T_INT_LIST ||
                    f->type == CFG_T_DOUBLE_LIST) && f->min <= f->max) {
            char r[64];
            range_text(f, r, sizeof(r));
            snprintf(type, sizeof(type), "%s %s", type_name(f->type), r);
        } else {
            snprintf(type, sizeof(type), "%s", type_name(f->type));
        }
        fprintf(out, "| `%s` | %s | %s | %s | %s |\n", full, type, f->unit ? f->unit : "",
                f->def ? f->def : "**required**", f->doc ? f->doc : "");
        free(full);
    }
}

/* The JSON side of the schema tables (cfg_schema.h): a record written from the same table that reads it
 * (cfg_schema_write), and that table's JSON Schema (cfg_schema_json_schema), so that the writer, the
 * reader, the load-time checks and what analysis/ and users validate against are one description. */
#include "cfg_schema.h"

#include <string.h>

/* The record's kind, for the `kinds` rule: the value of the table's ENUM field "kind"; -1 without one. */
static int record_kind(const cfg_field *table, const void *base)
{
    for (const cfg_field *f = table; f->key; f++)
        if (f->type == CFG_T_ENUM && strcmp(f->key, "kind") == 0)
            return *(const int *)((const char *)base + f->offset);
    return -1;
}

static bool carried(const cfg_field *f, int kind)
{
    return !f->kinds || (kind >= 0 && kind < 32 && (f->kinds & (1u << kind)));
}

static bool is_zero(const cfg_field *f, const char *slot)
{
    switch (f->type) {
    case CFG_T_INT:
    case CFG_T_ENUM: return *(const int *)slot == 0;
    case CFG_T_INT64: return *(const long long *)slot == 0;
    case CFG_T_DOUBLE: return *(const double *)slot == 0.0;
    case CFG_T_BOOL: return !*(const bool *)slot;
    default: return false;
    }
}

static void write_value(util_json *j, const cfg_field *f, const char *slot, const void *base)
{
    switch (f->type) {
    case CFG_T_INT: util_json_int(j, *(const int *)slot); break;
    case CFG_T_INT64: util_json_int(j, *(const long long *)slot); break;
    case CFG_T_DOUBLE: util_json_num(j, *(const double *)slot); break;
    case CFG_T_BOOL: util_json_bool(j, *(const bool *)slot); break;
    case CFG_T_ENUM: util_json_str(j, f->choices[*(const int *)slot]); break;
    case CFG_T_CHARS: util_json_str(j, slot); break;
    case CFG_T_STRING:
    case CFG_T_PATH: util_json_str(j, *(char *const *)slot); break;
    case CFG_T_MAP:
        util_json_obj_begin(j);
        cfg_schema_write(j, f->fields, slot);
        util_json_obj_end(j);
        break;
    case CFG_T_MAP_LIST: {
        const char *items = *(char *const *)slot;
        const int n = *(const int *)((const char *)base + f->count_offset);
        util_json_arr_begin(j);
        for (int i = 0; i < n; i++) {
            util_json_obj_begin(j);
            cfg_schema_write(j, f->fields, items + (size_t)i * f->elem_size);
            util_json_obj_end(j);
        }
        util_json_arr_end(j);
        break;
    }
    case CFG_T_DOUBLE_LIST:
    case CFG_T_INT_LIST: {
        const int n = *(const int *)((const char *)base + f->count_offset);
        util_json_arr_begin(j);
        for (int i = 0; i < n; i++) {
            if (f->type == CFG_T_DOUBLE_LIST)
                util_json_num(j, ((const double *)slot)[i]);
            else
                util_json_int(j, ((const int *)slot)[i]);
        }
        util_json_arr_end(j);
        break;
    }
    case CFG_T_DERIVED:
    case CFG_T_CUSTOM: util_json_null(j); break; /* only reached without `write`: a table error */
    }
}

void cfg_schema_write(util_json *j, const cfg_field *table, const void *base)
{
    const int kind = record_kind(table, base);
    for (const cfg_field *f = table; f->key; f++) {
        const char *slot = (const char *)base + f->offset;
        if (!carried(f, kind) || (f->type == CFG_T_DERIVED && !f->write) || (f->omit_zero && is_zero(f, slot)))
            continue;
        util_json_key(j, f->key);
        if (f->write)
            f->write(j, slot, base);
        else
            write_value(j, f, slot, base);
    }
}

const cfg_field *cfg_schema_check_positive(const cfg_field *table, const void *base)
{
    const int kind = record_kind(table, base);
    for (const cfg_field *f = table; f->key; f++) {
        if (!f->positive || !carried(f, kind))
            continue;
        const char *slot = (const char *)base + f->offset;
        const long long v = f->type == CFG_T_INT64 ? *(const long long *)slot : *(const int *)slot;
        if (v < 1)
            return f;
    }
    return NULL;
}

const cfg_field *cfg_schema_check_carried(const cfg_field *table, const void *base, const cfg_node *node)
{
    const int kind = record_kind(table, base);
    for (const cfg_field *f = table; f->key; f++)
        if (!carried(f, kind) && cfg_map_get(node, f->key))
            return f;
    return NULL;
}

/* ---------------- JSON Schema ---------------- */

static void range(util_json *j, const cfg_field *f)
{
    if (f->min <= f->max && !f->derived) { /* (a derived field is never bound, so it has no range) */
        util_json_knum(j, "minimum", f->min);
        util_json_knum(j, "maximum", f->max);
    }
}

static void object_schema(util_json *j, const cfg_field *table);

static void value_schema(util_json *j, const cfg_field *f)
{
    if (f->json_schema) {
        util_json_raw(j, f->json_schema);
        return;
    }
    util_json_obj_begin(j);
    if (f->doc)
        util_json_kstr(j, "description", f->doc);
    switch (f->type) {
    case CFG_T_INT:
    case CFG_T_INT64:
        util_json_kstr(j, "type", "integer");
        range(j, f);
        break;
    case CFG_T_DOUBLE:
        util_json_kstr(j, "type", "number");
        range(j, f);
        break;
    case CFG_T_BOOL: util_json_kstr(j, "type", "boolean"); break;
    case CFG_T_ENUM:
        util_json_key(j, "enum");
        util_json_arr_begin(j);
        for (int i = 0; f->choices[i]; i++)
            util_json_str(j, f->choices[i]);
        util_json_arr_end(j);
        break;
    case CFG_T_CHARS:
        util_json_kstr(j, "type", "string");
        util_json_kint(j, "maxLength", f->max_items - 1);
        break;
    case CFG_T_STRING:
    case CFG_T_PATH: util_json_kstr(j, "type", "string"); break;
    case CFG_T_MAP:
        util_json_key(j, "allOf");
        util_json_arr_begin(j);
        object_schema(j, f->fields);
        util_json_arr_end(j);
        break;
    case CFG_T_MAP_LIST:
        util_json_kstr(j, "type", "array");
        util_json_kint(j, "maxItems", f->max_items);
        util_json_key(j, "items");
        object_schema(j, f->fields);
        break;
    case CFG_T_DOUBLE_LIST:
    case CFG_T_INT_LIST:
        util_json_kstr(j, "type", "array");
        util_json_kint(j, "maxItems", f->max_items);
        util_json_key(j, "items");
        util_json_obj_begin(j);
        util_json_kstr(j, "type", f->type == CFG_T_DOUBLE_LIST ? "number" : "integer");
        range(j, f);
        util_json_obj_end(j);
        break;
    case CFG_T_DERIVED:
    case CFG_T_CUSTOM: break; /* anything (a table gives json_schema where it knows better) */
    }
    util_json_obj_end(j);
}

static void key_list(util_json *j, const char *name, const cfg_field *table, int kind, bool positive_only)
{
    util_json_key(j, name);
    util_json_arr_begin(j);
    for (const cfg_field *f = table; f->key; f++)
        if (f->kinds && (f->kinds & (1u << kind)) && (!positive_only || f->positive))
            util_json_str(j, f->key);
    util_json_arr_end(j);
}

/* Per kind of record: the keys only some kinds carry may appear only there, and the positive ones
 * must be there and at least 1. */
static void kind_rules(util_json *j, const cfg_field *table)
{
    const cfg_field *kind = NULL;
    unsigned any = 0;
    for (const cfg_field *f = table; f->key; f++) {
        if (f->type == CFG_T_ENUM && strcmp(f->key, "kind") == 0)
            kind = f;
        any |= f->kinds;
    }
    if (!kind || !any)
        return;
    util_json_key(j, "allOf");
    util_json_arr_begin(j);
    for (int k = 0; kind->choices[k]; k++) {
        util_json_obj_begin(j);
        util_json_key(j, "if");
        util_json_obj_begin(j);
        util_json_key(j, "properties");
        util_json_obj_begin(j);
        util_json_key(j, "kind");
        util_json_obj_begin(j);
        util_json_kstr(j, "const", kind->choices[k]);
        util_json_obj_end(j);
        util_json_obj_end(j);
        util_json_obj_end(j);
        util_json_key(j, "then");
        util_json_obj_begin(j);
        key_list(j, "required", table, k, true);
        util_json_key(j, "properties");
        util_json_obj_begin(j);
        for (const cfg_field *f = table; f->key; f++) {
            if (!f->kinds)
                continue;
            util_json_key(j, f->key);
            if (!(f->kinds & (1u << k)))
                util_json_bool(j, false); /* not carried by this kind */
            else if (f->positive)
                util_json_raw(j, "{\"minimum\": 1}");
            else
                util_json_bool(j, true);
        }
        util_json_obj_end(j);
        util_json_obj_end(j);
        util_json_obj_end(j);
    }
    util_json_arr_end(j);
}

static void object_schema(util_json *j, const cfg_field *table)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "type", "object");
    util_json_key(j, "properties");
    util_json_obj_begin(j);
    for (const cfg_field *f = table; f->key; f++) {
        util_json_key(j, f->key);
        value_schema(j, f);
    }
    util_json_obj_end(j);
    util_json_key(j, "required");
    util_json_arr_begin(j);
    for (const cfg_field *f = table; f->key; f++)
        if (!f->def && !f->derived && f->type != CFG_T_DERIVED && f->type != CFG_T_MAP)
            util_json_str(j, f->key);
    util_json_arr_end(j);
    util_json_kbool(j, "additionalProperties", false);
    kind_rules(j, table);
    util_json_obj_end(j);
}

void cfg_schema_json_schema(util_json *j, const cfg_field *table, const char *title, const char *id)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "$schema", "https://json-schema.org/draft/2020-12/schema");
    util_json_kstr(j, "$id", id);
    util_json_kstr(j, "title", title);
    util_json_key(j, "allOf");
    util_json_arr_begin(j);
    object_schema(j, table);
    util_json_arr_end(j);
    util_json_obj_end(j);
}

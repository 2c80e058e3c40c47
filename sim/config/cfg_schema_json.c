/* The JSON side of the schema tables (cfg_schema.h): a record written from the same table that reads it
 * (cfg_schema_write), and that table's JSON Schema (cfg_schema_json_schema), so that the writer, the
 * reader, the load-time checks and what analysis/ and users validate against are one description. */
#include "cfg_schema.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool is_discriminator(const cfg_field *f)
{
    return f->type == CFG_T_ENUM && (f->discriminator || strcmp(f->key, "kind") == 0);
}

static const cfg_field *discriminator(const cfg_field *table)
{
    for (const cfg_field *f = table; f->key; f++)
        if (is_discriminator(f))
            return f;
    return NULL;
}

int cfg_schema_record_kind(const cfg_field *table, const void *base)
{
    const cfg_field *f = discriminator(table);
    return f ? *(const int *)((const char *)base + f->offset) : -1;
}

bool cfg_schema_carried(const cfg_field *f, int kind)
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

static void write_fields(util_json *j, const cfg_field *table, const void *base, const cfg_wctx *up);

/* An object of `table` at `base`, inside the object `up` describes. */
static void write_object(util_json *j, const cfg_field *table, const void *base, const cfg_wctx *up)
{
    util_json_obj_begin(j);
    write_fields(j, table, base, up);
    util_json_obj_end(j);
}

/* A number as the field prints it: exactly (util_json_num), or to `digits` significant digits where a
 * record is read and diffed by people ("2.2", not "2.2000000000000002"). Not finite: null. */
static void write_double(util_json *j, const cfg_field *f, double v)
{
    char buf[40];
    if (!f->digits || !isfinite(v)) {
        util_json_num(j, v);
        return;
    }
    snprintf(buf, sizeof(buf), "%.*g", f->digits, v);
    util_json_raw(j, buf);
}

/* A list's length: the int at count_offset of the object holding it. */
static int list_count(const cfg_field *f, const cfg_wctx *w)
{
    return *(const int *)((const char *)w->base + f->count_offset);
}

static void write_value(util_json *j, const cfg_field *f, const char *slot, const cfg_wctx *w)
{
    switch (f->type) {
    case CFG_T_INT: util_json_int(j, *(const int *)slot); break;
    case CFG_T_INT64: util_json_int(j, *(const long long *)slot); break;
    case CFG_T_DOUBLE: write_double(j, f, *(const double *)slot); break;
    case CFG_T_BOOL: util_json_bool(j, *(const bool *)slot); break;
    case CFG_T_ENUM: util_json_str(j, f->choices[*(const int *)slot]); break;
    case CFG_T_CHARS: util_json_str(j, slot); break;
    case CFG_T_STRING:
    case CFG_T_PATH: util_json_str(j, *(char *const *)slot); break;
    case CFG_T_MAP: write_object(j, f->fields, slot, w); break;
    case CFG_T_MAP_LIST:
    case CFG_T_MAP_ARRAY: {
        const char *items = f->type == CFG_T_MAP_LIST ? *(char *const *)slot : slot;
        util_json_arr_begin(j);
        for (int i = 0; i < list_count(f, w); i++)
            write_object(j, f->fields, items + (size_t)i * f->elem_size, w);
        util_json_arr_end(j);
        break;
    }
    case CFG_T_STRING_LIST:
        util_json_arr_begin(j);
        for (int i = 0; i < list_count(f, w); i++)
            util_json_str(j, (*(char *const *const *)slot)[i]);
        util_json_arr_end(j);
        break;
    case CFG_T_STRING_MAP: {
        const util_env_item *items = (const util_env_item *)slot;
        util_json_obj_begin(j);
        for (int i = 0; i < list_count(f, w); i++)
            util_json_kstr(j, items[i].key, items[i].value);
        util_json_obj_end(j);
        break;
    }
    case CFG_T_DOUBLE_LIST:
    case CFG_T_INT_LIST:
        util_json_arr_begin(j);
        for (int i = 0; i < list_count(f, w); i++) {
            if (f->type == CFG_T_DOUBLE_LIST)
                util_json_num(j, ((const double *)slot)[i]);
            else
                util_json_int(j, ((const int *)slot)[i]);
        }
        util_json_arr_end(j);
        break;
    case CFG_T_DERIVED:
    case CFG_T_CUSTOM: util_json_null(j); break; /* only reached without `write`: a table error */
    }
}

static void write_fields(util_json *j, const cfg_field *table, const void *base, const cfg_wctx *up)
{
    const cfg_wctx w = {.base = base, .up = up};
    const int kind = cfg_schema_record_kind(table, base);
    for (const cfg_field *f = table; f->key; f++) {
        const char *slot = (const char *)base + f->offset;
        if (f->external || !cfg_schema_carried(f, kind) || (f->type == CFG_T_DERIVED && !f->write) ||
            (f->omit_zero && is_zero(f, slot)) || (f->omit && f->omit(&w)))
            continue;
        util_json_key(j, f->key);
        if (f->nullable && f->null_when && f->null_when(&w))
            util_json_null(j);
        else if (f->write)
            f->write(j, slot, &w);
        else
            write_value(j, f, slot, &w);
    }
}

void cfg_schema_write(util_json *j, const cfg_field *table, const void *base) { write_fields(j, table, base, NULL); }

const cfg_field *cfg_schema_check_positive(const cfg_field *table, const void *base)
{
    const int kind = cfg_schema_record_kind(table, base);
    for (const cfg_field *f = table; f->key; f++) {
        if (!f->positive || !cfg_schema_carried(f, kind))
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
    const int kind = cfg_schema_record_kind(table, base);
    for (const cfg_field *f = table; f->key; f++)
        if (!cfg_schema_carried(f, kind) && cfg_map_get(node, f->key))
            return f;
    return NULL;
}

/* ---------------- JSON Schema ---------------- */

static void range(util_json *j, const cfg_field *f)
{
    if (f->min <= f->max && !f->derived) { /* (a derived field is never bound, so it has no range) */
        util_json_knum(j, "minimum", f->min);
        if (f->max < 1e300) /* (above: "at least", as the messages say) */
            util_json_knum(j, "maximum", f->max);
    }
}

/* "type": T, or [T, "null"] where the field may be null. */
static void type(util_json *j, const cfg_field *f, const char *t)
{
    util_json_key(j, "type");
    if (!f->nullable) {
        util_json_str(j, t);
        return;
    }
    util_json_arr_begin(j);
    util_json_str(j, t);
    util_json_str(j, "null");
    util_json_arr_end(j);
}

static void enum_values(util_json *j, const cfg_field *f)
{
    util_json_key(j, "enum");
    util_json_arr_begin(j);
    for (int i = 0; f->choices[i]; i++)
        util_json_str(j, f->choices[i]);
    if (f->nullable)
        util_json_null(j);
    util_json_arr_end(j);
}

static void object_schema(util_json *j, const cfg_field *table);

static void items_schema(util_json *j, const cfg_field *f)
{
    type(j, f, "array");
    if ((f->type == CFG_T_MAP_LIST || f->type == CFG_T_MAP_ARRAY) && !f->empty_ok)
        util_json_kint(j, "minItems", 1);
    util_json_kint(j, "maxItems", f->max_items);
    util_json_key(j, "items");
}

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
        type(j, f, "integer");
        range(j, f);
        break;
    case CFG_T_DOUBLE:
        type(j, f, "number");
        range(j, f);
        break;
    case CFG_T_BOOL: type(j, f, "boolean"); break;
    case CFG_T_ENUM: enum_values(j, f); break;
    case CFG_T_CHARS:
        if (f->choices) { /* one of the names, kept as text */
            enum_values(j, f);
            break;
        }
        type(j, f, "string");
        util_json_kint(j, "maxLength", f->max_items - 1);
        break;
    case CFG_T_STRING:
    case CFG_T_PATH: type(j, f, "string"); break;
    case CFG_T_MAP:
        util_json_key(j, f->nullable ? "anyOf" : "allOf");
        util_json_arr_begin(j);
        if (f->nullable)
            util_json_raw(j, "{\"type\": \"null\"}");
        object_schema(j, f->fields);
        util_json_arr_end(j);
        break;
    case CFG_T_MAP_LIST:
    case CFG_T_MAP_ARRAY:
        items_schema(j, f);
        object_schema(j, f->fields);
        break;
    case CFG_T_STRING_LIST:
        items_schema(j, f);
        util_json_raw(j, "{\"type\": \"string\"}");
        break;
    case CFG_T_STRING_MAP: {
        /* util_env_item's sizes: what a writer can have held */
        const util_env_item *e = NULL;
        type(j, f, "object");
        util_json_kint(j, "maxProperties", f->max_items);
        util_json_key(j, "propertyNames");
        util_json_obj_begin(j);
        util_json_kint(j, "maxLength", (long long)sizeof(e->key) - 1);
        util_json_obj_end(j);
        util_json_key(j, "additionalProperties");
        util_json_obj_begin(j);
        util_json_kstr(j, "type", "string");
        util_json_kint(j, "maxLength", (long long)sizeof(e->value) - 1);
        util_json_obj_end(j);
        break;
    }
    case CFG_T_DOUBLE_LIST:
    case CFG_T_INT_LIST:
        type(j, f, "array");
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

static bool required(const cfg_field *f);

/* A section is required when it holds a required key (the binder then asks for that key). */
static bool section_required(const cfg_field *table)
{
    for (const cfg_field *f = table; f->key; f++)
        if (required(f))
            return true;
    return false;
}

/* Required in every record: no default, not derived, not optional, not only some kinds'. */
static bool required(const cfg_field *f)
{
    if (f->def || f->derived || f->optional || f->kinds || f->type == CFG_T_DERIVED)
        return false;
    return f->type != CFG_T_MAP || section_required(f->fields);
}

static void key_list(util_json *j, const char *name, const cfg_field *table, int kind)
{
    util_json_key(j, name);
    util_json_arr_begin(j);
    for (const cfg_field *f = table; f->key; f++)
        if (f->kinds && (f->kinds & (1u << kind)) && (f->positive || (!f->def && !f->derived && !f->optional)))
            util_json_str(j, f->key);
    util_json_arr_end(j);
}

/* Per kind of record: the keys only some kinds carry may appear only there, and there the positive ones
 * and those without a default must be present (the positive ones at least 1). */
static void kind_rules(util_json *j, const cfg_field *table)
{
    const cfg_field *kind = discriminator(table);
    unsigned any = 0;
    for (const cfg_field *f = table; f->key; f++)
        any |= f->kinds;
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
        util_json_key(j, kind->key);
        util_json_obj_begin(j);
        util_json_kstr(j, "const", kind->choices[k]);
        util_json_obj_end(j);
        util_json_obj_end(j);
        util_json_obj_end(j);
        util_json_key(j, "then");
        util_json_obj_begin(j);
        key_list(j, "required", table, k);
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
        if (required(f))
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

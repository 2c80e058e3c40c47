/* cfg_schema's words: the parsers of scalars every binder shares, the names of types and ranges that
 * messages and the configuration reference print, and the lookup and Markdown generator over tables. */
#include "cfg_schema_text.h"

#include "../util/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

const char *cfg_schema_type_name(cfg_type t)
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
    case CFG_T_MAP_ARRAY: return "list of mappings";
    case CFG_T_STRING_LIST: return "list of strings";
    case CFG_T_STRING_MAP: return "mapping of strings";
    }
    return "?";
}

char *cfg_schema_join_path(const char *prefix, const char *key)
{
    return prefix && *prefix ? util_xasprintf("%s.%s", prefix, key) : util_xstrdup(key);
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

void cfg_schema_range_text(const cfg_field *f, char *buf, size_t len)
{
    char lo[32], hi[32];
    if (f->max >= 1e300)
        snprintf(buf, len, ">= %.24s", bound_text(f->min, lo, sizeof(lo)));
    else
        snprintf(buf, len, "in [%.24s, %.24s]", bound_text(f->min, lo, sizeof(lo)), bound_text(f->max, hi, sizeof(hi)));
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
        char *full = cfg_schema_join_path(prefix, f->key);
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
            cfg_schema_range_text(f, r, sizeof(r));
            snprintf(type, sizeof(type), "%s %s", cfg_schema_type_name(f->type), r);
        } else {
            snprintf(type, sizeof(type), "%s", cfg_schema_type_name(f->type));
        }
        fprintf(out, "| `%s` | %s | %s | %s | %s |\n", full, type, f->unit ? f->unit : "",
                f->def ? f->def : "**required**", f->doc ? f->doc : "");
        free(full);
    }
}

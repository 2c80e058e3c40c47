/* cfg_schema: tables that describe a C struct's YAML form (in the spirit of libcyaml), one binder that
 * fills the struct from a cfg_tree and rejects what the table does not allow, and a generator of the
 * README's configuration reference from the same tables — so docs, defaults and checks never drift. */
#ifndef VPSIM_CFG_SCHEMA_H
#define VPSIM_CFG_SCHEMA_H

#include "../util/util.h"
#include "../util/util_env.h"
#include "cfg_tree.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    CFG_T_INT,         /* long long stored in an int field (range checked) */
    CFG_T_DOUBLE,      /* double */
    CFG_T_BOOL,        /* bool: true | false */
    CFG_T_STRING,      /* char* (owned by the struct's owner; freed by cfg_schema_free) */
    CFG_T_PATH,        /* char*: resolved against the directory of the file it came from; must exist */
    CFG_T_ENUM,        /* int index into `choices` */
    CFG_T_MAP,         /* nested struct described by `fields` at `offset` */
    CFG_T_DOUBLE_LIST, /* double[max_items] at offset, count (int) at count_offset */
    CFG_T_INT_LIST,    /* int[max_items] at offset, count (int) at count_offset */
    CFG_T_INT64,       /* long long (range checked against min/max, exact up to 2^53) */
    CFG_T_CHARS,       /* char[max_items] inline: a string of at most max_items - 1 characters */
    CFG_T_MAP_LIST,    /* a list of structs described by `fields`: elem_size bytes each, allocated into the
                          pointer at offset (owner frees it), count (int) at count_offset; 1..max_items */
    CFG_T_DERIVED,     /* accepted and not bound: written for readers, recomputed on load */
    CFG_T_CUSTOM,      /* bound by `bind` */
    /* The JSON records' shapes (results, bench): */
    CFG_T_MAP_ARRAY,   /* structs described by `fields` inline at offset (max_items of elem_size bytes), count
                          (int) at count_offset */
    CFG_T_STRING_LIST, /* a list of strings: char *[] allocated into the pointer at offset, count (int) at
                          count_offset; at most max_items */
    CFG_T_STRING_MAP,  /* an object of string values under any keys (an environment block): util_env_item
                          [max_items] inline at offset, count (int) at count_offset */
} cfg_type;

typedef struct cfg_field cfg_field;

/* Where a write hook stands: the object whose table holds the field, and the objects around it (a row's
 * backend, the backend's record), for values that depend on more than their own object. */
typedef struct cfg_wctx cfg_wctx;
struct cfg_wctx {
    const void *base;    /* the object the table describes */
    const cfg_wctx *up;  /* the enclosing object's, NULL at the record's root */
};
struct cfg_field {
    const char *key;           /* NULL terminates a table */
    cfg_type type;
    size_t offset;
    const char *def;           /* default as YAML text; NULL = required (MAPs: children decide) */
    double min, max;           /* inclusive range for INT/DOUBLE and list items (ignored when min > max) */
    const char *const *choices; /* ENUM: NULL-terminated names; CHARS: the names the text may be */
    const cfg_field *fields;   /* MAP: child table */
    size_t count_offset;       /* lists: int count */
    int max_items;             /* lists: capacity */
    /* STRING: optional extra check of the value (0 = fine, else -1 with a reason). */
    int (*check)(const char *value, char *why, size_t why_len);
    size_t elem_size;          /* MAP_LIST, MAP_ARRAY: bytes per element; a derived MAP: the size of the struct
                                  its fields' offsets are in, so that a loaded value is checked (else accepted) */
    /* CUSTOM: bind the node into base + offset; 0, or -1 with err set. */
    int (*bind)(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err);
    /* MAP and MAP_LIST elements: checks across the struct's fields after they are bound (0, or -1 with
     * err set; `node` is the struct's mapping, `path` its dotted path). */
    int (*post)(void *obj, const cfg_node *node, const char *path, cfg_error *err);
    const char *unit;          /* documentation */
    const char *doc;           /* documentation: one sentence */
    /* Records vpsim writes as well as reads (plan JSON): one table makes the writer (cfg_schema_write),
     * the reader (cfg_schema_bind) and the JSON Schema (cfg_schema_json_schema). */
    unsigned kinds;   /* carried only where the record's "kind" (the table's ENUM field of that key) is one of
                         these, as bits 1u << kind; 0 = in every record */
    bool omit_zero;   /* written only when not 0 (a field most records leave at 0) */
    bool positive;    /* at least 1 wherever it is carried (cfg_schema_check_positive) */
    bool derived;     /* written from the struct for readers, checked and not bound on load (recomputed) */
    /* Writes the value (after its key) where the type alone cannot: CUSTOM, or a DERIVED key with no slot.
     * `slot` is w->base + offset. */
    void (*write)(util_json *j, const void *slot, const cfg_wctx *w);
    const char *json_schema; /* the JSON Schema of a CUSTOM or DERIVED value, as JSON text */
    /* JSON records: null, absent and empty values. */
    bool nullable;    /* may be null. Written null where null_when says so (a NULL STRING and a number that is
                         not finite are null anyway); null reads as NaN, -1 (INT, INT64), false, "" (CHARS),
                         NULL (STRING); a MAP or a list is left as it is */
    bool (*null_when)(const cfg_wctx *w);
    bool (*omit)(const cfg_wctx *w); /* left out of the record where this says so */
    bool external;    /* written by the record's producer after the table's fields (blocks only one mode
                         carries, written where their data lives); read, checked and described like any other */
    bool discriminator; /* the ENUM whose value is the record's kind for `kinds` (default: an ENUM "kind") */
    bool empty_ok;    /* MAP_LIST, MAP_ARRAY: [] is a value (otherwise a list needs an item) */
    bool optional;    /* may be absent, and then is left as it is (zero): a block or list whose absence
                         means something (no default to bind) */
    int digits;       /* DOUBLE: written with this many significant digits (%.Ng) instead of exactly */
};

/* Write the fields of `base` as key-value pairs of the current JSON object, in table order: each by its
 * type (a MAP as an object, a MAP_LIST or MAP_ARRAY as an array of objects), `write` where set, null where
 * `null_when` says, DERIVED without a `write` and `external` fields left out, and the `kinds`, `omit_zero`
 * and `omit` rules applied. */
void cfg_schema_write(util_json *j, const cfg_field *table, const void *base);
/* The JSON Schema (draft 2020-12) of the table's objects as one JSON object: types, ranges, enums, the
 * null where nullable, the required keys (no default, not derived, not optional), no other keys, and per
 * kind of record the keys it carries, the ones it needs and the ones that must be at least 1. */
void cfg_schema_json_schema(util_json *j, const cfg_field *table, const char *title, const char *id);
/* The record's kind (its discriminator's value, -1 without one), and whether field `f` is carried there. */
int cfg_schema_record_kind(const cfg_field *table, const void *base);
bool cfg_schema_carried(const cfg_field *f, int kind);
/* The first key present in `node` that this record's kind does not carry (`kinds`), or NULL. */
const cfg_field *cfg_schema_check_carried(const cfg_field *table, const void *base, const cfg_node *node);
/* The first `positive` field carried by this record and below 1, or NULL (`base` bound by `table`). */
const cfg_field *cfg_schema_check_positive(const cfg_field *table, const void *base);

/* Range helper for tables: CFG_RANGE(lo, hi). A number without one is held to [0, 0]: a record's figures
 * that may take any value say CFG_NO_RANGE. */
#define CFG_RANGE(lo, hi) .min = (lo), .max = (hi)
#define CFG_NO_RANGE .min = 1, .max = 0

/* Fill `base` from `node` (must be a mapping) according to `table`. Absent keys take their defaults;
 * absent required keys, unknown keys, wrong types and out-of-range values are errors at the node.
 * `path` is the dotted prefix used in messages ("" at the root). */
int cfg_schema_bind(const cfg_field *table, const cfg_node *node, void *base, const char *path, cfg_error *err);
/* The same for a JSON record vpsim writes (plan, results, bench): strings must be JSON strings (quoted),
 * numbers and booleans bare, null only where `nullable`, derived values checked by type; a field that only
 * some kinds carry (`kinds`) and has no default is required where it is carried. */
int cfg_schema_bind_json(const cfg_field *table, const cfg_node *node, void *base, const char *path, cfg_error *err);

/* Free what the binder allocated in `base`: strings, string lists, lists of structs (and theirs). */
void cfg_schema_free(const cfg_field *table, void *base);

/* Look up a field by dotted path; NULL if there is none. */
const cfg_field *cfg_schema_find(const cfg_field *table, const char *dotted);

/* Markdown table rows documenting `table` (key, type, unit, default, meaning). */
void cfg_schema_write_markdown(FILE *out, const cfg_field *table, const char *prefix);

/* Parse a scalar as an integer / double with the same strictness as the binder. */
bool cfg_parse_int(const char *s, long long *out);
bool cfg_parse_double(const char *s, double *out);

/* The enum index of `name` in `choices`, or -1. */
int cfg_enum_index(const char *const *choices, const char *name);
/* "a, b, c" into buf. */
const char *cfg_enum_list(const char *const *choices, char *buf, size_t len);

#endif

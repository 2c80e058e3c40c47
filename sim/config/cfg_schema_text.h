/* cfg_schema_text: the names of types and ranges in cfg_schema's messages and docs (cfg_schema_text.c). */
#ifndef VPSIM_CFG_SCHEMA_TEXT_H
#define VPSIM_CFG_SCHEMA_TEXT_H

#include "cfg_schema.h"

#include <stddef.h>

/* "integer", "list of mappings", ... as the configuration reference and the messages say. */
const char *cfg_schema_type_name(cfg_type t);
/* "prefix.key" (malloc'ed), or "key" at the root. */
char *cfg_schema_join_path(const char *prefix, const char *key);
/* "in [lo, hi]" or ">= lo": a field's range in words. */
void cfg_schema_range_text(const cfg_field *f, char *buf, size_t len);

#endif

/* cfg_provenance: where a system-file value comes from, read off the file itself.
 *
 * Shipped system files tag every value with a comment beside it ("# assumed: ...", "# spec: ...",
 * "# measured: ..."; configs/systems/ *.yaml). The model's sensitivity list ranks parameters by how much
 * the answer moves with them; it names each one's tag so a user sees at once which of the decisive
 * numbers are estimates to replace with a measurement. */
#ifndef VPSIM_CFG_PROVENANCE_H
#define VPSIM_CFG_PROVENANCE_H

#include "cfg_tree.h"

#include "../util/util.h"

#include <stddef.h>

typedef struct cfg_prov cfg_prov;

/* Read `path` (a YAML file); NULL when it cannot be read or parsed (every lookup then says "unknown"). */
cfg_prov *cfg_prov_open(const char *path);
void cfg_prov_close(cfg_prov *p);

/* The provenance of the value at dotted key `dotted` whose loaded value is `loaded`:
 * - the comment's first word when it is a known tag (spec, measured, assumed, calibrated, nccl, unused,
 *   self-test),
 *   else "noted" (a comment without a tag) or "untagged" (no comment);
 * - "default" when the file does not set the key (the schema default applies);
 * - "--set" when the file's value differs from the loaded one (a --set override replaced it).
 * `note` (may be NULL) receives the comment's text. Returns `tag`. */
const char *cfg_prov_lookup(const cfg_prov *p, const char *dotted, double loaded, char *tag, size_t tag_len,
                            char *note, size_t note_len);

/* For cfg_emit_yaml_commented (ctx: a cfg_prov): the comment beside node `n` in the file `p` read,
 * when `n` came from that file; *more gets the comment-only lines that continued it, verbatim. */
const char *cfg_prov_node_comment(const cfg_node *n, const char **more, void *ctx);
/* The comment lines that open the file (its header), verbatim. */
void cfg_prov_header(const cfg_prov *p, util_buf *out);

#endif

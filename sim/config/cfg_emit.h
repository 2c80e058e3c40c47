/* cfg_emit: a cfg_tree document written back as YAML, so a command can change a loaded file (e.g.
 * calibrate replacing a system file's measured tables) and write a whole file again instead of
 * splicing text. Comments are not in the tree; cfg_emit_yaml_commented puts back those a source file
 * had beside its values (the provenance tags of system files). */
#ifndef VPSIM_CFG_EMIT_H
#define VPSIM_CFG_EMIT_H

#include "cfg_tree.h"

#include "../util/util.h"

/* Append `root` as block YAML: maps as `key: value` lines indented by two per level, sequences of
 * plain scalars in flow style ([1, 2]), other sequences as `-` entries. A scalar stays plain when it
 * was plain and reads back the same; otherwise it is double-quoted (so a quoted "1" stays a string).
 * Loading the text with cfg_doc_load_text gives the same tree (positions aside). */
void cfg_emit_yaml(util_buf *out, const cfg_node *root);

/* The comment text for a node (without '#'), or NULL; `more` (may be NULL) receives continuation lines
 * to write verbatim after it (comment-only lines that followed the node in its file). */
typedef const char *(*cfg_emit_comment_fn)(const cfg_node *n, const char **more, void *ctx);

/* cfg_emit_yaml, and after each line that ends a value (a scalar, a flow list, or a key that opens a
 * block) the comment `comment` gives for that value's node, as "  # text". */
void cfg_emit_yaml_commented(util_buf *out, const cfg_node *root, cfg_emit_comment_fn comment, void *ctx);

#endif

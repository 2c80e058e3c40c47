/* results_json_blocks: the tables of the blocks only a run or an import writes into a results record
 * (results_json_blocks.c), for results_json.c's table of the whole record. */
#ifndef VPSIM_RESULTS_JSON_BLOCKS_H
#define VPSIM_RESULTS_JSON_BLOCKS_H

#include "../config/cfg_schema.h"
#include "results_doc.h"

extern const cfg_field results_measured_fields[];   /* "measured" (results_measured) */
extern const cfg_field results_comparison_fields[]; /* "model_comparison" (results_comparison) */
extern const cfg_field results_import_fields[];     /* "import" (results_import) */

/* After binding: what the blocks say by being there or not (class costs, the whole-cycle comparison,
 * the import's model check, a measured clock skew). */
void results_json_blocks_done(results_doc *d, const cfg_node *root);

#endif

/* JSON fixtures for the command tests: a command's JSON output as a document, and numbers read from it,
 * asserting (Criterion) on the way. */
#ifndef VPSIM_TH_JSON_H
#define VPSIM_TH_JSON_H

#include "../../sim/config/cfg_tree.h"
#include "test_helpers.h"

/* The command's standard output parsed as JSON (freed by the caller with cfg_doc_free), after asserting
 * its exit status 0; frees r. */
cfg_doc *th_json_of(th_result r);
/* The number at `path` below n (cfg_node_at: dotted keys), asserting it is there. */
double th_json_num(const cfg_node *n, const char *path);

#endif

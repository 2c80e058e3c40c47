/* plan_json: the plan's JSON form ("vpsim.plan/1"), documented in README "Plan JSON". */
#ifndef VPSIM_PLAN_JSON_H
#define VPSIM_PLAN_JSON_H

#include "../config/cfg_tree.h"
#include "../util/util.h"
#include "plan.h"

void plan_json_write(util_json *j, const plan *p);
/* The JSON Schema of that form, from the same table that writes and reads it (`vpsim schema plan`). */
void plan_json_schema(util_json *j);
/* Load a plan written by plan_json_write (possibly edited). Errors: file:line:col. */
int plan_json_load(const char *path, plan *out, cfg_error *err);
/* A loaded plan describes the cycle of scenario `sc`: its speculation (none, or steps, topk and
 * num_draft_tokens), TP, batch and the target model's layer count agree with the scenario's, since the
 * model and the report take the acceptance and the system from the scenario and the ops from the plan.
 * 0, or -1 with the first disagreement (the setting and both values) in `why`. */
int plan_json_matches(const plan *p, const cfg_scenario *sc, char *why, size_t len);

#endif

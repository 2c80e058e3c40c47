/* plan_json: the plan's JSON form ("vpsim.plan/1"), documented in README "Plan JSON". */
#ifndef VPSIM_PLAN_JSON_H
#define VPSIM_PLAN_JSON_H

#include "../config/cfg_tree.h"
#include "../util/util.h"
#include "plan.h"

void plan_json_write(util_json *j, const plan *p);
/* Load a plan written by plan_json_write (possibly edited). Errors: file:line:col. */
int plan_json_load(const char *path, plan *out, cfg_error *err);

#endif

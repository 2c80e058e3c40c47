#include "results.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void results_cycle_free(results_cycle *r)
{
    free(r->op_us);
    r->op_us = NULL;
    r->n_op_us = 0;
    free(r->ops);
    r->ops = NULL;
    r->n_ops = 0;
}

void results_cycle_set_cycle(results_cycle *r, double cycle_ms)
{
    r->cycle_ms = cycle_ms;
    r->tok_per_s = cycle_ms > 0 ? r->tokens_per_cycle / (cycle_ms / 1000.0) : 0.0;
    r->tpot_ms = r->tokens_per_cycle > 0 ? cycle_ms / r->tokens_per_cycle : 0.0;
}

void results_cycle_finish(results_cycle *r)
{
    r->verify_ms = r->draft_steps_ms = r->draft_extend_ms = 0.0;
    memset(r->verify_class_ms, 0, sizeof(r->verify_class_ms));
    double phases_ms = 0.0;
    for (int i = 0; i < r->n_phases; i++) {
        const results_phase *ph = &r->phases[i];
        phases_ms += ph->ms;
        switch (ph->kind) {
        case PLAN_PHASE_VERIFY:
        case PLAN_PHASE_DECODE:
            r->verify_ms += ph->ms;
            for (int c = 0; c < PLAN_CLASS_COUNT; c++)
                r->verify_class_ms[c] += ph->class_ms[c];
            break;
        case PLAN_PHASE_DRAFT: r->draft_steps_ms += ph->ms; break;
        case PLAN_PHASE_DRAFT_EXTEND: r->draft_extend_ms += ph->ms; break;
        }
    }
    r->draft_ms = r->draft_steps_ms + r->draft_extend_ms;
    results_cycle_set_cycle(r, phases_ms + r->host_ms);
    r->accepted_per_cycle = r->tokens_per_cycle > 1 ? r->tokens_per_cycle - 1.0 : 0.0;
}

void results_warn(results_cycle *r, const char *code, const char *fmt, ...)
{
    for (int i = 0; i < r->n_warnings; i++)
        if (!strcmp(r->warnings[i].code, code))
            return;
    if (r->n_warnings == RESULTS_MAX_WARNINGS) {
        results_warning *last = &r->warnings[RESULTS_MAX_WARNINGS - 1];
        snprintf(last->code, sizeof(last->code), "more");
        snprintf(last->text, sizeof(last->text), "more warnings than fit in one result");
        return;
    }
    results_warning *w = &r->warnings[r->n_warnings++];
    snprintf(w->code, sizeof(w->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->text, sizeof(w->text), fmt, ap);
    va_end(ap);
}

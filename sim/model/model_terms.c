/* model_terms: the named terms of a formula, recorded for --explain (model.h says how the fast path
 * skips them). Its own file, below every formula that records terms. */
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void model_term_record(model_terms *t, const char *name, double value, const char *unit, const char *fmt, ...)
{
    if (!t || t->n >= MODEL_MAX_TERMS)
        return;
    model_term *x = &t->t[t->n++];
    snprintf(x->name, sizeof(x->name), "%s", name);
    x->value = value;
    snprintf(x->unit, sizeof(x->unit), "%s", unit ? unit : "");
    x->note[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        const int len = vsnprintf(x->note, sizeof(x->note), fmt, ap);
        va_end(ap);
        if (len >= (int)sizeof(x->note)) { /* too long: end at a word with an ellipsis, never mid-word */
            char *cut = strrchr(x->note, ' ');
            snprintf(cut && cut > x->note + sizeof(x->note) / 2 ? cut : x->note + sizeof(x->note) - 5, 5, " ...");
        }
    }
}

double model_term_get(const model_terms *t, const char *name)
{
    for (int i = 0; t && i < t->n; i++)
        if (strcmp(t->t[i].name, name) == 0)
            return t->t[i].value;
    return NAN;
}

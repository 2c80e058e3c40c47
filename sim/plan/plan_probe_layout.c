/* The groups of the probe plan (plan_probe.h), read back from its op names: the one place, with
 * plan_probe.c, that knows how the probe lays its points out. */
#include "plan_probe.h"

#include <string.h>

#define NB_PREFIX "probe.nb."

static bool is_neighbour(const plan_op *op) { return strncmp(op->name, NB_PREFIX, strlen(NB_PREFIX)) == 0; }

/* The class tag of a neighbour op's name ("probe.nb.<class>.<i>"): its length after the prefix. */
static size_t tag_len(const plan_op *op)
{
    const char *t = op->name + strlen(NB_PREFIX), *dot = strchr(t, '.');
    return dot ? (size_t)(dot - t) : strlen(t);
}

int plan_probe_layout(const plan *p, plan_probe_group *g, int max)
{
    if (p->n_phases != 1 || max < 1)
        return -1;
    const plan_phase *ph = &p->phases[0];
    const int last = ph->n_ops - 1; /* the flush op */
    if (last < PLAN_PROBE_EMPTY)
        return -1;
    int n = 0, base = -1;
    const plan_op *base_op = NULL;
    g[n++] = (plan_probe_group){.first = 0, .count = PLAN_PROBE_EMPTY, .unit = 1, .point = -1, .base = -1};
    for (int i = PLAN_PROBE_EMPTY; i < last;) {
        if (n == max)
            return -1;
        const plan_op *op = &ph->ops[i];
        plan_probe_group x = {.first = i, .unit = 1, .point = i, .base = -1};
        if (is_neighbour(op) && i + 1 < last && is_neighbour(&ph->ops[i + 1])) {
            x.point = -1; /* a baseline: the neighbour alone */
            base = n;
            base_op = op;
        } else if (is_neighbour(op)) {
            if (!base_op || tag_len(op) != tag_len(base_op) ||
                strncmp(op->name, base_op->name, strlen(NB_PREFIX) + tag_len(op)) != 0)
                return -1; /* a pair before its class's baseline */
            x.unit = 2;
            x.point = i + 1;
            x.base = base;
        }
        x.count = PLAN_PROBE_REPEAT * x.unit;
        if (i + x.count > last)
            return -1;
        for (int j = 0; j < x.count; j++) /* every unit: the neighbour (pairs) then a point op, or alike */
            if (is_neighbour(&ph->ops[i + j]) != (x.unit == 2 ? j % 2 == 0 : x.point < 0))
                return -1;
        g[n++] = x;
        i += x.count;
    }
    return n;
}

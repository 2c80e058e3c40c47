/* Shape classes of a plan's ops (plan.h, plan_index_shapes): computed once when a plan is made, so that
 * every pricing of the plan (the model's evaluation of each sweep point, sensitivity, the rests test)
 * prices a few dozen shapes instead of walking 1,379 ops' fields.
 *
 * Two ops are of one class when every field a cost reads agrees: the kind, and for element-wise ops the
 * name (the silu_mul law class is by name); then every field from `m` to the struct's end (shapes,
 * dtypes, the collective's count and payload, the derived bytes and flops) -- never the name otherwise,
 * the layer, stream or micro-batch. Those trailing fields are compared as bytes: their padding is zero
 * (plan_phase_add_op clears every op, copies keep it), and were it not, the bytes would differ and an op
 * would only get a class of its own: equal bytes always mean equal fields. */
#include "plan.h"

#include "../util/util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(offsetof(plan_op, m) > offsetof(plan_op, micro_batch) &&
                   offsetof(plan_op, bytes_written) + sizeof(double) == sizeof(plan_op),
               "plan_op_same_shape compares plan_op from `m` to its end: keep the shape fields there");

bool plan_op_same_shape(const plan_op *a, const plan_op *b)
{
    return a->kind == b->kind && memcmp(&a->m, &b->m, sizeof(plan_op) - offsetof(plan_op, m)) == 0 &&
           (a->kind != PLAN_OP_ELEMENTWISE || strcmp(a->name, b->name) == 0);
}

static unsigned long long shape_hash(const plan_op *op)
{
    /* Shapes are multiples of large powers of two, so their low bits say little: mix and take high bits. */
    unsigned long long h = (unsigned long long)op->kind;
    h = (h ^ (unsigned long long)op->m) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (unsigned long long)op->n) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (unsigned long long)op->k) * 0x94D049BB133111EBull;
    h = (h ^ (unsigned long long)op->kv_len ^ ((unsigned long long)op->batch << 40)) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (unsigned long long)op->payload_bytes ^ (unsigned long long)op->bytes_read) * 0xBF58476D1CE4E5B9ull;
    return h;
}

void plan_index_shapes(plan *p)
{
    free(p->shapes);
    p->shapes = NULL;
    p->n_shapes = 0;
    int total = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        total += p->phases[ph].n_ops;
    /* An open-addressed table of at least twice the ops (a power of two): never full, so a probe ends. */
    unsigned size = 64;
    while (size < 2u * (unsigned)total)
        size *= 2;
    int *slot = util_xmalloc(size * sizeof(int));
    for (unsigned i = 0; i < size; i++)
        slot[i] = -1;
    int cap = 64;
    p->shapes = util_xmalloc((size_t)cap * sizeof(plan_op));
    for (int ph = 0; ph < p->n_phases; ph++) {
        plan_phase *phase = &p->phases[ph];
        free(phase->shape);
        phase->shape = util_xmalloc(((size_t)phase->n_ops + 1) * sizeof(int));
        for (int i = 0; i < phase->n_ops; i++) {
            const plan_op *op = &phase->ops[i];
            unsigned h = (unsigned)(shape_hash(op) >> 32) & (size - 1);
            while (slot[h] >= 0 && !plan_op_same_shape(&p->shapes[slot[h]], op))
                h = (h + 1) & (size - 1);
            if (slot[h] < 0) {
                if (p->n_shapes == cap) {
                    cap *= 2;
                    p->shapes = util_xrealloc(p->shapes, (size_t)cap * sizeof(plan_op));
                }
                p->shapes[p->n_shapes] = *op;
                slot[h] = p->n_shapes++;
            }
            phase->shape[i] = slot[h];
        }
    }
    free(slot);
}

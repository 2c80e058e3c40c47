/* libFuzzer harness: the plan JSON loader (`--plan FILE`, a hand-editable file), then the devices'
 * shape rules and checked sizes on every op it accepts, so a plan that loads can never make a device
 * divide by zero or wrap a size. */
#include "../../sim/exec/dev_sizes.h"
#include "../../sim/plan/plan_json.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    plan p;
    cfg_error err;
    if (plan_json_load(fuzz_memfd_path(data, size), &p, &err) != 0)
        return 0;
    char why[512];
    for (int ph = 0; ph < p.n_phases; ph++)
        for (int i = 0; i < p.phases[ph].n_ops; i++) {
            const plan_op *op = &p.phases[ph].ops[i];
            if (dev_op_check(op, p.phases[ph].name, why, sizeof(why)) == 0) {
                dev_size s = dev_size_prod(op->m, op->n, op->k, op->batch);
                (void)dev_size_align(s, 256);
            }
        }
    plan_free(&p);
    return 0;
}

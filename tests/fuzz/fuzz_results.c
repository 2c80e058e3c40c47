/* libFuzzer harness: the results JSON that `vpsim calibrate --results` reads, through the command
 * itself (against the hand-written two-op plan of tests/data/plan_hand.json; the seeds are results
 * of that plan, so mutations reach the per-op parsing and the merging, not only the op-count check). */
#include "../../sim/cli/cli.h"
#include "fuzz_util.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char plan_path[512], base_path[512], out_path[512];
    if (!plan_path[0]) {
        snprintf(plan_path, sizeof(plan_path), "%s/tests/data/plan_hand.json", FUZZ_ROOT);
        /* calibrate writes a whole system file: this one is its base. */
        snprintf(base_path, sizeof(base_path), "%s/configs/systems/h200-1x.yaml", FUZZ_ROOT);
        snprintf(out_path, sizeof(out_path), "%s/measured.yaml", fuzz_tmpdir());
    }
    char results[64];
    snprintf(results, sizeof(results), "%s", fuzz_memfd_path(data, size));
    char *argv[] = {"calibrate", "--plan", plan_path, "--results", results, "--base", base_path, "--out", out_path, NULL};
    (void)cmd_calibrate(9, argv);
    return 0;
}

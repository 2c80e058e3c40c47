/* libFuzzer harness: the variants file of `vpsim compare` (cfg_tree, its schema tables, the `set`
 * strings checked like --set). A loaded file is also walked, so a field the binder left half-filled
 * shows up under ASan. */
#include "../../sim/sweep/compare.h"
#include "fuzz_util.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    compare_file f;
    cfg_error err;
    if (compare_load(fuzz_memfd_path(data, size), &f, &err) == 0) {
        size_t sum = 0;
        for (int i = 0; i < f.n; i++) {
            sum += strlen(f.v[i].name) + (f.v[i].note ? strlen(f.v[i].note) : 0);
            for (int k = 0; k < f.v[i].set.n; k++)
                sum += strlen(f.v[i].set.v[k]);
        }
        if (f.baseline < 0 || f.baseline >= f.n || sum == (size_t)-1)
            __builtin_trap(); /* a loaded file always names a baseline among its variants */
        compare_file_free(&f);
    }
    return 0;
}

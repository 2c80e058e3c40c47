/* libFuzzer harness: the saved bench-allreduce result that `vpsim bench-allreduce --from FILE` reads (a
 * hand-editable file), then every rendering of what it accepts (table, CSV, JSON), so that a result that
 * loads holds only bounded numbers (checked here) and renders without a memory error. */
#include "../../sim/exec/exec_bench.h"
#include "../../sim/util/util.h"
#include "fuzz_util.h"

#include <math.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the loader promises of every accepted number (exec_bench_load.c's bounds). */
static void check_bounds(const exec_bench_result *r)
{
    if (r->ranks < 1 || r->ranks > 4096 || r->elem_bytes < 1 || r->elem_bytes > 16 || r->iters < 1 || r->warmup < 0)
        abort();
    for (int k = 0; k < r->n_backends; k++)
        for (int i = 0; i < r->backends[k].n_rows; i++) {
            const exec_bench_row *w = &r->backends[k].rows[i];
            if (!(w->time_us >= 0 && w->time_us <= 1e9) || !isfinite(w->algbw) || !isfinite(w->busbw) || w->bytes < 1)
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    exec_bench_result r;
    char err[1024];
    util_inputs_forget(); /* one command per input: the loader notes each file it reads */
    if (exec_bench_load(fuzz_memfd_path(data, size), &r, err, sizeof(err)) != 0)
        return 0;
    check_bounds(&r);
    util_buf t = {0};
    exec_bench_table(&t, &r);
    exec_bench_csv(&t, &r);
    util_buf_free(&t);
    util_json j;
    util_json_init(&j, true);
    char *argv[] = {"bench-allreduce", NULL};
    exec_bench_json(&j, &r, 1, argv);
    util_buf_free(&j.out);
    exec_bench_result_free(&r);
    return 0;
}

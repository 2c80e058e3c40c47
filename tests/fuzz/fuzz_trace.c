/* libFuzzer harness: the server-trace reader (`vpsim import-trace TRACE`), then the kernel map, the cycle
 * finder and the one-rank breakdown on whatever it accepts: a trace either loads with kernels in time
 * order and every kernel's phase in range, or is refused with a message naming the file; never a crash,
 * a hang or a leak. */
#include "../../sim/trace/trace.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static trace_map *map;
    trace_error err;
    if (!map && !(map = trace_map_load(FUZZ_ROOT "/configs/trace-kernels.yaml", NULL, &err)))
        abort();
    const char *path = fuzz_memfd_path(data, size);
    trace_rank r;
    if (trace_read(path, trace_map_keep, map, &r, &err) != 0) {
        if (!strstr(err.msg, path))
            abort(); /* every refusal names the file */
        trace_rank_free(&r);
        return 0;
    }
    trace_map_apply(map, &r);
    const trace_kernel *k = r.kernels.data;
    for (size_t i = 1; i < r.kernels.count; i++)
        if (k[i].ts < k[i - 1].ts)
            abort();
    if (trace_find_cycles(map, &r, &err) == 0) {
        for (size_t i = 0; i < r.kernels.count; i++)
            if (k[i].phase < -1 || k[i].phase >= (int)r.phases.count)
                abort();
        trace_summary s;
        if (trace_summarize(&r, 1, &s, &err) == 0 && !(s.cycle_ms >= 0))
            abort();
        trace_summary_free(&s);
    }
    trace_rank_free(&r);
    return 0;
}

/* Chrome trace JSON (chrome://tracing, Perfetto): one process per rank, one thread per stream, one
 * complete event ("ph": "X") per op of the last instrumented pass. */
#include "report.h"

void report_trace_json(util_buf *out, const plan *p, int ranks, const double *start_us, const double *dur_us)
{
    util_json j;
    util_json_init(&j, false);
    util_json_obj_begin(&j);
    util_json_kstr(&j, "displayTimeUnit", "ms");
    util_json_key(&j, "traceEvents");
    util_json_arr_begin(&j);
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    for (int r = 0; r < ranks; r++) {
        char name[32];
        snprintf(name, sizeof(name), "rank %d", r);
        util_json_obj_begin(&j);
        util_json_kstr(&j, "name", "process_name");
        util_json_kstr(&j, "ph", "M");
        util_json_kint(&j, "pid", r);
        util_json_key(&j, "args");
        util_json_obj_begin(&j);
        util_json_kstr(&j, "name", name);
        util_json_obj_end(&j);
        util_json_obj_end(&j);
        for (int s = 0; s < PLAN_STREAM_COUNT; s++) {
            util_json_obj_begin(&j);
            util_json_kstr(&j, "name", "thread_name");
            util_json_kstr(&j, "ph", "M");
            util_json_kint(&j, "pid", r);
            util_json_kint(&j, "tid", s);
            util_json_key(&j, "args");
            util_json_obj_begin(&j);
            util_json_kstr(&j, "name", plan_stream_names[s]);
            util_json_obj_end(&j);
            util_json_obj_end(&j);
        }
        int flat = 0;
        for (int ph = 0; ph < p->n_phases; ph++)
            for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
                const plan_op *op = &p->phases[ph].ops[i];
                util_json_obj_begin(&j);
                util_json_kstr(&j, "name", op->name);
                util_json_kstr(&j, "cat", plan_op_kind_names[op->kind]);
                util_json_kstr(&j, "ph", "X");
                util_json_knum(&j, "ts", start_us[(size_t)r * n_ops + flat]);
                util_json_knum(&j, "dur", dur_us[(size_t)r * n_ops + flat]);
                util_json_kint(&j, "pid", r);
                util_json_kint(&j, "tid", op->stream);
                util_json_key(&j, "args");
                util_json_obj_begin(&j);
                util_json_kstr(&j, "phase", p->phases[ph].name);
                util_json_kint(&j, "layer", op->layer);
                util_json_kint(&j, "index", flat);
                util_json_obj_end(&j);
                util_json_obj_end(&j);
            }
    }
    util_json_arr_end(&j);
    util_json_obj_end(&j);
    util_buf_printf(&j.out, "\n");
    *out = j.out;
}

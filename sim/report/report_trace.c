/* Chrome trace JSON (chrome://tracing, Perfetto): one process per rank, one thread per stream, one
 * complete event ("ph": "X") per op. `vpsim run --trace` writes the ops of its last instrumented pass;
 * `vpsim import-trace --trace` a server's kernels through the same pieces, so the two open alike. */
#include "report.h"

void report_trace_begin(util_json *j)
{
    util_json_init(j, false);
    util_json_obj_begin(j);
    util_json_kstr(j, "displayTimeUnit", "ms");
    util_json_key(j, "traceEvents");
    util_json_arr_begin(j);
}

static void meta(util_json *j, const char *what, int pid, int tid, const char *name)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "name", what);
    util_json_kstr(j, "ph", "M");
    util_json_kint(j, "pid", pid);
    if (tid >= 0)
        util_json_kint(j, "tid", tid);
    util_json_key(j, "args");
    util_json_obj_begin(j);
    util_json_kstr(j, "name", name);
    util_json_obj_end(j);
    util_json_obj_end(j);
}

void report_trace_process(util_json *j, int pid, const char *name, const char *const *threads, int n_threads)
{
    meta(j, "process_name", pid, -1, name);
    for (int t = 0; t < n_threads; t++)
        meta(j, "thread_name", pid, t, threads[t]);
}

void report_trace_event(util_json *j, const report_trace_ev *e)
{
    util_json_obj_begin(j);
    util_json_kstr(j, "name", e->name);
    util_json_kstr(j, "cat", e->cat);
    util_json_kstr(j, "ph", "X");
    util_json_knum(j, "ts", e->ts);
    util_json_knum(j, "dur", e->dur);
    util_json_kint(j, "pid", e->pid);
    util_json_kint(j, "tid", e->tid);
    util_json_key(j, "args");
    util_json_obj_begin(j);
    util_json_kstr(j, "phase", e->phase);
    if (e->layer >= -1)
        util_json_kint(j, "layer", e->layer);
    util_json_kint(j, "index", e->index);
    util_json_obj_end(j);
    util_json_obj_end(j);
}

void report_trace_end(util_json *j, util_buf *out)
{
    util_json_arr_end(j);
    util_json_obj_end(j);
    util_buf_printf(&j->out, "\n");
    *out = j->out;
}

void report_trace_json(util_buf *out, const plan *p, int ranks, const double *start_us, const double *dur_us)
{
    util_json j;
    report_trace_begin(&j);
    int n_ops = 0;
    for (int ph = 0; ph < p->n_phases; ph++)
        n_ops += p->phases[ph].n_ops;
    for (int r = 0; r < ranks; r++) {
        char name[32];
        snprintf(name, sizeof(name), "rank %d", r);
        report_trace_process(&j, r, name, plan_stream_names, PLAN_STREAM_COUNT);
        int flat = 0;
        for (int ph = 0; ph < p->n_phases; ph++)
            for (int i = 0; i < p->phases[ph].n_ops; i++, flat++) {
                const plan_op *op = &p->phases[ph].ops[i];
                const report_trace_ev e = {op->name, plan_op_kind_names[op->kind], start_us[(size_t)r * n_ops + flat],
                                           dur_us[(size_t)r * n_ops + flat], r, op->stream, p->phases[ph].name,
                                           op->layer, flat};
                report_trace_event(&j, &e);
            }
    }
    report_trace_end(&j, out);
}

/* The plain parts of the allreduce benchmark: size sweeps, bandwidths, the nccl-tests-style table and
 * CSV (see exec_bench.h; the JSON record is exec_bench_json.c's). No MPI, no CUDA: unit-tested directly. */
#include "exec_bench.h"

#include "../comm/comm_custom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double comm_busbw(double algbw_gbps, int ranks)
{
    return ranks > 0 ? algbw_gbps * 2.0 * (ranks - 1) / ranks : 0.0;
}

int exec_bench_kind(const exec_bench_result *r)
{
    return plan_op_is_collective((plan_op_kind)r->collective) ? r->collective : PLAN_OP_ALLREDUCE;
}

double exec_bench_busbw(int kind, double algbw_gbps, int ranks)
{
    if (ranks < 1)
        return 0.0;
    switch (kind) {
    case PLAN_OP_ALLGATHER: return algbw_gbps * (ranks - 1);
    case PLAN_OP_REDUCE_SCATTER:
    case PLAN_OP_ALLTOALL: return algbw_gbps * (ranks - 1) / ranks;
    default: return comm_busbw(algbw_gbps, ranks);
    }
}

const char *exec_bench_busbw_definition(int kind)
{
    switch (kind) {
    case PLAN_OP_ALLGATHER: return "algbw x (n-1) (nccl-tests: n x size gathered, x (n-1)/n)";
    case PLAN_OP_REDUCE_SCATTER:
    case PLAN_OP_ALLTOALL: return "algbw x (n-1)/n (nccl-tests)";
    default: return "algbw x 2(n-1)/n (nccl-tests)";
    }
}

const char *exec_bench_redop(int kind)
{
    return kind == PLAN_OP_ALLGATHER || kind == PLAN_OP_ALLTOALL ? "none" : "sum";
}

double comm_algbw(long long bytes, double us) { return us > 0 ? (double)bytes / (us * 1e3) : 0.0; }

int exec_bench_add_size(long long *sizes, int n, int cap, long long bytes)
{
    int i = 0;
    while (i < n && sizes[i] < bytes)
        i++;
    if ((i < n && sizes[i] == bytes) || n >= cap)
        return n;
    memmove(sizes + i + 1, sizes + i, (size_t)(n - i) * sizeof(*sizes));
    sizes[i] = bytes;
    return n + 1;
}

int exec_bench_sizes(long long min, long long max, long long factor, size_t elem_bytes, long long *out, int cap,
                     char *why, size_t why_len)
{
    if (min < 1 || max < min) {
        snprintf(why, why_len, "sizes: need 1 <= -b MIN <= -e MAX (got %lld, %lld)", min, max);
        return -1;
    }
    if (factor < 2 && max > min) {
        snprintf(why, why_len, "sizes: -f FACTOR must be at least 2 (got %lld)", factor);
        return -1;
    }
    int n = 0;
    for (long long s = min; s <= max; s = s > max / factor ? max + 1 : s * factor) {
        long long b = s / (long long)elem_bytes * (long long)elem_bytes;
        if (b <= 0)
            continue;
        if (n == cap) {
            snprintf(why, why_len, "sizes: the sweep %lld..%lld x%lld has more than %d sizes", min, max, factor, cap);
            return -1;
        }
        n = exec_bench_add_size(out, n, cap, b);
        if (factor < 2)
            break;
    }
    if (n == 0) {
        snprintf(why, why_len, "sizes: no size in %lld..%lld holds one %zu-byte element", min, max, elem_bytes);
        return -1;
    }
    return n;
}

double exec_bench_avg_busbw(const exec_bench_backend *b)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < b->n_rows; i++) {
        sum += b->rows[i].busbw;
        n++;
    }
    return n ? sum / n : 0.0;
}

static void fmt_time(char *buf, size_t len, double us)
{
    if (us >= 1e5)
        snprintf(buf, len, "%.0f", us);
    else
        snprintf(buf, len, "%.2f", us);
}

void exec_bench_table(util_buf *o, const exec_bench_result *r)
{
    const int kind = exec_bench_kind(r);
    util_buf_printf(o, "# vpsim bench-allreduce: collective %s, %d rank%s, device %s, type %s, op %s, %d iters, %d "
                       "warm-up%s%s%s\n",
                    plan_op_kind_names[kind], r->ranks, r->ranks == 1 ? "" : "s", r->device, r->type,
                    exec_bench_redop(kind),
                    r->iters, r->warmup,
                    r->graph_requested ? ", CUDA graphs requested (each backend says how it was timed)" : ", eager",
                    r->check ? ", --check" : "",
                    r->p2p == COMM_P2P_SYSMEM ? ", --p2p sysmem (custom backends: exchange buffers and flags in pinned "
                                                "host memory)"
                                              : "");
    util_buf_printf(o, "# time: per call, max over ranks; size: sent per rank; algbw = size / time; busbw = %s\n",
                    exec_bench_busbw_definition(kind));
    if (r->model_system[0])
        util_buf_printf(o, "# model: per call on system %s (%s); error = (model - time) / time\n", r->model_system,
                        r->model_note);
    if (r->command && r->command[0])
        util_buf_printf(o, "# measured by: %s\n", r->command);
    if (r->virtual_ranks)
        util_buf_printf(o, "# NOTE: %s\n", COMM_VIRTUAL_NOTE);
    for (int k = 0; k < r->n_backends; k++) {
        const exec_bench_backend *b = &r->backends[k];
        util_buf_printf(o, "#\n");
        if (!b->ran) {
            util_buf_printf(o, "# backend %s: unsupported: %s\n", b->name, b->why);
            continue;
        }
        const bool model = r->model_system[0] != '\0';
        util_buf_printf(o, "# backend %s (%s)\n", b->name, b->graph ? "timed as CUDA graphs" : "timed eager");
        if (model)
            util_buf_printf(o, "# model: %s\n", b->model_method[0] ? b->model_method : "not modelled");
        /* The verify-pass mark is a column of its own (yes / -), so a whitespace split of every row
         * gives the same fields. */
        util_buf_printf(o, "# %12s %13s %6s %6s %9s %8s %8s %7s%s %6s\n", "size", "count", "type", "redop", "time",
                        "algbw", "busbw", "#wrong", model ? "     model     error" : "", "verify");
        util_buf_printf(o, "# %12s %13s %6s %6s %9s %8s %8s %7s%s %6s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)",
                        "(GB/s)", "", model ? "      (us)          " : "", "pass");
        for (int i = 0; i < b->n_rows; i++) {
            const exec_bench_row *w = &b->rows[i];
            char t[32], wrong[24], m[48] = "";
            fmt_time(t, sizeof(t), w->time_us);
            if (w->wrong < 0)
                snprintf(wrong, sizeof(wrong), "N/A");
            else
                snprintf(wrong, sizeof(wrong), "%lld", w->wrong);
            if (model && isfinite(w->model_us) && w->time_us > 0)
                snprintf(m, sizeof(m), " %9.2f %+8.1f%%", w->model_us, 100.0 * (w->model_us - w->time_us) / w->time_us);
            else if (model)
                snprintf(m, sizeof(m), " %9s %9s", "-", "-");
            util_buf_printf(o, "  %12lld %13lld %6s %6s %9s %8.2f %8.2f %7s%s %6s\n", w->bytes, w->count, r->type,
                            exec_bench_redop(kind), t, w->algbw, w->busbw, wrong, m, w->verify_size ? "yes" : "-");
        }
        util_buf_printf(o, "# avg bus bandwidth (%s): %.3f GB/s\n", b->name, exec_bench_avg_busbw(b));
    }
    util_buf_printf(o, "#\n# #wrong total: %lld (%s)\n", r->wrong_total, r->wrong_total ? "FAILED" : "OK");
}

void exec_bench_csv(util_buf *o, const exec_bench_result *r)
{
    const bool model = r->model_system[0] != '\0';
    const int kind = exec_bench_kind(r);
    util_buf_printf(o, "backend,ranks,device,type,redop,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong,verify_pass,"
                       "graph,collective%s\n",
                    model ? ",model_us,model_error_pct" : "");
    for (int k = 0; k < r->n_backends; k++) {
        const exec_bench_backend *b = &r->backends[k];
        for (int i = 0; i < b->n_rows; i++) {
            const exec_bench_row *w = &b->rows[i];
            char wrong[24] = "", m[64] = "";
            if (w->wrong >= 0)
                snprintf(wrong, sizeof(wrong), "%lld", w->wrong);
            if (model && isfinite(w->model_us) && w->time_us > 0)
                snprintf(m, sizeof(m), ",%.6g,%.4g", w->model_us, 100.0 * (w->model_us - w->time_us) / w->time_us);
            else if (model)
                snprintf(m, sizeof(m), ",,");
            /* A backend name may hold commas (a policy's rules), a loaded one anything. */
            util_csv_field(o, b->name);
            util_buf_printf(o, ",%d,", r->ranks);
            util_csv_field(o, r->device);
            util_buf_printf(o, ",");
            util_csv_field(o, r->type);
            util_buf_printf(o, ",%s,%lld,%lld,%.6g,%.6g,%.6g,%s,%s,%s,%s%s\n", exec_bench_redop(kind), w->bytes, w->count,
                            w->time_us, w->algbw, w->busbw, wrong, w->verify_size ? "true" : "false",
                            b->graph ? "true" : "false", plan_op_kind_names[kind], m);
        }
    }
}

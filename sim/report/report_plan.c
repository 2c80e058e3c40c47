/* The plan as a human table (one row per phase) and as CSV (one row per op). */
#include "report.h"

#include "../config/cfg_nccl.h"
#include "../util/util.h"

#include <stdlib.h>
#include <string.h>

/* "123 x 43008 B" for each distinct payload, in order of first appearance. */
static void payload_groups(const long long *bytes, int n, util_buf *out)
{
    long long seen[16];
    int counts[16], n_seen = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < n_seen && seen[k] != bytes[i])
            k++;
        if (k == n_seen) {
            if (n_seen == 16)
                continue;
            seen[n_seen] = bytes[i];
            counts[n_seen++] = 0;
        }
        counts[k]++;
    }
    for (int k = 0; k < n_seen; k++)
        util_buf_printf(out, "%s%d x %lld B", k ? ", " : "", counts[k], seen[k]);
    if (n_seen == 0)
        util_buf_printf(out, "-");
}

/* collectives.allreduce_split: the table's allgather column counts the split's all-gathers too; this
 * line says how many reduce-scatters the split made and their payloads. */
static void split_note(util_buf *out, const plan *p)
{
    bool any = false;
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        long long first = -1;
        for (int k = 0; k < ph->n_ops && first < 0; k++)
            if (ph->ops[k].kind == PLAN_OP_REDUCE_SCATTER)
                first = ph->ops[k].payload_bytes;
        if (first < 0)
            continue;
        util_buf_printf(out, "%s%s %d x %lld B", any ? ", " : "reduce-scatters (collectives.allreduce_split, rows "
                        "padded to a multiple of the ranks): ", ph->name, ph->summary.op_count[PLAN_OP_REDUCE_SCATTER],
                        first);
        any = true;
    }
    if (any)
        util_buf_printf(out, "\n");
}

/* Expert parallelism's all-to-alls (parallel.ep), a line per phase that has them: the table's columns
 * stay those of a TP plan. */
static void report_plan_alltoalls(util_buf *out, const plan *p)
{
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        const int n = ph->summary.op_count[PLAN_OP_ALLTOALL];
        long long bytes = 0;
        for (int k = 0; k < ph->n_ops; k++)
            if (ph->ops[k].kind == PLAN_OP_ALLTOALL)
                bytes += ph->ops[k].payload_bytes;
        if (n)
            util_buf_printf(out, "%-13s all-to-all (expert parallelism): %d x %lld B per rank\n", ph->name, n,
                            bytes / n);
    }
}

void report_plan_table(util_buf *out, const plan *p, const cfg_scenario *sc)
{
    if (sc)
        util_buf_printf(out, "scenario %s: %s + %s on %s\n", sc->name, sc->target.name,
                        sc->speculative.algorithm == CFG_SPEC_NONE ? "no draft" : sc->draft.name, sc->system.name);
    else
        util_buf_printf(out, "plan %s (loaded from JSON)\n", p->scenario);
    util_buf_printf(out, "TP=%d ranks, batch %d, context %d tokens, %d distinct routed experts per MoE layer, "
                         "%.3f expected tokens per cycle\n",
                    p->ranks, p->batch, p->context, p->active_experts, p->expected_tokens);
    if (sc && cfg_nccl_tuned(&sc->nccl)) {
        /* The variables as the replay sets them on a current NCCL (version 0: per-collective NCCL_ALGO). */
        char d[128], why[256];
        cfg_nccl_env_pair env[CFG_NCCL_ENV_MAX];
        const int n = cfg_nccl_env(&sc->nccl, 0, env, why, sizeof(why));
        util_buf_printf(out, "NCCL tuning (scenario nccl:): %s; replay sets", cfg_nccl_describe(&sc->nccl, d, sizeof(d)));
        for (int i = 0; i < n; i++)
            util_buf_printf(out, " %s=%s", env[i].name, env[i].value);
        util_buf_printf(out, "\n");
    }
    util_buf_printf(out, "Each rank runs every op below on its own shard; flops and bytes are per rank.\n\n");
    util_buf_printf(out, "%-13s %-6s %4s %5s %5s %5s %5s %5s %5s %5s %9s %9s %10s  %s\n", "phase", "model", "tok",
                    "ops", "gemm", "group", "attn", "norm", "elem", "embed", "GFLOP", "weights", "allgather",
                    "allreduce payloads");
    double tot_flops = 0, tot_w = 0;
    int tot_ops = 0, tot_ar = 0, tot_ag = 0;
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        const plan_phase_summary *s = &ph->summary;
        util_buf groups = {0};
        payload_groups(s->allreduce_bytes, s->allreduce_count, &groups);
        char wb[32], ag[48];
        if (s->allgather_count)
            snprintf(ag, sizeof(ag), "%d x %lld B", s->allgather_count,
                     s->allgather_bytes_total / s->allgather_count);
        else
            snprintf(ag, sizeof(ag), "-");
        util_buf_printf(out, "%-13s %-6s %4d %5d %5d %5d %5d %5d %5d %5d %9.2f %9s %10s  %d: %s\n", ph->name,
                        ph->model, ph->tokens, ph->n_ops, s->op_count[PLAN_OP_GEMM], s->op_count[PLAN_OP_GROUPED_GEMM],
                        s->op_count[PLAN_OP_ATTENTION], s->op_count[PLAN_OP_NORM], s->op_count[PLAN_OP_ELEMENTWISE],
                        s->op_count[PLAN_OP_EMBEDDING], s->flops / 1e9, util_fmt_bytes(s->weight_bytes, wb, sizeof(wb)),
                        ag, s->allreduce_count, groups.s);
        util_buf_free(&groups);
        tot_flops += s->flops;
        tot_w += s->weight_bytes;
        tot_ops += ph->n_ops;
        tot_ar += s->allreduce_count;
        tot_ag += s->allgather_count;
    }
    char wb[32];
    util_buf_printf(out, "%-13s %-6s %4s %5d %5s %5s %5s %5s %5s %5s %9.2f %9s %10d  %d allreduces\n", "cycle", "", "",
                    tot_ops, "", "", "", "", "", "", tot_flops / 1e9, util_fmt_bytes(tot_w, wb, sizeof(wb)), tot_ag,
                    tot_ar);
    split_note(out, p);
    report_plan_alltoalls(out, p);
    int fused = 0;
    for (int i = 0; i < p->n_phases; i++)
        fused += p->phases[i].summary.op_count[PLAN_OP_ALLREDUCE_NORM];
    if (fused)
        util_buf_printf(out, "fused: %d allreduce_norm ops per cycle (allreduce + residual add + RMSNorm; not counted "
                             "in the allreduce and norm columns)\n", fused);
}

void report_plan_csv(util_buf *out, const plan *p)
{
    util_buf_printf(out, "phase,index,kind,name,layer,stream,m,n,k,batch,wdtype,wgroup,adtype,q_len,kv_len,heads,"
                         "kv_heads,qk_dim,v_dim,count,payload_bytes,ranks,flops,weight_bytes,bytes_read,"
                         "bytes_written\n");
    for (int i = 0; i < p->n_phases; i++) {
        const plan_phase *ph = &p->phases[i];
        for (int k = 0; k < ph->n_ops; k++) {
            const plan_op *o = &ph->ops[k];
            /* Names come from a plan file and may hold anything: written through the one quoting writer. */
            util_csv_field(out, ph->name);
            util_buf_printf(out, ",%d,%s,", k, plan_op_kind_names[o->kind]);
            util_csv_field(out, o->name);
            util_buf_printf(out, ",%d,%s,%lld,%lld,%lld,%d,%s,%d,%s,%lld,%lld,%d,%d,%d,%d,%lld,%lld,%d,"
                                 "%.0f,%.0f,%.0f,%.0f\n",
                            o->layer, plan_stream_names[o->stream],
                            o->m, o->n, o->k, o->batch, cfg_dtype_names[o->wdtype], o->wgroup,
                            cfg_dtype_names[o->adtype], o->q_len, o->kv_len, o->heads, o->kv_heads, o->qk_dim, o->v_dim,
                            o->count, o->payload_bytes, o->ranks, o->flops, o->weight_bytes, o->bytes_read,
                            o->bytes_written);
        }
    }
}

void report_plan_memory(util_buf *out, const plan_memory *m)
{
    util_buf_printf(out, "\nmemory per rank (%s):\n", m->verdict);
    for (int i = 0; i < m->n; i++) {
        char b[32];
        util_buf_printf(out, "  %-24s %10s  %s\n", m->items[i].name, util_fmt_bytes(m->items[i].bytes, b, sizeof(b)),
                        m->items[i].how);
    }
    char t[32], c[32];
    util_buf_printf(out, "  %-24s %10s  of %s (system.gpu.memory_gib)\n", "total", util_fmt_bytes(m->total_bytes, t, sizeof(t)),
                    util_fmt_bytes(m->capacity_bytes, c, sizeof(c)));
}

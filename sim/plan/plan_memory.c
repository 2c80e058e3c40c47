/* The per-rank memory account (see plan_memory.h). Shapes per rank as in plan_build.c; sizes in bytes. */
#include "plan_memory.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GIB 1073741824.0
#define MIB 1048576.0

/* NCCL's per-connection buffers besides NCCL_BUFFSIZE (Simple): LL and LL128 FIFOs, from NCCL's
 * src/include/device.h defaults: LL = 8 lines/thread x 512 threads x 8 steps x 16 B = 512 KiB;
 * LL128 = 120 elements/thread x 640 threads x 8 steps x 8 B = 4,915,200 B. */
#define NCCL_LL_BYTES 524288.0
#define NCCL_LL128_BYTES 4915200.0
/* Connections per channel that hold receive buffers on a rank: the ring's and the tree's (NCCL sets up
 * both for allreduce; a tree node has up to 3 peers, but a 1-node tree is a chain: one up, one down). */
#define NCCL_CONNS_PER_CHANNEL 3
/* Channels NCCL opens to each peer for send/recv (NCCL_NCHANNELS_PER_PEER; assumed 2, NCCL's default
 * in the 2.2x releases). */
#define NCCL_P2P_CHANNELS_PER_PEER 2

static void add(plan_memory *m, const char *name, double bytes, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(plan_memory *m, const char *name, double bytes, const char *fmt, ...)
{
    if (bytes <= 0)
        return;
    m->total_bytes += bytes; /* counted even where the list is full: the total is what the verdict judges */
    if (m->n >= PLAN_MEM_MAX_ITEMS)
        return;
    plan_mem_item *it = &m->items[m->n++];
    /* Names are the literals of this file, all shorter than the field (snprintf's formatting cost a
     * tenth of the model's evaluation). */
    const size_t len = strnlen(name, sizeof(it->name) - 1);
    memcpy(it->name, name, len);
    it->name[len] = '\0';
    it->bytes = bytes;
    it->how[0] = '\0';
    if (!m->sums_only) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(it->how, sizeof(it->how), fmt, ap);
        va_end(ap);
    }
}

static double wb(cfg_weight w) { return cfg_dtype_weight_bytes((cfg_dtype)w.dtype, w.group); }

/* The target's weights on one rank: vocab-parallel embedding and lm_head; MLA with the replicated
 * fused_qkv_a projection and head-sharded q_b / kv_b / o_proj; dense MLP and every expert sharded on the
 * intermediate dimension; the replicated router. Norm weights are a few MB and left out.
 * Expert parallelism (ep > 1, plan_ep.h): experts / ep whole experts per rank and the shared experts
 * replicated; DP attention adds whole attention weights and a replicated embedding. */
static void target_weights(plan_memory *m, const cfg_scenario *sc, int tp)
{
    const cfg_model *t = &sc->target;
    const int ep = sc->parallel.ep > 1 ? sc->parallel.ep : 1, atp = sc->parallel.dp_attention ? 1 : tp;
    const double H = t->hidden, heads = (double)t->attention.heads / atp;
    const int dense = t->first_k_dense < t->layers ? t->first_k_dense : t->layers, moe = t->layers - dense;
    const double vocab = (double)t->vocab / tp;
    if (atp == 1 && tp > 1)
        add(m, "embedding", t->vocab * H * wb(t->weights.embedding), "vocab %d x hidden %.0f (DP attention: replicated)",
            t->vocab, H);
    else
        add(m, "embedding", vocab * H * wb(t->weights.embedding), "vocab %d / TP %d x hidden %.0f", t->vocab, tp, H);
    add(m, "lm_head", vocab * H * wb(t->weights.lm_head), "vocab %d / TP %d x hidden %.0f", t->vocab, tp, H);
    double attn;
    if (t->attention.kind == CFG_ATTN_MLA) {
        const double qlr = t->attention.q_lora_rank, kvlr = t->attention.kv_lora_rank;
        const double nope = t->attention.qk_nope_head_dim, rope = t->attention.qk_rope_head_dim;
        const double v = t->attention.v_head_dim;
        attn = H * (qlr + kvlr + rope) + qlr * heads * (nope + rope) + kvlr * heads * (nope + v) + heads * v * H;
    } else {
        const double hd = t->attention.head_dim;
        const double kv = t->attention.kv_heads >= atp ? (double)t->attention.kv_heads / atp : 1.0;
        attn = H * (heads + 2 * kv) * hd + heads * hd * H;
    }
    add(m, "attention weights", t->layers * attn * wb(t->weights.attention), "%d layers, heads %.0f per rank%s",
        t->layers, heads, atp == 1 && tp > 1 ? " (DP attention: whole)" : "");
    add(m, "dense MLP", dense * 3.0 * H * ((double)t->mlp.intermediate / tp) * wb(t->weights.dense_mlp),
        "%d layer(s) x 3 x hidden x %d / TP", dense, t->mlp.intermediate);
    /* Under EP the experts are whole (no TP split of the intermediate) and ep of them share the set. */
    const int etp = ep > 1 ? 1 : tp;
    const double inter = (double)t->moe.intermediate / etp;
    if (ep > 1)
        add(m, "routed experts", (double)moe * (t->moe.experts / ep) * 3.0 * H * inter * wb(t->weights.routed_experts),
            "%d layers x %d / EP %d whole experts x 3 x hidden x %d (stored, not routed to)", moe, t->moe.experts,
            ep, t->moe.intermediate);
    else
        add(m, "routed experts", (double)moe * t->moe.experts * 3.0 * H * inter * wb(t->weights.routed_experts),
            "%d layers x all %d experts x 3 x hidden x %d / TP (stored, not routed to)", moe, t->moe.experts,
            t->moe.intermediate);
    add(m, "shared experts + router",
        moe * (t->moe.shared_experts * 3.0 * H * inter * wb(t->weights.shared_expert) +
               H * t->moe.experts * wb(t->weights.router)),
        "%d layers x (%d shared x 3 x hidden x %d%s + router replicated)", moe, t->moe.shared_experts,
        t->moe.intermediate, ep > 1 ? ", replicated under EP" : " / TP");
}

/* The EAGLE-3 head: fc and norms replicated, attention and MLP sharded, its own (draft-vocab) lm_head;
 * the embedding is the target's (set_embed). */
static void draft_weights(plan_memory *m, const cfg_model *d, int tp)
{
    const double H = d->hidden, hd = d->attention.head_dim, heads = (double)d->attention.heads / tp;
    const int kv_all = d->attention.kv_heads ? d->attention.kv_heads : d->attention.heads;
    const double kv = kv_all >= tp ? (double)kv_all / tp : 1.0;
    const int n_aux = d->eagle3.n_aux_layers > 0 ? d->eagle3.n_aux_layers : 3;
    const double dvocab = (double)(d->eagle3.draft_vocab ? d->eagle3.draft_vocab : d->vocab) / tp;
    const double bytes = n_aux * H * H * wb(d->weights.fc) + (2 * H * (heads + 2 * kv) * hd + heads * hd * H) *
                             wb(d->weights.attention) + 3.0 * H * ((double)d->mlp.intermediate / tp) *
                             wb(d->weights.dense_mlp) + dvocab * H * wb(d->weights.lm_head);
    add(m, "draft head", bytes, "EAGLE-3 head: fc %d x hidden, one layer, lm_head %.0f per rank", n_aux, dvocab);
}

/* KV cache for the scenario's requests: each holds context + the verified tokens. MLA caches one latent
 * (kv_lora + rope) per token and layer, the same on every rank; GQA caches K and V of its own heads. */
static void kv_cache(plan_memory *m, const cfg_scenario *sc, int tp)
{
    const cfg_model *t = &sc->target, *d = &sc->draft;
    const double tokens = (double)sc->workload.batch * (sc->workload.context + sc->speculative.num_draft_tokens);
    /* DP attention: a rank caches its own batch / ep requests only (with every head: MLA's latent is
     * per token anyway). The draft head stays TP and caches them all. */
    const int dp = sc->parallel.dp_attention && sc->parallel.ep > 1 ? sc->parallel.ep : 1;
    const double eb = cfg_dtype_bytes((cfg_dtype)t->activation_dtype);
    double per_token;
    if (t->attention.kind == CFG_ATTN_MLA)
        per_token = (double)t->layers * (t->attention.kv_lora_rank + t->attention.qk_rope_head_dim);
    else
        per_token = t->layers * 2.0 * (t->attention.kv_heads >= tp ? (double)t->attention.kv_heads / tp : 1.0) *
                    t->attention.head_dim;
    add(m, "KV cache (target)", tokens / dp * per_token * eb,
        "batch %d%s x (context %d + %d verified) tokens x %.0f elements x %.0f B (%s)", sc->workload.batch,
        dp > 1 ? " / DP attention's ep" : "", sc->workload.context, sc->speculative.num_draft_tokens, per_token, eb,
        dp > 1 ? "its own requests" : t->attention.kind == CFG_ATTN_MLA ? "MLA latent, on every rank" : "own KV heads");
    if (sc->speculative.algorithm != CFG_SPEC_NONE) {
        const int kv_all = d->attention.kv_heads ? d->attention.kv_heads : d->attention.heads;
        const double kv = kv_all >= tp ? (double)kv_all / tp : 1.0;
        add(m, "KV cache (draft)", tokens * 2.0 * kv * d->attention.head_dim * eb, "one layer, %.0f KV heads per rank",
            kv);
    }
}

/* Activations: twice the largest op's activation traffic (its input and output live at once, and the
 * next op's as the allocator recycles): a bound for decode-sized passes, not a measurement. */
static double activation_bytes(const plan *p)
{
    double peak = 0.0; /* each phase's largest (plan_summarize; attention's reads are the KV cache, counted above) */
    for (int ph = 0; ph < p->n_phases; ph++)
        if (p->phases[ph].summary.activation_peak > peak)
            peak = p->phases[ph].summary.activation_peak;
    return 2.0 * peak;
}

/* What depends on the backend: a custom allreduce's workspace. */
static double backend_workspace_bytes(const cfg_scenario *sc, int ranks, int backend)
{
    return ranks > 1 && cfg_backend_workspace(backend) ? sc->system.memory.custom_workspace_mib * MIB : 0.0;
}

bool plan_memory_total_for_backend(const cfg_scenario *sc, const plan_memory *base, int backend, double *total_bytes)
{
    /* The same sum `add` makes, in the same order, so the two never disagree on a scenario at the edge. */
    *total_bytes = base->total_bytes + backend_workspace_bytes(sc, base->ranks, backend);
    return *total_bytes <= sc->system.gpu.memory_gib * GIB;
}

void plan_memory_verdict(const cfg_scenario *sc, double total_bytes, char *buf, size_t len)
{
    const double cap = sc->system.gpu.memory_gib;
    snprintf(buf, len, total_bytes <= cap * GIB ? "fits: %.1f of %.1f GiB" : "does not fit: needs %.1f GiB of %.1f",
             total_bytes / GIB, cap);
}

void plan_memory_for_backend(const cfg_scenario *sc, const plan_memory *base, int backend, plan_memory *out)
{
    const cfg_system *s = &sc->system;
    if (out != base)
        *out = *base;
    add(out, "custom allreduce", backend_workspace_bytes(sc, out->ranks, backend),
        "memory.custom_workspace_mib %.0f (IPC exchange buffers and flags)", s->memory.custom_workspace_mib);
    out->capacity_bytes = s->gpu.memory_gib * GIB;
    out->fits = out->total_bytes <= out->capacity_bytes;
    if (!out->sums_only)
        plan_memory_verdict(sc, out->total_bytes, out->verdict, sizeof(out->verdict));
}

static void account(const cfg_scenario *sc, const plan *p, int backend, bool sums_only, plan_memory *out);

void plan_memory_account(const cfg_scenario *sc, const plan *p, int backend, plan_memory *out)
{
    account(sc, p, backend, false, out);
}

void plan_memory_sums(const cfg_scenario *sc, const plan *p, int backend, plan_memory *out)
{
    account(sc, p, backend, true, out);
}

static void account(const cfg_scenario *sc, const plan *p, int backend, bool sums_only, plan_memory *out)
{
    memset(out, 0, sizeof(*out));
    out->sums_only = sums_only;
    const cfg_system *s = &sc->system;
    const int tp = p->ranks;
    out->ranks = tp;
    target_weights(out, sc, tp);
    if (sc->speculative.algorithm != CFG_SPEC_NONE)
        draft_weights(out, &sc->draft, tp);
    kv_cache(out, sc, tp);
    add(out, "activations", activation_bytes(p), "derived: 2 x the largest op's activations (in + out)");
    if (tp > 1) {
        /* The scenario's nccl.channels / nccl.buffsize replace NCCL's own figures from the system file. */
        const cfg_nccl_tuning *t = &sc->nccl;
        const int channels = t->channels > 0 ? t->channels : s->nccl.channels;
        const double buffsize = t->buffsize > 0 ? (double)t->buffsize : s->nccl.buffsize;
        const double per_conn = buffsize + NCCL_LL_BYTES + NCCL_LL128_BYTES;
        add(out, "NCCL buffers", (double)channels * NCCL_CONNS_PER_CHANNEL * per_conn,
            "%s %d x %d connections x (%s %.0f KiB + LL 512 KiB + LL128 4800 KiB)",
            t->channels > 0 ? "scenario nccl.channels" : "nccl.channels", channels, NCCL_CONNS_PER_CHANNEL,
            t->buffsize > 0 ? "scenario nccl.buffsize" : "nccl.buffsize", buffsize / 1024.0);
    }
    if (tp > 1 && sc->parallel.ep > 1) {
        /* NCCL's send/recv connections, set up per peer on the first all-to-all: assumed
         * NCCL_NCHANNELS_PER_PEER channels to each of the ep - 1 peers, each with the same buffers as
         * a ring connection. */
        const cfg_nccl_tuning *t = &sc->nccl;
        const double buffsize = t->buffsize > 0 ? (double)t->buffsize : s->nccl.buffsize;
        const double per_conn = buffsize + NCCL_LL_BYTES + NCCL_LL128_BYTES;
        add(out, "NCCL all-to-all buffers", (sc->parallel.ep - 1.0) * NCCL_P2P_CHANNELS_PER_PEER * per_conn,
            "(ep %d - 1) peers x %d channels (NCCL_NCHANNELS_PER_PEER, assumed) x %.0f KiB per connection",
            sc->parallel.ep, NCCL_P2P_CHANNELS_PER_PEER, per_conn / 1024.0);
    }
    add(out, "CUDA graphs", s->memory.graph_pool_mib * MIB, "memory.graph_pool_mib %.0f", s->memory.graph_pool_mib);
    add(out, "runtime", s->memory.runtime_mib * MIB, "memory.runtime_mib %.0f (CUDA context, cuBLAS, allocator)",
        s->memory.runtime_mib);
    plan_memory_for_backend(sc, out, backend, out);
}

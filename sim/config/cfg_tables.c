/* Schema tables for scenario and model files. The README's configuration reference is generated from
 * these (`vpsim config-reference`), so `doc`, `unit` and `def` are the user-facing documentation. */
#include "cfg.h"

#include "cfg_accept.h"
#include "cfg_nccl.h"
#include "cfg_policy.h"

#include <float.h>
#include <stddef.h>

static const char *const arch_names[] = {"deepseek_v3", "eagle3", NULL};
static const char *const attn_names[] = {"mla", "gqa", NULL};
static const char *const spec_names[] = {"eagle3", "none", NULL};

#define BIG 1e308
#define IN(type, member, field) (offsetof(type, member.field) - offsetof(type, member))

/* ---------------- model files ---------------- */

#define ATT(f) IN(cfg_model, attention, f)
static const cfg_field attention_fields[] = {
    {.key = "kind", .type = CFG_T_ENUM, .offset = ATT(kind), .choices = attn_names,
     .doc = "mla (DeepSeek-V3 multi-head latent attention) or gqa (grouped-query, Llama-style)"},
    {.key = "heads", .type = CFG_T_INT, .offset = ATT(heads), CFG_RANGE(1, 4096), .doc = "query heads"},
    {.key = "kv_heads", .type = CFG_T_INT, .offset = ATT(kv_heads), .def = "0", CFG_RANGE(0, 4096),
     .doc = "gqa: key/value heads (0 = same as heads)"},
    {.key = "head_dim", .type = CFG_T_INT, .offset = ATT(head_dim), .def = "128", CFG_RANGE(1, 4096),
     .doc = "gqa: dimension per head"},
    {.key = "q_lora_rank", .type = CFG_T_INT, .offset = ATT(q_lora_rank), .def = "0", CFG_RANGE(0, 65536),
     .doc = "mla: query low-rank dimension"},
    {.key = "kv_lora_rank", .type = CFG_T_INT, .offset = ATT(kv_lora_rank), .def = "0", CFG_RANGE(0, 65536),
     .doc = "mla: latent KV dimension (cached per token)"},
    {.key = "qk_nope_head_dim", .type = CFG_T_INT, .offset = ATT(qk_nope_head_dim), .def = "0",
     CFG_RANGE(0, 4096), .doc = "mla: non-rotary part of each query/key head"},
    {.key = "qk_rope_head_dim", .type = CFG_T_INT, .offset = ATT(qk_rope_head_dim), .def = "0",
     CFG_RANGE(0, 4096), .doc = "mla: rotary part (cached per token, shared by heads)"},
    {.key = "v_head_dim", .type = CFG_T_INT, .offset = ATT(v_head_dim), .def = "0", CFG_RANGE(0, 4096),
     .doc = "mla: value dimension per head"},
    {0},
};

static const cfg_field mlp_fields[] = {
    {.key = "intermediate", .type = CFG_T_INT, .offset = IN(cfg_model, mlp, intermediate), CFG_RANGE(1, 1 << 20),
     .doc = "dense MLP intermediate size (gate and up each)"},
    {0},
};

#define MOE(f) IN(cfg_model, moe, f)
static const cfg_field moe_fields[] = {
    {.key = "experts", .type = CFG_T_INT, .offset = MOE(experts), .def = "0", CFG_RANGE(0, 65536),
     .doc = "routed experts (0 = no MoE)"},
    {.key = "top_k", .type = CFG_T_INT, .offset = MOE(top_k), .def = "0", CFG_RANGE(0, 1024),
     .doc = "routed experts per token"},
    {.key = "shared_experts", .type = CFG_T_INT, .offset = MOE(shared_experts), .def = "0", CFG_RANGE(0, 64),
     .doc = "always-active shared experts"},
    {.key = "intermediate", .type = CFG_T_INT, .offset = MOE(intermediate), .def = "0", CFG_RANGE(0, 1 << 20),
     .doc = "intermediate size of one expert"},
    {0},
};

#define E3(f) IN(cfg_model, eagle3, f)
static const cfg_field eagle3_fields[] = {
    {.key = "draft_vocab", .type = CFG_T_INT, .offset = E3(draft_vocab), .def = "0", CFG_RANGE(0, 1 << 24),
     .doc = "draft head's own lm_head vocabulary (0 = the model vocab)"},
    {.key = "aux_layers", .type = CFG_T_INT_LIST, .offset = E3(aux_layers), .count_offset = E3(n_aux_layers),
     .max_items = CFG_MAX_AUX, .def = "[]", CFG_RANGE(0, 1 << 16),
     .doc = "target layers whose hidden states the draft head fuses"},
    {0},
};

static const cfg_field weight_fields[] = {
    {.key = "dtype", .type = CFG_T_ENUM, .offset = offsetof(cfg_weight, dtype), .def = "bf16",
     .choices = cfg_dtype_names, .doc = "storage type"},
    {.key = "group", .type = CFG_T_INT, .offset = offsetof(cfg_weight, group), .def = "0", CFG_RANGE(0, 1 << 20),
     .unit = "elements", .doc = "elements per quantisation scale (0 = none)"},
    {0},
};

#define W(f, what)                                                                                                   \
    {.key = #f, .type = CFG_T_MAP, .offset = IN(cfg_model, weights, f), .fields = weight_fields, .doc = what}
static const cfg_field weights_fields[] = {
    W(attention, "attention projections"),
    W(dense_mlp, "dense MLP layers"),
    W(shared_expert, "shared experts"),
    W(routed_experts, "routed experts"),
    W(router, "MoE router gate"),
    W(embedding, "token embedding"),
    W(lm_head, "output head"),
    W(fc, "EAGLE-3 fusion of the auxiliary hidden states"),
    {0},
};

const cfg_field cfg_model_fields[] = {
    {.key = "name", .type = CFG_T_STRING, .offset = offsetof(cfg_model, name), .doc = "model name"},
    {.key = "source", .type = CFG_T_STRING, .offset = offsetof(cfg_model, source), .def = "''",
     .doc = "where the shapes come from"},
    {.key = "arch", .type = CFG_T_ENUM, .offset = offsetof(cfg_model, arch), .choices = arch_names,
     .doc = "deepseek_v3 (MLA + MoE target) or eagle3 (EAGLE-3 draft head)"},
    {.key = "layers", .type = CFG_T_INT, .offset = offsetof(cfg_model, layers), CFG_RANGE(1, 1024),
     .doc = "decoder layers"},
    {.key = "first_k_dense", .type = CFG_T_INT, .offset = offsetof(cfg_model, first_k_dense), .def = "0",
     CFG_RANGE(0, 1024), .doc = "leading layers with a dense MLP instead of MoE"},
    {.key = "hidden", .type = CFG_T_INT, .offset = offsetof(cfg_model, hidden), CFG_RANGE(1, 1 << 20),
     .doc = "hidden size"},
    {.key = "vocab", .type = CFG_T_INT, .offset = offsetof(cfg_model, vocab), CFG_RANGE(1, 1 << 24),
     .doc = "vocabulary (embedding rows)"},
    {.key = "attention", .type = CFG_T_MAP, .offset = offsetof(cfg_model, attention), .fields = attention_fields,
     .doc = "attention shapes"},
    {.key = "mlp", .type = CFG_T_MAP, .offset = offsetof(cfg_model, mlp), .fields = mlp_fields,
     .doc = "dense MLP"},
    {.key = "moe", .type = CFG_T_MAP, .offset = offsetof(cfg_model, moe), .fields = moe_fields,
     .doc = "mixture of experts"},
    {.key = "eagle3", .type = CFG_T_MAP, .offset = offsetof(cfg_model, eagle3), .fields = eagle3_fields,
     .doc = "EAGLE-3 draft head"},
    {.key = "weights", .type = CFG_T_MAP, .offset = offsetof(cfg_model, weights), .fields = weights_fields,
     .doc = "weight storage per tensor group"},
    {.key = "activation_dtype", .type = CFG_T_ENUM, .offset = offsetof(cfg_model, activation_dtype), .def = "bf16",
     .choices = cfg_dtype_names, .doc = "activations and collectives"},
    {0},
};

/* ---------------- scenario files ---------------- */

static const cfg_field parallel_fields[] = {
    {.key = "tp", .type = CFG_T_INT, .offset = IN(cfg_scenario, parallel, tp), .def = "8", CFG_RANGE(1, 16),
     .unit = "ranks", .doc = "tensor-parallel ranks (1, 2, 4, 8 or 16), one GPU each"},
    {.key = "ep", .type = CFG_T_INT, .offset = IN(cfg_scenario, parallel, ep), .def = "1", CFG_RANGE(1, 16),
     .unit = "ranks",
     .doc = "expert-parallel ranks: 1 = routed experts sharded by tensor parallelism; or parallel.tp (the TP group's "
            "GPUs, as SGLang's --ep-size = --tp-size; it must divide the experts): each rank holds experts / ep whole "
            "experts, the shared experts replicated, and tokens reach them by a dispatch and a combine all-to-all per "
            "MoE layer, then an all-gather of the rows (docs/model.md \"Expert parallelism\")"},
    {.key = "dp_attention", .type = CFG_T_BOOL, .offset = IN(cfg_scenario, parallel, dp_attention), .def = "false",
     .doc = "with ep > 1 and workload.batch a multiple of ep: attention data-parallel, each rank attends for its own "
            "batch / ep requests with whole attention weights and a replicated embedding, no attention allreduce "
            "(SGLang --enable-dp-attention); false = attention stays tensor-parallel. The draft head stays TP"},
    {0},
};

static const cfg_field fusion_fields[] = {
    {.key = "allreduce_residual_norm", .type = CFG_T_BOOL,
     .offset = IN(cfg_scenario, fusion, allreduce_residual_norm), .def = "false",
     .doc = "each allreduce followed by an RMSNorm of its rows becomes one allreduce_norm op: residual += "
            "allreduce(x), out = RMSNorm(residual) x weight (FlashInfer's allreduce fusion); oneshot and push run a "
            "fused kernel, nccl, mpi and twoshot the unfused sequence (docs/model.md \"Fusion\")"},
    {0},
};

static const cfg_field collectives_fields[] = {
    {.key = "allreduce_split", .type = CFG_T_BOOL, .offset = IN(cfg_scenario, collectives, allreduce_split),
     .def = "false",
     .doc = "each decoder-layer allreduce that feeds an RMSNorm becomes reduce-scatter (rows padded to a multiple "
            "of parallel.tp), the norm on this rank's rows, all-gather (sequence parallelism); the embedding's "
            "allreduce stays; not together with fusion.allreduce_residual_norm"},
    {0},
};

static const cfg_field overlap_fields[] = {
    {.key = "two_batch", .type = CFG_T_BOOL, .offset = IN(cfg_scenario, overlap, two_batch), .def = "false",
     .doc = "two-batch overlap (what-if): the target's passes run as two micro-batches of ceil(B/2) and floor(B/2) "
            "requests (workload.batch >= 2), one's collectives behind the other's compute; every weight is read "
            "once per micro-batch. Modelled as the critical path of the interleaved micro-batches; replayed "
            "serially (docs/model.md, Two-batch overlap)"},
    {0},
};

#define SP(f) IN(cfg_scenario, speculative, f)
static const cfg_field speculative_fields[] = {
    {.key = "algorithm", .type = CFG_T_ENUM, .offset = SP(algorithm), .def = "eagle3", .choices = spec_names,
     .doc = "eagle3, or none for plain decoding (one token per cycle)"},
    {.key = "steps", .type = CFG_T_INT, .offset = SP(steps), .def = "2", CFG_RANGE(1, 31),
     .doc = "draft steps per cycle (SGLang --speculative-num-steps)"},
    {.key = "topk", .type = CFG_T_INT, .offset = SP(topk), .def = "1", CFG_RANGE(1, 64),
     .doc = "draft branching per step (SGLang --speculative-eagle-topk)"},
    {.key = "num_draft_tokens", .type = CFG_T_INT, .offset = SP(num_draft_tokens), .def = "0", CFG_RANGE(0, 1024),
     .unit = "tokens",
     .doc = "tokens per request in the verify pass (SGLang --speculative-num-draft-tokens); 0 = steps + 1, which "
            "topk=1 requires (as SGLang derives it); topk > 1 needs it set, in [2, 1 + topk + (steps-1) x topk^2]"},
    {.key = "acceptance", .type = CFG_T_DOUBLE_LIST, .offset = SP(acceptance), .count_offset = SP(n_acceptance),
     .max_items = CFG_MAX_ACCEPT, .def = "[0.8, 0.6]", CFG_RANGE(0.0, 1.0),
     .doc = "chained acceptance of the draft's top-1 candidate per depth (rate at depth d given depth d-1 "
            "accepted); depths past the list reuse its last rate (the model warns)"},
    {.key = "rank_acceptance", .type = CFG_T_CUSTOM, .offset = SP(rank_acceptance), .def = "[0.1, 0.05, 0.03]",
     .bind = cfg_bind_rank_rates,
     .doc = "topk > 1: acceptance of the draft's rank-1, rank-2, ... candidate given its parent was accepted, as one "
            "list for every depth ([0.1, 0.05]) or one list per depth ([[0.1, 0.05], [0.12, 0.06]], later depths "
            "reuse the last); unlisted ranks are never accepted; with the depth's top-1 rate they must sum to <= 1. "
            "Default assumed (docs/model.md \"Acceptance\")"},
    {.key = "accept_length", .type = CFG_T_DOUBLE, .offset = SP(accept_length), .def = "0", CFG_RANGE(0, 1025),
     .unit = "tokens",
     .doc = "measured mean tokens per verify per request, bonus token included (SGLang's logged `accept len`); "
            "overrides the model for whatever shape the scenario has; 0 = use the model"},
    {.key = "accept_table", .type = CFG_T_CUSTOM, .offset = SP(accept_table), .def = "[]",
     .bind = cfg_bind_accept_table,
     .doc = "measured accept lengths per shape: rows `{steps, topk (1), num_draft_tokens (0 = steps + 1), "
            "accept_length}`; the row matching the scenario's shape overrides the model (accept_length wins over it)"},
    {.key = "acceptance_source", .type = CFG_T_STRING, .offset = SP(acceptance_source), .def = "assumed",
     .doc = "provenance of the acceptance rates"},
    {0},
};

#define WL(f) IN(cfg_scenario, workload, f)
static const cfg_field workload_fields[] = {
    {.key = "batch", .type = CFG_T_INT, .offset = WL(batch), .def = "1", CFG_RANGE(1, 4096), .unit = "requests",
     .doc = "concurrent requests decoded together"},
    {.key = "context", .type = CFG_T_INT, .offset = WL(context), .def = "8192", CFG_RANGE(1, 16777216),
     .unit = "tokens", .doc = "KV-cache length per request that attention reads"},
    {.key = "active_experts", .type = CFG_T_INT, .offset = WL(active_experts), .def = "0", CFG_RANGE(0, 65536),
     .unit = "experts", .doc = "distinct routed experts a pass touches per layer (0 = expected value under "
                                "uniform routing)"},
    {0},
};

#define RN(f) IN(cfg_scenario, run, f)
static const cfg_field run_fields[] = {
    {.key = "backend", .type = CFG_T_ENUM, .offset = RN(backend), .def = "nccl", .choices = cfg_backend_names,
     .doc = "collective backend for `vpsim run`"},
    {.key = "allreduce_policy", .type = CFG_T_STRING, .offset = RN(allreduce_policy), .def = "''",
     .check = cfg_policy_check, .unit = "bytes",
     .doc = "per-size allreduce backend for `vpsim run`, first match wins, e.g. `oneshot<=256K,twoshot<=8M,nccl` "
            "(K/M = KiB/MiB of payload per rank); empty = `backend` for every collective"},
    {.key = "device", .type = CFG_T_ENUM, .offset = RN(device), .def = "cuda", .choices = cfg_device_names,
     .doc = "where `vpsim run` executes the ops"},
    {.key = "iters", .type = CFG_T_INT, .offset = RN(iters), .def = "50", CFG_RANGE(1, 1000000),
     .doc = "timed cycles"},
    {.key = "warmup", .type = CFG_T_INT, .offset = RN(warmup), .def = "10", CFG_RANGE(0, 1000000),
     .doc = "untimed cycles first"},
    {.key = "graph", .type = CFG_T_BOOL, .offset = RN(graph), .def = "true",
     .doc = "capture the cycle as a CUDA graph (false = eager launches)"},
    {.key = "seed", .type = CFG_T_INT, .offset = RN(seed), .def = "1234", CFG_RANGE(0, 2147483647),
     .doc = "seed of the synthetic data"},
    {.key = "timeout", .type = CFG_T_INT, .offset = RN(timeout), .def = "60", CFG_RANGE(0, 86400), .unit = "s",
     .doc = "watchdog of `vpsim run` and `vpsim bench-allreduce`: when a rank makes no progress for this long, "
            "every rank exits 1 naming its backend, phase, op and last completed step; 0 = no watchdog"},
    {0},
};

#define NC(f) IN(cfg_scenario, nccl, f)
static const cfg_field nccl_fields[] = {
    {.key = "channels", .type = CFG_T_INT, .offset = NC(channels), .def = "0", CFG_RANGE(0, 64), .unit = "channels",
     .doc = "channels NCCL runs its collectives on; 0 = NCCL's own choice (the model uses system.nccl.channels). "
            "Replay sets NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS to it (both, to pin the count); the model scales "
            "NCCL's bus bandwidth with it and the memory account counts its buffers per channel"},
    {.key = "protocol", .type = CFG_T_ENUM, .offset = NC(protocol), .def = "auto", .choices = cfg_nccl_proto_names,
     .doc = "NCCL protocol for every collective (NCCL_PROTO): auto (NCCL picks per size), LL, LL128 or Simple; "
            "the model picks only among the allowed ones. LL128 on PCIe is what NCCL never picks itself and its "
            "documentation warns may be unsafe where unsupported"},
    {.key = "algorithm", .type = CFG_T_ENUM, .offset = NC(algorithm), .def = "auto", .choices = cfg_nccl_algo_names,
     .doc = "NCCL algorithm for allreduces: auto, ring or tree. Replay sets NCCL_ALGO=allreduce:<algorithm> (per "
            "collective, NCCL 2.24+; tree needs it, ring falls back to NCCL_ALGO=Ring on older NCCL); all-gathers "
            "stay rings, the only algorithm NCCL has for them"},
    {.key = "buffsize", .type = CFG_T_CUSTOM, .offset = NC(buffsize), .def = "0", .bind = cfg_bind_nccl_buffsize,
     .unit = "bytes",
     .doc = "NCCL_BUFFSIZE, the Simple protocol's buffer per connection and channel (K/M/G = KiB/MiB/GiB, a power "
            "of 2 from 4K to 1G); 0 = NCCL's default (system.nccl.buffsize). Memory only: NCCL's tuning model, and "
            "so vpsim's, has no latency term for it"},
    {0},
};

#define SC(f) offsetof(cfg_scenario, f)
const cfg_field cfg_scenario_fields[] = {
    {.key = "name", .type = CFG_T_STRING, .offset = SC(name), .doc = "scenario name"},
    {.key = "description", .type = CFG_T_STRING, .offset = SC(description), .def = "''", .doc = "free text"},
    {.key = "model", .type = CFG_T_PATH, .offset = SC(model_path),
     .doc = "target model file, relative to this file; `--set model.KEY=V` edits it"},
    {.key = "draft", .type = CFG_T_PATH, .offset = SC(draft_path),
     .doc = "draft model file, relative to this file; `--set draft.KEY=V` edits it"},
    {.key = "system", .type = CFG_T_PATH, .offset = SC(system_path),
     .doc = "system file, relative to this file; `--set system.KEY=V` edits it"},
    {.key = "parallel", .type = CFG_T_MAP, .offset = SC(parallel), .fields = parallel_fields, .doc = "parallelism"},
    {.key = "speculative", .type = CFG_T_MAP, .offset = SC(speculative), .fields = speculative_fields,
     .doc = "speculative decoding"},
    {.key = "fusion", .type = CFG_T_MAP, .offset = SC(fusion), .fields = fusion_fields,
     .doc = "kernel fusion (what-if)"},
    {.key = "collectives", .type = CFG_T_MAP, .offset = SC(collectives), .fields = collectives_fields,
     .doc = "how the layer collectives are decomposed (what-if)"},
    {.key = "overlap", .type = CFG_T_MAP, .offset = SC(overlap), .fields = overlap_fields,
     .doc = "communication/computation overlap (what-if)"},
    {.key = "workload", .type = CFG_T_MAP, .offset = SC(workload), .fields = workload_fields, .doc = "workload"},
    {.key = "run", .type = CFG_T_MAP, .offset = SC(run), .fields = run_fields, .doc = "replay settings"},
    {.key = "nccl", .type = CFG_T_MAP, .offset = SC(nccl), .fields = nccl_fields,
     .doc = "NCCL tuning (what-if): replayed as NCCL_* environment variables (an explicit value here overrides the "
            "same variable in the environment, and the results say so), modelled by NCCL's tuning model; a measured "
            "NCCL table (taken with NCCL's defaults) is not applied while any of these is set"},
    {0},
};

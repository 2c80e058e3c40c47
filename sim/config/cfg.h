/* cfg: the scenario, the model files and the system file as plain C structs, loaded strictly from YAML.
 *
 * A scenario names a target model, a draft model and a system file (paths relative to the scenario).
 * --set KEY=VALUE overrides any field before validation: `model.*`, `draft.*` and `system.*` reach
 * into the referenced files, everything else into the scenario itself. */
#ifndef VPSIM_CFG_H
#define VPSIM_CFG_H

#include "cfg_lists.h"
#include "cfg_schema.h"
#include "cfg_system.h"
#include "cfg_tree.h"

#include <stdbool.h>

#define CFG_MAX_ACCEPT 32
#define CFG_MAX_RANK_ROWS 32  /* speculative.rank_acceptance: one row per draft depth */
#define CFG_MAX_RANKS 63      /* ranks 1..63 (topk is at most 64) */
#define CFG_MAX_ACCEPT_ROWS 64 /* speculative.accept_table */
#define CFG_MAX_AUX 8
#define CFG_MAX_SETS 256

typedef enum { CFG_DT_BF16, CFG_DT_FP16, CFG_DT_FP8, CFG_DT_INT4, CFG_DT_FP32, CFG_DT_COUNT } cfg_dtype;
extern const char *const cfg_dtype_names[];
/* Bytes per element of a weight, counting quantisation scales: INT4 with one bf16 scale per `group`
 * elements is 0.5 + 2/group; FP8 with one fp32 scale per `group` elements is 1 + 4/group. */
double cfg_dtype_weight_bytes(cfg_dtype dt, int group);
/* Bytes per element of an activation / unquantised tensor. */
double cfg_dtype_bytes(cfg_dtype dt);

typedef enum { CFG_ARCH_DEEPSEEK_V3, CFG_ARCH_EAGLE3 } cfg_arch;
typedef enum { CFG_ATTN_MLA, CFG_ATTN_GQA } cfg_attn_kind;

typedef struct cfg_weight {
    int dtype; /* cfg_dtype */
    int group; /* elements per quantisation scale; 0 = unquantised */
} cfg_weight;

typedef struct cfg_model {
    char *name;
    char *source; /* where the numbers come from */
    int arch;     /* cfg_arch */
    int layers;
    int first_k_dense; /* layers [0, first_k_dense) use the dense MLP, the rest MoE */
    int hidden;
    int vocab;
    struct {
        int kind; /* cfg_attn_kind */
        int heads;
        int kv_heads; /* GQA */
        int head_dim; /* GQA */
        int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; /* MLA */
    } attention;
    struct {
        int intermediate;
    } mlp;
    struct {
        int experts;
        int top_k;
        int shared_experts;
        int intermediate;
    } moe;
    struct {
        int draft_vocab;
        int aux_layers[CFG_MAX_AUX];
        int n_aux_layers;
    } eagle3;
    struct {
        cfg_weight attention, dense_mlp, shared_expert, routed_experts, router, embedding, lm_head, fc;
    } weights;
    int activation_dtype; /* cfg_dtype */
} cfg_model;

#define CFG_BACKEND_ENUM(ID, ...) CFG_BACKEND_##ID,
typedef enum { CFG_BACKEND_LIST(CFG_BACKEND_ENUM) CFG_BACKEND_COUNT } cfg_backend;
#undef CFG_BACKEND_ENUM
extern const char *const cfg_backend_names[];
extern const char *const cfg_backend_keys[]; /* C-identifier form: measured.allreduce.<key> */
extern const char *const cfg_backend_help[];
/* A real allreduce: a policy may name it and model mode compares it (not none or model). */
bool cfg_backend_reduces(int backend);
/* The system file can carry a measured latency table for it (system.measured.allreduce.<key>). */
bool cfg_backend_has_table(int backend);
/* The list's traits (cfg_lists.h): what a backend is, read wherever its identity would be tested. */
typedef enum { CFG_PEER_USE_NONE, CFG_PEER_USE_LOADS, CFG_PEER_USE_STORES } cfg_peer_use;
typedef enum { CFG_LAUNCH_PLANNED, CFG_LAUNCH_KERNEL, CFG_LAUNCH_HOST } cfg_backend_launch_kind;
cfg_peer_use cfg_backend_peer_use(int backend);
bool cfg_backend_fuses_norm(int backend);
cfg_backend_launch_kind cfg_backend_launch(int backend);
bool cfg_backend_workspace(int backend);
bool cfg_backend_in_place(int backend);
bool cfg_backend_probed(int backend);

#define CFG_DEVICE_ENUM(ID, ...) CFG_DEVICE_##ID,
typedef enum { CFG_DEVICE_LIST(CFG_DEVICE_ENUM) CFG_DEVICE_COUNT } cfg_device;
#undef CFG_DEVICE_ENUM
extern const char *const cfg_device_names[];
extern const char *const cfg_device_help[];
/* auto, general, mla, wgmma (NULL-terminated): the CUDA device's decode attention kernels (vpsim run
 * --attn-kernel), indexed by vp_attention_set_kernel's number. */
extern const char *const cfg_attn_kernel_names[];

typedef enum { CFG_SPEC_EAGLE3, CFG_SPEC_NONE } cfg_spec_algo;

/* Conditional acceptance of the draft's rank-r candidate (r >= 1) given its parent was accepted:
 * p[row][r-1]; row d-1 holds depth d, depths past the last row reuse it, ranks past a row's list are
 * never accepted. Rank 0 is speculative.acceptance. */
typedef struct cfg_rank_rates {
    double p[CFG_MAX_RANK_ROWS][CFG_MAX_RANKS];
    int n[CFG_MAX_RANK_ROWS]; /* ranks given per row */
    int n_rows;
    bool per_depth; /* written as one list per depth (else one list for every depth) */
} cfg_rank_rates;

/* One measured accept length (mean tokens per verify, bonus token included) for one shape. */
typedef struct cfg_accept_row {
    int steps, topk, num_draft_tokens;
    double accept_length;
} cfg_accept_row;

typedef struct cfg_accept_table {
    cfg_accept_row rows[CFG_MAX_ACCEPT_ROWS];
    int n;
} cfg_accept_table;

typedef struct cfg_scenario {
    char *path; /* the file it was loaded from (the default scenario's when none was named) */
    char *name;
    char *description;
    char *model_path, *draft_path, *system_path;
    struct {
        int tp;
        int ep;            /* expert-parallel ranks: 1 = experts sharded by TP; else experts whole per rank */
        bool dp_attention; /* attention data-parallel over the EP ranks (each rank its own requests) */
    } parallel;
    struct {
        bool allreduce_residual_norm; /* allreduce + residual add + next RMSNorm as one op */
    } fusion;
    struct {
        bool allreduce_split; /* allreduce -> reduce-scatter, norm on the shard, all-gather */
    } collectives;
    struct {
        bool two_batch; /* two micro-batches: one's communication behind the other's compute */
    } overlap;
    struct {
        int algorithm; /* cfg_spec_algo */
        int steps, topk, num_draft_tokens; /* num_draft_tokens 0 in a file: steps + 1 (topk = 1) */
        double acceptance[CFG_MAX_ACCEPT]; /* rank 0 (top-1), chained per depth */
        int n_acceptance;
        cfg_rank_rates rank_acceptance;    /* ranks >= 1, for topk > 1 */
        double accept_length;              /* measured mean tokens per verify; 0 = use the model */
        cfg_accept_table accept_table;     /* measured per (steps, topk, num_draft_tokens) */
        char *acceptance_source;
    } speculative;
    struct {
        int batch;
        int context;
        int active_experts; /* 0: derived from batch x tokens x top-k */
    } workload;
    struct {
        int backend; /* cfg_backend */
        char *allreduce_policy; /* "" or per-size rules, e.g. "oneshot<=256K,twoshot<=8M,nccl" */
        int device;  /* cfg_device */
        int iters, warmup;
        bool graph;
        int seed;
        int timeout; /* watchdog seconds; 0 = none */
    } run;
    cfg_nccl_tuning nccl; /* also copied into system.nccl_tuning */

    /* Loaded from the paths above. */
    cfg_model target, draft;
    cfg_system system;
} cfg_scenario;

/* Tables, exported for documentation (`vpsim config-reference`) and for sweep key checks. */
extern const cfg_field cfg_scenario_fields[];
extern const cfg_field cfg_model_fields[];

/* Load a scenario with its model, draft and system files; apply `n_sets` "--set" strings
 * ("dotted.key=value") first. On error returns -1 with err->msg "file:line:col: ..." (or naming the
 * --set argument); the caller exits with status 2. system_override replaces the scenario's system
 * file when not NULL. */
int cfg_scenario_load(const char *path, const char *const *sets, int n_sets, const char *system_override,
                      cfg_scenario *out, cfg_error *err);
void cfg_scenario_free(cfg_scenario *sc);

/* Expected tokens per cycle: cfg_accept_eval(sc).tokens (cfg_accept.h), kept for callers that need
 * only the number. */
double cfg_expected_tokens(const cfg_scenario *sc);

/* Validate one "--set" string's syntax and key without a scenario ("KEY=VALUE", known key). */
int cfg_check_set_key(const char *set, cfg_error *err);

#endif

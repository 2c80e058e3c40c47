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

#define CFG_DEVICE_ENUM(ID, ...) CFG_DEVICE_##ID,
typedef enum { CFG_DEVICE_LIST(CFG_DEVICE_ENUM) CFG_DEVICE_COUNT } cfg_device;
#undef CFG_DEVICE_ENUM
extern const char *const cfg_device_names[];
extern const char *const cfg_device_help[];

typedef enum { CFG_SPEC_EAGLE3, CFG_SPEC_NONE } cfg_spec_algo;

typedef struct cfg_scenario {
    char *path; /* the file it was loaded from (the default scenario's when none was named) */
    char *name;
    char *description;
    char *model_path, *draft_path, *system_path;
    struct {
        int tp;
    } parallel;
    struct {
        int algorithm; /* cfg_spec_algo */
        int steps, topk, num_draft_tokens;
        double acceptance[CFG_MAX_ACCEPT];
        int n_acceptance;
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

/* Expected tokens per cycle from the chained acceptance rates: 1 + sum_i prod_{j<=i} a_j over the
 * `steps` draft positions (positions past the vector reuse its last rate). */
double cfg_expected_tokens(const cfg_scenario *sc);

/* Validate one "--set" string's syntax and key without a scenario ("KEY=VALUE", known key). */
int cfg_check_set_key(const char *set, cfg_error *err);

#endif

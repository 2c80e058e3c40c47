/* cfg_policy: which allreduce backend serves a collective of a given size, as servers choose
 * (custom kernels for small payloads, NCCL for large ones). Plain C, no MPI or CUDA.
 *
 * A policy is an ordered rule list written as text, e.g. "oneshot<=256K,twoshot<=8M,nccl": the first
 * rule whose bound covers the payload wins; the last rule has no bound. Sizes are payload bytes per
 * rank (count x element size), with K/M/G suffixes meaning KiB/MiB/GiB. */
#ifndef VPSIM_CFG_POLICY_H
#define VPSIM_CFG_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#define CFG_POLICY_MAX_RULES 8

typedef struct cfg_policy_rule {
    long long max_bytes; /* applies to payloads <= max_bytes; -1 = any size (last rule only) */
    int backend;         /* cfg_backend */
} cfg_policy_rule;

typedef struct cfg_policy {
    int n;
    cfg_policy_rule rule[CFG_POLICY_MAX_RULES];
} cfg_policy;

/* "43008", "42K", "8M", "1G" (also "8MB", "8MiB", lower case): bytes. 0, or -1 when not a size. */
int cfg_parse_bytes(const char *s, long long *out);
/* The exact short form: "8M", "256K", "43008" (a suffix only when it divides exactly), so that
 * cfg_parse_bytes(cfg_format_bytes(b)) == b. Returns buf. */
const char *cfg_format_bytes(long long bytes, char *buf, size_t len);

/* Backends a policy may name: the real allreduce implementations (nccl, nccl-symm, oneshot, twoshot,
 * push, mpi); not none or model. */
bool cfg_backend_reduces(int backend);

/* Parse "BACKEND<=SIZE,...,BACKEND". 0, or -1 with a reason that lists the valid backends. */
int cfg_policy_parse(const char *spec, cfg_policy *p, char *why, size_t why_len);
/* cfg_policy_parse without the result: the schema check of `run.allreduce_policy`. */
int cfg_policy_check(const char *spec, char *why, size_t why_len);
/* A single backend for every size. */
void cfg_policy_single(cfg_policy *p, int backend);
/* The index of the rule that serves a payload of `bytes` (-1 for an empty policy). */
int cfg_policy_rule_for(const cfg_policy *p, long long bytes);
/* The backend for a payload of `bytes`. */
int cfg_policy_pick(const cfg_policy *p, long long bytes);
/* Back to the text form (parse(format(p)) == p). Returns buf. */
const char *cfg_policy_format(const cfg_policy *p, char *buf, size_t len);

/* What vLLM/SGLang would run, as a policy (facts from their public custom_all_reduce.py and
 * csrc/custom_all_reduce.cuh): custom allreduce exists only for world sizes 2, 4, 6, 8, and only when
 * world == 2 or all GPUs are NVLink-connected ("full_nvlink"); it serves payloads below max_size
 * (8 MiB by default) that are multiples of 16 bytes; world 2 always uses one-shot; with full NVLink,
 * one-shot when (world <= 4 and < 512 KiB) or (world <= 8 and < 256 KiB), else two-shot; NCCL
 * otherwise. Returns 0 when the custom path is enabled, -1 when vLLM would use NCCL only; `why`
 * says which (the multiple-of-16-bytes condition cannot be expressed as a size rule and is noted). */
int cfg_policy_vllm(int world, bool full_nvlink, cfg_policy *p, char *why, size_t why_len);

#endif

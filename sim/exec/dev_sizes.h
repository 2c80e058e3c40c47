/* dev_sizes: element and byte counts that the devices derive from plan ops, computed so that none can
 * wrap, and the shape rules their loops rely on.
 *
 * A plan file is hand-editable input: m = n = k = 2^30 with batch 16 wraps a size_t product to 0, which
 * passes any memory check and is then memset at its true size; a grouped GEMM with batch 0 divides by
 * zero. The devices run every op through dev_op_check and build every size with dev_size_*, so such a
 * plan is refused with its reason before anything is allocated. */
#ifndef VPSIM_DEV_SIZES_H
#define VPSIM_DEV_SIZES_H

#include "../plan/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A count that remembers whether any step that built it wrapped past INT64_MAX or took a negative
 * factor; once `bad`, it stays bad, so a whole expression is checked once at the end. */
typedef struct dev_size {
    uint64_t v;
    bool bad;
} dev_size;

dev_size dev_size_of(long long v);
dev_size dev_size_mul(dev_size a, long long b);
dev_size dev_size_mul_size(dev_size a, dev_size b);
dev_size dev_size_add(dev_size a, dev_size b);
dev_size dev_size_max(dev_size a, dev_size b);
/* a * b * c * d (pass 1 for unused factors). */
dev_size dev_size_prod(long long a, long long b, long long c, long long d);
/* (a + (align - 1)) rounded down to a multiple of align (a power of two). */
dev_size dev_size_align(dev_size a, uint64_t align);

/* 0 when the devices can run `op` as its fields say (GEMM dimensions fit the BLAS int arguments, a GEMM
 * batch of at least 1, attention heads that group evenly over the KV heads, ...); else -1 with `why`
 * naming the op and the field. */
int dev_op_check(const plan_op *op, const char *phase, char *why, size_t len);

/* The largest allreduce_norm of the plan: its count (residual elements) and its widest row (weight
 * elements); both 0 when the plan has none. */
void dev_norm_extent(const plan *p, long long *max_count, long long *max_width);

/* Say that `what` of op `name` (phase `phase`) does not fit 64-bit sizes. Returns -1. */
int dev_size_refuse(char *why, size_t len, const char *what, const plan_op *op, const char *phase);

#endif

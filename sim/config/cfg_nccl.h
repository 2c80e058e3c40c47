/* cfg_nccl: the scenario's NCCL tuning (`nccl:` section) as NCCL environment variables, and as one line
 * for people. Plain C: the replay (sim/comm/comm_nccl.c) sets the variables before ncclCommInitRank,
 * `vpsim plan` prints them, the unit tests check them without a GPU.
 *
 * The variables, from NCCL's documentation (docs.nvidia.com/deeplearning/nccl, "Environment Variables"):
 *   NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS: the least / most channels NCCL may use; both set to N pin N.
 *   NCCL_PROTO: LL, LL128 or Simple (comma lists, ^ excludes). LL128 forced where NCCL would not enable it
 *     by itself (PCIe) is documented as possibly unsafe.
 *   NCCL_ALGO: Ring, Tree, ...; since NCCL 2.24 per collective, "allreduce:tree". NCCL runs all-gather as
 *     a ring only, so a bare NCCL_ALGO=Tree leaves all-gathers with "no algorithm/protocol available": the
 *     algorithm therefore applies to allreduces only and tree needs NCCL 2.24+.
 *   NCCL_BUFFSIZE: bytes of the Simple protocol's buffer per connection (default 4 MiB, powers of 2). */
#ifndef VPSIM_CFG_NCCL_H
#define VPSIM_CFG_NCCL_H

#include "cfg_schema.h"
#include "cfg_system.h"

#include <stdbool.h>
#include <stddef.h>

#define CFG_NCCL_ENV_MAX 5
/* NCCL's version code (ncclGetVersion) from which NCCL_ALGO takes "allreduce:<algo>". */
#define CFG_NCCL_PER_COLL_ALGO_VERSION 22400

typedef struct cfg_nccl_env_pair {
    char name[32];
    char value[32];
} cfg_nccl_env_pair;

/* Any setting other than "NCCL decides". */
bool cfg_nccl_tuned(const cfg_nccl_tuning *t);

/* The NCCL_* variables for `t` under NCCL version `nccl_version` (ncclGetVersion's code, e.g. 22703;
 * 0 = unknown, taken as new enough), only those not left to NCCL. Returns how many were written to `out`
 * (room for CFG_NCCL_ENV_MAX), or -1 with a reason when this NCCL cannot express the tuning. */
int cfg_nccl_env(const cfg_nccl_tuning *t, int nccl_version, cfg_nccl_env_pair *out, char *why, size_t why_len);

/* "channels 1, protocol LL, algorithm auto, buffsize 1M" or "NCCL decides everything". Returns buf. */
const char *cfg_nccl_describe(const cfg_nccl_tuning *t, char *buf, size_t len);

/* Schema binder of nccl.buffsize: 0, or bytes with K/M/G suffixes as in run.allreduce_policy. */
int cfg_bind_nccl_buffsize(const cfg_field *f, const cfg_node *n, void *slot, const char *path, cfg_error *err);

#endif

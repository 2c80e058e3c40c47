/* The names, help and traits of the lists in cfg_lists.h (backends, devices, dtypes), generated from the
 * X-macro lists: the one place a backend's traits are read from, below the schema tables
 * (cfg_tables.c) and the policy parser (cfg_policy.c) that both use them. */
#include "cfg.h"

#include "cfg_policy.h"

const char *const cfg_dtype_names[] = {"bf16", "fp16", "fp8", "int4", "fp32", NULL};
#define NAME(ID, name, ...) name,
#define KEY(ID, name, key, ...) #key,
#define HELP_B(ID, name, key, where, policy, table, family, peer, fuse, launch, workspace, inplace, probe, help) help,
#define HELP_D(ID, name, key, where, help) help,
#define REDUCES(ID, name, key, where, policy, ...) policy,
#define HAS_TABLE(ID, name, key, where, policy, table, ...) table,
#define PEER(ID, name, key, where, policy, table, family, peer, ...) CFG_PEER_USE_##peer,
#define FUSE(ID, name, key, where, policy, table, family, peer, fuse, ...) fuse,
#define LAUNCH(ID, name, key, where, policy, table, family, peer, fuse, launch, ...) CFG_LAUNCH_##launch,
#define WORKSPACE(ID, name, key, where, policy, table, family, peer, fuse, launch, workspace, ...) workspace,
#define INPLACE(ID, name, key, where, policy, table, family, peer, fuse, launch, workspace, inplace, ...) inplace,
#define PROBE(ID, name, key, where, policy, table, family, peer, fuse, launch, workspace, inplace, probe, ...) probe,
const char *const cfg_backend_names[] = {CFG_BACKEND_LIST(NAME) NULL};
const char *const cfg_backend_keys[] = {CFG_BACKEND_LIST(KEY) NULL};
const char *const cfg_backend_help[] = {CFG_BACKEND_LIST(HELP_B) NULL};
static const bool backend_reduces[] = {CFG_BACKEND_LIST(REDUCES)};
static const bool backend_has_table[] = {CFG_BACKEND_LIST(HAS_TABLE)};
static const cfg_peer_use backend_peer[] = {CFG_BACKEND_LIST(PEER)};
static const bool backend_fuse[] = {CFG_BACKEND_LIST(FUSE)};
static const cfg_backend_launch_kind backend_launch[] = {CFG_BACKEND_LIST(LAUNCH)};
static const bool backend_workspace[] = {CFG_BACKEND_LIST(WORKSPACE)};
static const bool backend_inplace[] = {CFG_BACKEND_LIST(INPLACE)};
static const bool backend_probe[] = {CFG_BACKEND_LIST(PROBE)};
const char *const cfg_device_names[] = {CFG_DEVICE_LIST(NAME) NULL};
const char *const cfg_device_help[] = {CFG_DEVICE_LIST(HELP_D) NULL};
/* Indexed by vp_attention_set_kernel's number (kernels/vp_kernels.h), 0 = the kernels' own default. */
const char *const cfg_attn_kernel_names[] = {"auto", "general", "mla", "wgmma", NULL};
#undef NAME
#undef KEY
#undef HELP_B
#undef HELP_D
#undef REDUCES
#undef HAS_TABLE
#undef PEER
#undef FUSE
#undef LAUNCH
#undef WORKSPACE
#undef INPLACE
#undef PROBE

bool cfg_backend_reduces(int backend)
{
    return backend >= 0 && backend < CFG_BACKEND_COUNT && backend_reduces[backend];
}

static bool backend_ok(int backend) { return backend >= 0 && backend < CFG_BACKEND_COUNT; }
cfg_peer_use cfg_backend_peer_use(int backend) { return backend_ok(backend) ? backend_peer[backend] : CFG_PEER_USE_NONE; }
bool cfg_backend_fuses_norm(int backend) { return backend_ok(backend) && backend_fuse[backend]; }
cfg_backend_launch_kind cfg_backend_launch(int backend)
{
    return backend_ok(backend) ? backend_launch[backend] : CFG_LAUNCH_KERNEL;
}
bool cfg_backend_workspace(int backend) { return backend_ok(backend) && backend_workspace[backend]; }

bool cfg_backend_in_place(int backend) { return backend_ok(backend) && backend_inplace[backend]; }

bool cfg_backend_probed(int backend) { return backend_ok(backend) && backend_probe[backend]; }

bool cfg_backend_has_table(int backend)
{
    return backend >= 0 && backend < CFG_BACKEND_COUNT && backend_has_table[backend];
}

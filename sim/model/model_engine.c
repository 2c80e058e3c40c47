/* Which allreduce a serving engine would run: the gates of vLLM's and SGLang's custom allreduce, so a
 * table can say whether a backend vpsim models is one the engine would actually pick at this payload
 * and GPU count (a fast backend no engine uses needs a patch to matter).
 *
 * Both engines, default configuration (custom allreduce not disabled), CUDA:
 *  - custom allreduce is set up only for world sizes 2, 4, 6, 8, and for more than two GPUs only when
 *    every pair has NVLink ("not supported on more than two PCIe-only GPUs"), and only when the P2P
 *    check passes (CustomAllreduce.__init__; vLLM runs the P2P check in finalize_p2p);
 *  - a call takes it when the payload is a multiple of 16 bytes and below max_size, 8 MiB by default
 *    (should_custom_ar);
 *  - the kernel is one-stage for 2 GPUs, and with full NVLink for < 512 KiB at <= 4 GPUs or < 256 KiB
 *    at <= 8 GPUs; two-stage above (CustomAllreduce::allreduce, REDUCE_CASE);
 *  - otherwise the call goes to NCCL (vLLM's PyNcclCommunicator, SGLang's pynccl), always available.
 * vpsim's oneshot and twoshot kernels stand for the one- and two-stage kernels. Not modelled: vLLM's
 * optional symmetric-memory and FlashInfer allreduce paths, SGLang's optional MSCCL++ / torch symm-mem
 * paths, ROCm (quick allreduce); all off by default or not CUDA. */
#include "model.h"

#include <stdio.h>

const char *const model_engine_names[] = {"vllm", "sglang", NULL};

typedef struct engine_gates {
    const char *where;     /* the code the numbers come from */
    int world_sizes[4];    /* custom allreduce world sizes */
    double max_bytes;      /* should_custom_ar: payload < max_size */
    double align_bytes;    /* should_custom_ar: payload % 16 == 0 */
    double one_stage_le4;  /* full NVLink, <= 4 GPUs: one-stage below this payload */
    double one_stage_le8;  /* full NVLink, <= 8 GPUs: one-stage below this payload */
} engine_gates;

/* The two engines share the code (SGLang's file says "Adapted from" vLLM v0.6.4); the numbers are kept
 * per engine so that a divergence is one edit. */
static const engine_gates gates[MODEL_ENGINE_COUNT] = {
    [MODEL_ENGINE_VLLM] = {"vllm/distributed/device_communicators/custom_all_reduce.py (CustomAllreduce.__init__, "
                           "should_custom_ar); csrc/custom_all_reduce.cuh (CustomAllreduce::allreduce)",
                           {2, 4, 6, 8}, 8192.0 * 1024, 16, 512.0 * 1024, 256.0 * 1024},
    [MODEL_ENGINE_SGLANG] = {"python/sglang/srt/distributed/device_communicators/custom_all_reduce.py "
                             "(CustomAllreduce.__init__, should_custom_ar); sgl-kernel/csrc/allreduce/"
                             "custom_all_reduce.cuh (CustomAllreduce::allreduce)",
                             {2, 4, 6, 8}, 8192.0 * 1024, 16, 512.0 * 1024, 256.0 * 1024},
};

/* The engine's choice: CFG_BACKEND_ONESHOT / TWOSHOT (custom allreduce) or NCCL, and why not custom. */
static cfg_backend engine_choice(const engine_gates *g, const cfg_system *sys, double bytes, int ranks,
                                 const char **why)
{
    bool size_ok = false;
    for (int i = 0; i < 4; i++)
        size_ok |= g->world_sizes[i] == ranks;
    const bool nvlink = sys->topology.interconnect == CFG_IC_NVLINK;
    *why = NULL;
    if (!size_ok)
        *why = "custom allreduce only at 2, 4, 6 or 8 GPUs";
    else if (ranks > 2 && !nvlink)
        *why = "custom allreduce off on PCIe with more than 2 GPUs (needs a patch)";
    else if (sys->topology.p2p != CFG_P2P_DIRECT)
        *why = "custom allreduce off without GPU P2P (topology.p2p is not direct)";
    else if (bytes >= g->max_bytes)
        *why = "payload >= custom allreduce max_size 8 MiB";
    else if ((long long)bytes % (long long)g->align_bytes != 0)
        *why = "payload not a multiple of 16 bytes";
    if (*why)
        return CFG_BACKEND_NCCL;
    if (ranks == 2)
        return CFG_BACKEND_ONESHOT;
    const bool one = (ranks <= 4 && bytes < g->one_stage_le4) || (ranks <= 8 && bytes < g->one_stage_le8);
    return one ? CFG_BACKEND_ONESHOT : CFG_BACKEND_TWOSHOT;
}

void model_engine_pick(model_engine engine, const cfg_system *sys, cfg_backend be, double bytes, int ranks,
                       char *buf, size_t len)
{
    if (be == CFG_BACKEND_NONE || be == CFG_BACKEND_MODEL || ranks < 2) {
        snprintf(buf, len, "n/a");
        return;
    }
    const char *why;
    const cfg_backend pick = engine_choice(&gates[engine], sys, bytes, ranks, &why);
    if (be == pick)
        snprintf(buf, len, "yes");
    else if (be == CFG_BACKEND_ONESHOT || be == CFG_BACKEND_TWOSHOT)
        /* custom allreduce is on but the size threshold chose the other kernel, or it is off */
        snprintf(buf, len, "no: %s", why                          ? why
                                     : pick == CFG_BACKEND_ONESHOT ? "its one-stage kernel at this size"
                                                                   : "its two-stage kernel at this size");
    else if (be == CFG_BACKEND_NCCL)
        snprintf(buf, len, "no: custom allreduce (%s) takes this payload",
                 pick == CFG_BACKEND_ONESHOT ? "one-stage" : "two-stage");
    else
        snprintf(buf, len, "no: not its default allreduce path");
}

const char *model_engine_source(model_engine engine) { return gates[engine].where; }

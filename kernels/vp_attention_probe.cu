// Probes for the attention benchmark (vpsim-kernel-tests --kernel probe): an empty kernel, the floor
// that any launch timed the same way pays, and the stage selector that times the split kernel and the
// combine kernel apart. Not used by the executor.
#include "vp_attention.cuh"
#include "vp_kernels.h"

namespace {

__global__ void empty_kernel() {}

} // namespace

int g_vp_attn_probe_stage = 0; // read by vp_attention_decode (vp_attention_plan.cu)
unsigned long long *g_vp_attn_trace = nullptr;

extern "C" int vp_empty_launch(void *stream)
{
    empty_kernel<<<1, 32, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

extern "C" int vp_attention_set_probe(int stage)
{
    if (stage < 0 || stage > 3)
        return (int)cudaErrorInvalidValue;
    g_vp_attn_probe_stage = stage;
    return 0;
}

extern "C" void vp_attention_set_trace(void *buf)
{
    g_vp_attn_trace = (unsigned long long *)buf;
}

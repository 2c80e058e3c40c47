/* model_launch: what launching an op costs the host and the GPU, per backend and launch mode, with the
 * ranks' arrival skew in eager launches; read by the cycle's timeline (model_cycle.c) and the two-batch
 * overlap's (model_tbo.c). */
#include "model_internal.h"

#include <math.h>

double model_expected_max_normal(int n)
{
    /* E[max of n iid N(0,1)] by integration: int x n phi(x) Phi(x)^(n-1) dx over [-8, 8]. */
    if (n < 2)
        return 0.0;
    double sum = 0.0;
    const double h = 1e-3;
    for (double x = -8.0; x <= 8.0; x += h) {
        const double phi = exp(-0.5 * x * x) / sqrt(2.0 * M_PI), cdf = 0.5 * erfc(-x / sqrt(2.0));
        sum += x * n * phi * pow(cdf, n - 1) * h;
    }
    return sum;
}

/* Arrival skew (docs/model.md "Arrival skew"): in eager launches every rank's host launches each op
 * itself, each launch with a spread of launch.eager_jitter_us between the ranks. Launches are
 * asynchronous, so the hosts do not meet at a collective: after k launches since the phase began (its
 * sync) they have drifted apart by sqrt(k) spreads, and a collective starts when the slowest of the n
 * hosts has launched it, E[max of n] spreads past the mean. The GPUs wait only where the hosts lead them.
 * A CUDA graph replays on the GPU: no host in the loop, no skew. */
launch_costs model_launch_costs(const cfg_system *s, cfg_backend be, int ranks, bool graph)
{
    static _Thread_local int cached_n = -1;
    static _Thread_local double cached_e = 0.0;
    if (ranks != cached_n) {
        cached_e = model_expected_max_normal(ranks);
        cached_n = ranks;
    }
    const launch_costs L = {s->launch.eager_us,     model_collective_launch_us(s, be),
                            s->launch.eager_gap_us, s->launch.graph_node_us,
                            s->launch.graph_launch_us, graph ? 0.0 : cached_e * s->launch.eager_jitter_us};
    return L;
}

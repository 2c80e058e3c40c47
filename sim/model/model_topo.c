/* Topology: placement, paths and shared-link contention. Formulas in docs/model.md ("Topology"). */
#include "model_topo.h"

#include <stdio.h>
#include <string.h>

const char *const model_path_type_names[] = {"NVL", "PIX", "PHB", "SYS", NULL};

static int per_socket(const cfg_system *s)
{
    int ps = (s->gpus + s->topology.sockets - 1) / s->topology.sockets;
    return ps > 0 ? ps : 1;
}

int model_topo_socket(const cfg_system *s, int gpu)
{
    int so = gpu / per_socket(s);
    return so < s->topology.sockets ? so : s->topology.sockets - 1;
}

int model_topo_switch(const cfg_system *s, int gpu)
{
    return s->topology.gpus_per_switch > 0 ? gpu / s->topology.gpus_per_switch : -1;
}

const char *model_topo_check(const cfg_system *s)
{
    static _Thread_local char why[200];
    const int gps = s->topology.gpus_per_switch;
    if (gps > 0 && per_socket(s) % gps != 0) {
        snprintf(why, sizeof(why),
                 "system.topology.gpus_per_switch=%d does not divide the %d GPUs per socket (a PCIe switch hangs "
                 "off one socket)",
                 gps, per_socket(s));
        return why;
    }
    if (s->topology.sockets > s->gpus) {
        snprintf(why, sizeof(why), "system.topology.sockets=%d exceeds system.gpus=%d", s->topology.sockets, s->gpus);
        return why;
    }
    return "";
}

model_path_type model_topo_path_type(const cfg_system *s, int a, int b)
{
    if (s->topology.interconnect == CFG_IC_NVLINK)
        return MODEL_PATH_NVL;
    const int sa = model_topo_switch(s, a), sb = model_topo_switch(s, b);
    if (sa >= 0 && sa == sb)
        return MODEL_PATH_PIX;
    return model_topo_socket(s, a) == model_topo_socket(s, b) ? MODEL_PATH_PHB : MODEL_PATH_SYS;
}

/* ---------------- resources ---------------- */

enum {
    R_GPU_OUT = 0,
    R_GPU_IN = R_GPU_OUT + MODEL_MAX_RANKS,
    R_NVL_OUT = R_GPU_IN + MODEL_MAX_RANKS,
    R_NVL_IN = R_NVL_OUT + MODEL_MAX_RANKS,
    R_UP_UP = R_NVL_IN + MODEL_MAX_RANKS,
    R_UP_DOWN = R_UP_UP + MODEL_MAX_RANKS,
    R_RC = R_UP_DOWN + MODEL_MAX_RANKS,
    R_SOCK = R_RC + 8,
    R_HOST = R_SOCK + 64,
    R_COUNT = R_HOST + 8,
};

typedef struct route {
    int res[12];
    int n;
    double lat;
} route;

static void hop(route *r, int res, double lat)
{
    if (res >= 0 && r->n < 12)
        r->res[r->n++] = res;
    r->lat += lat;
}

static int ep_socket(const cfg_system *s, int ep)
{
    return ep >= 0 ? model_topo_socket(s, ep) : -1 - ep;
}

/* Up from a GPU to its socket's root complex (or down, mirrored by the caller). */
static void gpu_to_rc(const cfg_system *s, int g, bool up, route *r)
{
    hop(r, (up ? R_GPU_OUT : R_GPU_IN) + g, s->links.pcie_lat_us);
    int sw = model_topo_switch(s, g);
    if (sw >= 0)
        hop(r, (up ? R_UP_UP : R_UP_DOWN) + sw, s->links.switch_lat_us);
}

static void route_between(const cfg_system *s, int a, int b, route *r)
{
    memset(r, 0, sizeof(*r));
    if (a >= 0 && b >= 0 && s->topology.interconnect == CFG_IC_NVLINK) {
        hop(r, R_NVL_OUT + a, s->links.nvlink_lat_us);
        hop(r, R_NVL_IN + b, 0.0);
        return;
    }
    if (a >= 0 && b >= 0 && model_topo_path_type(s, a, b) == MODEL_PATH_PIX) {
        hop(r, R_GPU_OUT + a, s->links.pcie_lat_us);
        hop(r, -1, s->links.switch_lat_us);
        hop(r, R_GPU_IN + b, s->links.pcie_lat_us);
        return;
    }
    const int sa = ep_socket(s, a), sb = ep_socket(s, b);
    if (a >= 0)
        gpu_to_rc(s, a, true, r);
    else
        hop(r, R_HOST + sa, s->links.host_mem_lat_us);
    hop(r, R_RC + sa, s->links.root_complex_lat_us);
    if (sa != sb) {
        hop(r, R_SOCK + sa * 8 + sb, s->links.socket_lat_us);
        hop(r, R_RC + sb, s->links.root_complex_lat_us);
    }
    if (b >= 0) {
        int sw = model_topo_switch(s, b);
        if (sw >= 0)
            hop(r, R_UP_DOWN + sw, s->links.switch_lat_us);
        hop(r, R_GPU_IN + b, s->links.pcie_lat_us);
    } else {
        hop(r, R_HOST + sb, s->links.host_mem_lat_us);
    }
}

double model_topo_latency(const cfg_system *s, int a, int b)
{
    route r;
    route_between(s, a, b, &r);
    return r.lat;
}

void model_flows_add(model_flows *f, int src, int dst, double bytes)
{
    if (f->n >= (int)(sizeof(f->src) / sizeof(f->src[0])))
        return;
    f->src[f->n] = src;
    f->dst[f->n] = dst;
    f->bytes[f->n] = bytes;
    f->n++;
}

static void resource_name(int res, char *buf, size_t len)
{
    if (res < R_GPU_IN)
        snprintf(buf, len, "GPU %d PCIe out", res - R_GPU_OUT);
    else if (res < R_NVL_OUT)
        snprintf(buf, len, "GPU %d PCIe in", res - R_GPU_IN);
    else if (res < R_NVL_IN)
        snprintf(buf, len, "GPU %d NVLink out", res - R_NVL_OUT);
    else if (res < R_UP_UP)
        snprintf(buf, len, "GPU %d NVLink in", res - R_NVL_IN);
    else if (res < R_UP_DOWN)
        snprintf(buf, len, "switch %d uplink up", res - R_UP_UP);
    else if (res < R_RC)
        snprintf(buf, len, "switch %d uplink down", res - R_UP_DOWN);
    else if (res < R_SOCK)
        snprintf(buf, len, "socket %d root complex", res - R_RC);
    else if (res < R_HOST)
        snprintf(buf, len, "socket link %d->%d", (res - R_SOCK) / 8, (res - R_SOCK) % 8);
    else
        snprintf(buf, len, "socket %d host memory", res - R_HOST);
}

/* Capacity of a resource in bytes per microsecond (GB/s x 1e3). */
static double capacity(const cfg_system *s, int res, bool reads, int fan_in)
{
    const double pcie = s->links.pcie_gbs * s->links.pcie_efficiency * 1e3;
    if (res < R_NVL_OUT) {
        bool inbound = res >= R_GPU_IN;
        if (reads && inbound)
            return pcie * s->links.read_efficiency;
        if (!reads && inbound && fan_in > 1)
            return pcie * s->links.many_writer_efficiency;
        return pcie;
    }
    if (res < R_UP_UP) {
        bool inbound = res >= R_NVL_IN;
        double nvl = s->links.nvlink_gbs * 1e3;
        return !reads && inbound && fan_in > 1 ? nvl * s->links.many_writer_efficiency : nvl;
    }
    if (res < R_RC)
        return s->links.uplink_gbs * s->links.pcie_efficiency * 1e3;
    if (res < R_SOCK)
        return s->links.root_complex_gbs * 1e3;
    if (res < R_HOST)
        return s->links.socket_gbs * 1e3;
    return s->links.host_mem_gbs * 1e3;
}

void model_flows_time(const cfg_system *s, const model_flows *f, bool reads, model_flow_time *out)
{
    double load[R_COUNT] = {0};
    int fan_in[R_COUNT] = {0};
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < f->n; i++) {
        route r;
        route_between(s, f->src[i], f->dst[i], &r);
        for (int k = 0; k < r.n; k++) {
            load[r.res[k]] += f->bytes[i];
            fan_in[r.res[k]]++;
        }
        double lat = r.lat;
        if (reads)
            /* A load goes out and its completion comes back; a GPU's memory answers it. */
            lat = 2.0 * r.lat + (f->src[i] >= 0 ? s->gpu.mem_latency_us : 0.0);
        if (lat > out->lat_us)
            out->lat_us = lat;
    }
    int worst = -1;
    for (int res = 0; res < R_COUNT; res++) {
        if (load[res] <= 0)
            continue;
        double cap = capacity(s, res, reads, fan_in[res]);
        double t = load[res] / cap;
        if (t > out->bw_us) {
            out->bw_us = t;
            worst = res;
            out->bottleneck_bytes = load[res];
            out->bottleneck_gbs = cap / 1e3;
        }
    }
    if (worst >= 0)
        resource_name(worst, out->bottleneck, sizeof(out->bottleneck));
    else
        snprintf(out->bottleneck, sizeof(out->bottleneck), "none");
}

/* What `vpsim probe` writes (probe_text.h): the system file and the report, plain functions of the
 * measurements and of what probe_findings.c concludes from them. */
#include "probe_text.h"

#include "cal_facts.h"
#include "cal_system.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NOTES 64

/* `s` with '"' and '\\' made harmless for a double-quoted YAML string, its lines joined by blanks. */
static void put_quoted(util_buf *out, const char *s)
{
    util_buf_printf(out, "\"");
    for (; *s; s++) {
        if (*s == '\n')
            util_buf_printf(out, "%s", s[1] ? " " : "");
        else
            util_buf_printf(out, "%c", *s == '"' || *s == '\\' ? '\'' : *s);
    }
    util_buf_printf(out, "\"");
}

typedef struct notes {
    cal_note v[MAX_NOTES];
    int n;
} notes;

static void note_add(notes *ns, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note_add(notes *ns, const char *key, const char *fmt, ...)
{
    if (ns->n == MAX_NOTES)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ns->v[ns->n].key = util_xstrdup(key);
    ns->v[ns->n].comment = util_xstrdup(buf);
    ns->n++;
}

static void notes_free(notes *ns)
{
    for (int i = 0; i < ns->n; i++) {
        free((char *)ns->v[i].key);
        free((char *)ns->v[i].comment);
    }
}

static void put_list(util_buf *out, const char *key, const cfg_paths_list *l)
{
    util_buf_printf(out, "  %s: [", key);
    for (int c = 0; c < l->n; c++)
        util_buf_printf(out, "%s%.4g", c ? ", " : "", probe_measured(l->v[c]) ? l->v[c] : 0.0);
    util_buf_printf(out, "]\n");
}

/* A list's comment; a spread the measurement did not give (negative, NaN) is left out. */
static void note_list(notes *ns, const char *key, const char *prov, int reps, double spread)
{
    if (spread >= 0 && isfinite(spread))
        note_add(ns, key, "measured: probe, %s, median of %d (spread %.0f%%)", prov, reps, spread);
    else
        note_add(ns, key, "measured: probe, %s, median of %d", prov, reps);
}

/* paths: every complete list, gpus, source and findings. */
static void paths_text(const probe_input *in, const char *prov, const char *findings, util_buf *out, notes *ns)
{
    const exec_links_result *r = in->links;
    const int n = r->paths.gpus;
    util_buf_printf(out, "paths:\n  gpus: %d\n", n);
    note_add(ns, "paths.gpus", "measured: probe, %s: the ranks of the probe%s", prov,
             probe_self_test(in) ? " (self-test: not GPUs of an interconnect)" : ", one GPU each");
#define LIST(name, dims, unit, help)                                                                               \
    if (probe_list_complete(&r->paths.name, n, dims)) {                                                                  \
        put_list(out, #name, &r->paths.name);                                                                      \
        note_list(ns, "paths." #name, prov, r->reps, r->spread_pct[EXEC_LINKS_##name]);                            \
    }
    CFG_PATHS_LIST(LIST)
#undef LIST
    util_buf_printf(out, "  source: ");
    char src[480];
    snprintf(src, sizeof(src), "measured: vpsim probe, %s, median of %d%s", prov, r->reps,
             probe_self_test(in) ? "; SELF-TEST, not an interconnect's figures" : "");
    put_quoted(out, src);
    util_buf_printf(out, "\n  findings: ");
    put_quoted(out, findings);
    util_buf_printf(out, "\n");
}

static void launch_text(const probe_input *in, const char *prov, util_buf *out, notes *ns)
{
    const exec_links_result *r = in->links;
    const struct {
        const char *key;
        double v;
        const char *how;
    } l[] = {
        {"eager_us", r->eager_launch_us, "host time of one bare cudaLaunchKernel: a framework's dispatch comes on top"},
        {"eager_gap_us", r->eager_gap_us, "GPU idle between back-to-back eager kernels"},
        {"graph_node_us", r->graph_node_us, "GPU idle between kernels of a CUDA graph"},
        {"graph_launch_us", r->graph_launch_us, "host time of one cudaGraphLaunch"},
    };
    bool any = false;
    for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
        if (!(l[i].v >= 0) || !isfinite(l[i].v))
            continue;
        if (!any)
            util_buf_printf(out, "launch:\n");
        any = true;
        util_buf_printf(out, "  %s: %.4g\n", l[i].key, l[i].v);
        char key[48];
        snprintf(key, sizeof(key), "launch.%s", l[i].key);
        char how[96];
        if (strcmp(l[i].key, "graph_launch_us") == 0 && r->graph_nodes > 0)
            snprintf(how, sizeof(how), "%s, of a graph of %d nodes", l[i].how, r->graph_nodes);
        else
            snprintf(how, sizeof(how), "%s", l[i].how);
        note_add(ns, key, "measured: probe, %s, median of %d (%s)", prov, r->reps, how);
    }
    if (r->jitter_iters > 0 && r->eager_jitter_us >= 0 && isfinite(r->eager_jitter_us)) {
        if (!any)
            util_buf_printf(out, "launch:\n");
        util_buf_printf(out, "  eager_jitter_us: %.4g\n", r->eager_jitter_us);
        note_add(ns, "launch.eager_jitter_us", "measured: probe, %s, median of %d: %d bare launches on every rank at "
                 "once, the ranks' spread over sqrt(%d) (a framework's dispatch spreads more)%s", prov, r->jitter_iters,
                 r->jitter_launches, r->jitter_launches, probe_self_test(in) ? "; SELF-TEST" : "");
    }
}

/* The host figures of the mpi backend's model (exec_mpi_costs.h says how they are read). */
static void host_text(const probe_input *in, const char *prov, util_buf *out, notes *ns)
{
    const exec_mpi_costs *m = in->host_mpi;
    const double memcpy_us = in->links->memcpy_lat_us;
    const bool have_memcpy = memcpy_us > 0 && isfinite(memcpy_us); /* 0: not measured */
    if (!m && !have_memcpy)
        return;
    util_buf_printf(out, "host:\n");
    if (have_memcpy) {
        util_buf_printf(out, "  memcpy_lat_us: %.4g\n", memcpy_us);
        note_add(ns, "host.memcpy_lat_us",
                 "measured: probe, %s, median of 200 (64 B staged through pinned host memory and back, each "
                 "synchronised: half the pair)",
                 prov);
    }
    if (!m)
        return;
    util_buf_printf(out, "  mpi_lat_us: %.4g\n  mpi_bw_gbs: %.4g\n  convert_gbs: %.4g\n", m->lat_us, m->bw_gbs,
                    m->convert_gbs);
    note_add(ns, "host.mpi_lat_us",
             "measured: probe, %s: fp32 MPI_Allreduce, %.0f B in %.2f us and %.0f B in %.2f us (median of %d), per "
             "recursive-doubling step",
             prov, m->small_bytes, m->small_us, m->large_bytes, m->large_us, m->reps);
    note_add(ns, "host.mpi_bw_gbs", "measured: probe, %s: the slope between those two sizes", prov);
    note_add(ns, "host.convert_gbs", "measured: probe, %s: dev_bf16.c both ways over %d elements (median of %d)", prov,
             m->convert_elems, m->reps);
}

/* GPUs sharing a PCIe switch (NVML PIX or PXB) as the model's gpus_per_switch: equal groups of
 * consecutive GPUs; 0 when no pair shares one; -1 when the layout is not one the model can hold. */
static int switch_groups(const dev_topo *t, int n)
{
    int g = 0;
    for (int i = 0; i < n; i++) {
        int size = 1;
        for (int j = 0; j < n; j++)
            size += j != i && (t->path[i][j] == DEV_PATH_PIX || t->path[i][j] == DEV_PATH_PXB);
        if (i == 0)
            g = size;
        else if (size != g)
            return -1;
        for (int j = 0; j < n && g > 1; j++) {
            const bool shared = j == i || t->path[i][j] == DEV_PATH_PIX || t->path[i][j] == DEV_PATH_PXB;
            if (shared != (j / g == i / g))
                return -1;
        }
    }
    return g > 1 ? g : 0;
}

/* NUMA nodes of the GPUs as the model's sockets (GPU i on socket i / (gpus / sockets)): the count of
 * distinct nodes when they split the GPUs evenly and in order; -1 otherwise or when unknown. */
static int numa_sockets(const exec_links_result *r, int n)
{
    int nodes = 0, seen[CFG_PATHS_MAX];
    for (int i = 0; i < n; i++) {
        if (r->numa[i] < 0)
            return -1;
        bool dup = false;
        for (int k = 0; k < nodes; k++)
            dup = dup || seen[k] == r->numa[i];
        if (!dup)
            seen[nodes++] = r->numa[i];
    }
    if (nodes < 1 || n % nodes)
        return -1;
    const int per = n / nodes;
    for (int i = 0; i < n; i++)
        if (r->numa[i] != r->numa[(i / per) * per])
            return -1;
    return nodes;
}

static void topology_text(const probe_input *in, const probe_p2p *p2p, const char *prov, util_buf *out, notes *ns)
{
    const exec_links_result *r = in->links;
    const int n = r->paths.gpus;
    util_buf_printf(out, "topology:\n  p2p: %s\n", cfg_p2p_names[p2p->mode]);
    note_add(ns, "topology.p2p", "measured: probe, %s: inferred from paths (rule: README, vpsim probe)%s", prov,
             probe_self_test(in) ? "; SELF-TEST" : "");
    if (p2p->judged || p2p->mode == CFG_P2P_OFF) {
        util_buf_printf(out, "  peer_loads: %s\n  peer_stores: %s\n", cfg_peer_mode_names[p2p->peer_loads],
                        cfg_peer_mode_names[p2p->peer_stores]);
        note_add(ns, "topology.peer_loads", "measured: probe, %s: a peer load's round trip %.3g us against a load from "
                 "host memory %.3g us (staged above max(%.0f, %.0f x host))%s", prov, p2p->load_median_us,
                 p2p->host_load_median_us, PROBE_NATIVE_LOAD_US, PROBE_HOST_FACTOR,
                 probe_self_test(in) ? "; SELF-TEST" : "");
        note_add(ns, "topology.peer_stores", "measured: probe, %s: the slowest peer flag against a flag through host "
                 "memory (topology.p2p's rule)%s", prov, probe_self_test(in) ? "; SELF-TEST" : "");
    }
    if (!probe_have_topo(in)) {
        if (in->cpu_vendor)
            util_buf_printf(out, "  cpu_vendor: %s\n", in->cpu_vendor);
        if (in->cpu_vendor)
            note_add(ns, "topology.cpu_vendor", "measured: probe, %s: /proc/cpuinfo", prov);
        return;
    }
    const dev_topo *t = in->topo;
    bool all_nv = n > 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            all_nv = all_nv && (i == j || t->path[i][j] == DEV_PATH_NV);
    util_buf_printf(out, "  interconnect: %s\n", all_nv ? "nvlink" : "pcie");
    note_add(ns, "topology.interconnect", "measured: probe, %s: NVML path types (%s)", prov,
             all_nv ? "NVLink between every pair" : "not NVLink between every pair");
    /* Sockets and switches describe the whole box: only a probe of every GPU can say them. */
    const int sockets = numa_sockets(r, n), per_switch = switch_groups(t, n);
    if (t->box_gpus == n && sockets > 0 && per_switch >= 0 && (per_switch == 0 || (n / sockets) % per_switch == 0)) {
        util_buf_printf(out, "  sockets: %d\n  gpus_per_switch: %d\n", sockets, per_switch);
        note_add(ns, "topology.sockets", "measured: probe, %s: NUMA nodes of the GPUs (NVML / sysfs)", prov);
        note_add(ns, "topology.gpus_per_switch", "measured: probe, %s: NVML PIX/PXB pairs", prov);
    }
    if (in->cpu_vendor) {
        util_buf_printf(out, "  cpu_vendor: %s\n", in->cpu_vendor);
        note_add(ns, "topology.cpu_vendor", "measured: probe, %s: /proc/cpuinfo", prov);
    }
    if (t->box_gpus >= n) {
        util_buf_printf(out, "gpus: %d\n", t->box_gpus);
        note_add(ns, "gpus", "measured: probe, %s: NVML device count", prov);
    }
    double gbs = 0;
    for (int i = 0; i < n; i++) {
        const double g = dev_pcie_gbs(t->pcie_max_gen[i], t->pcie_max_width[i]);
        gbs = i == 0 || g < gbs ? g : gbs;
    }
    if (gbs > 0) {
        util_buf_printf(out, "links:\n  pcie_gbs: %.4g\n", gbs);
        note_add(ns, "links.pcie_gbs", "measured: probe, %s: NVML max PCIe gen x width of the slowest GPU, at the "
                                       "spec per-lane rate",
                 prov);
    }
}

static void curves_text(const probe_input *in, const probe_p2p *p2p, const char *prov, util_buf *out, notes *ns)
{
    bool any = false;
    for (int k = 0; k < in->n_curves; k++)
        any = any || (in->curves[k].ran && in->curves[k].n > 0);
    if (!any)
        return;
    util_buf_printf(out, "measured:\n  use: true\n");
    for (int pass = 0; pass < 2; pass++) {
        bool opened = false;
        for (int k = 0; k < in->n_curves; k++) {
            const probe_curve *c = &in->curves[k];
            const bool ar = strncmp(c->key, "allreduce.", 10) == 0;
            if (!c->ran || c->n < 1 || ar != (pass == 0))
                continue;
            if (ar && !opened)
                util_buf_printf(out, "  allreduce:\n");
            opened = true;
            const char *ind = ar ? "      " : "    ";
            util_buf_printf(out, "%.*s%s:\n", ar ? 4 : 2, ind, ar ? c->key + 10 : c->key);
            util_buf_printf(out, "%sranks: %d\n%sp2p: %s\n%slaunch: %s\n%sbytes: [", ind, in->links->ranks, ind,
                            cfg_p2p_names[p2p->mode], ind, c->graph ? "graph" : "eager", ind);
            for (int i = 0; i < c->n; i++)
                util_buf_printf(out, "%s%.0f", i ? ", " : "", c->bytes[i]);
            util_buf_printf(out, "]\n%sus: [", ind);
            for (int i = 0; i < c->n; i++)
                util_buf_printf(out, "%s%.4g", i ? ", " : "", c->us[i]);
            char src[480];
            snprintf(src, sizeof(src), "measured: vpsim probe, %s, %d calls per size %s, max over ranks%s", prov,
                     c->iters, c->graph ? "in one CUDA graph" : "eager", probe_self_test(in) ? "; SELF-TEST" : "");
            util_buf_printf(out, "]\n%ssource: ", ind);
            put_quoted(out, src);
            util_buf_printf(out, "\n");
            char key[64];
            snprintf(key, sizeof(key), "measured.%s", c->key);
            note_add(ns, key, "measured: probe, %s, %d calls per size (%s), max over ranks", prov, c->iters,
                     c->graph ? "graph" : "eager");
        }
    }
}

/* "DATE, HOST, GPU" with the characters a YAML string or comment cannot hold made harmless. */
static void prov_text(const probe_input *in, char *buf, size_t len)
{
    snprintf(buf, len, "%s, %s, %s", in->date, in->host, in->links->device_name[0] ? in->links->device_name : "?");
    for (char *s = buf; *s; s++)
        if (*s == '"' || *s == '\\' || *s == '#' || *s == '\n')
            *s = '\'';
}

/* What NCCL said it built: its version and channels, into the nccl: section. */
static void nccl_log_text(const probe_input *in, const char *prov, util_buf *out, notes *ns)
{
    const comm_nccl_log *l = in->nccl_log;
    if (!l || (!l->version[0] && (l->channels <= 0 || in->links->ranks < 2)))
        return;
    util_buf_printf(out, "nccl:\n");
    if (l->version[0] && cfg_nccl_version_code(l->version) >= 0) {
        util_buf_printf(out, "  version: \"%s\"\n", l->version);
        note_add(ns, "nccl.version", "measured: probe, %s: NCCL's INFO log", prov);
    }
    /* A one-rank communicator's channels say nothing about a collective's (NCCL builds its maximum). */
    if (l->channels > 0 && in->links->ranks >= 2) {
        util_buf_printf(out, "  channels: %d\n", l->channels);
        note_add(ns, "nccl.channels", "measured: probe, %s: NCCL's INFO log (Channel NN/%02d)", prov, l->channels);
    }
}

static void header_text(const probe_input *in, const char *prov, const char *findings, util_buf *out)
{
    const exec_links_result *r = in->links;
    util_buf_printf(out, "# System file written by `vpsim probe` (%s; %d ranks)\n", prov, r->ranks);
    util_buf_printf(out, "#   base: %s (its values with the comments beside them, and its header below)\n", in->base);
    if (probe_self_test(in))
        util_buf_printf(out, "#   SELF-TEST: %s; the paths, launch and curve figures are not an interconnect's\n",
                        in->device == CFG_DEVICE_CPU ? "the CPU device" : "several ranks share one GPU");
    if (r->note[0])
        util_buf_printf(out, "#   note: %s\n", r->note);
    util_buf_printf(out, "#   compute: not probed (calibrate --measure times one GPU alone): run `vpsim calibrate "
                         "--measure` (one GPU, no mpirun) with this file as --system\n");
    util_buf_printf(out, "#   findings:\n");
    for (const char *s = findings; *s;) {
        const size_t len = strcspn(s, "\n");
        util_buf_printf(out, "#     - %.*s\n", (int)len, s);
        s += len + (s[len] == '\n');
    }
    if (probe_have_topo(in)) {
        const dev_topo *t = in->topo;
        util_buf_printf(out, "#   NVML topology (%d GPUs in the box):\n", t->box_gpus);
        for (int i = 0; i < r->paths.gpus; i++) {
            util_buf_printf(out, "#     GPU %d %s: NUMA %d, PCIe gen %d x%d now (max gen %d x%d), NVLink %s; paths:", i,
                            r->bus_id[i], r->numa[i], t->pcie_gen[i], t->pcie_width[i], t->pcie_max_gen[i],
                            t->pcie_max_width[i], t->nvlink[i] ? "active" : "none");
            for (int j = 0; j < r->paths.gpus; j++)
                if (j != i)
                    util_buf_printf(out, " %d:%s", j, dev_path_names[t->path[i][j]]);
            util_buf_printf(out, "\n");
        }
    }
    if (in->curves_skipped)
        util_buf_printf(out, "#   curves: not measured (--no-curves); the base's measured collective tables stay\n");
    for (int k = 0; k < in->n_curves; k++)
        if (!in->curves[k].ran)
            util_buf_printf(out, "#   curve %s: not measured: %s\n", in->curves[k].label, in->curves[k].why);
}

int probe_system_text(const probe_input *in, util_buf *out)
{
    char prov[320];
    prov_text(in, prov, sizeof(prov));
    probe_p2p p2p;
    probe_infer_p2p(in->links, &p2p);
    util_buf findings = {0}, fresh = {0}, header = {0};
    notes ns = {.n = 0};
    probe_findings(in, &p2p, &findings);
    paths_text(in, prov, findings.s, &fresh, &ns);
    launch_text(in, prov, &fresh, &ns);
    host_text(in, prov, &fresh, &ns);
    topology_text(in, &p2p, prov, &fresh, &ns);
    curves_text(in, &p2p, prov, &fresh, &ns);
    nccl_log_text(in, prov, &fresh, &ns);
    if (in->facts) {
        char by[400];
        snprintf(by, sizeof(by), "probe, %s", prov);
        ns.n += cal_facts_gpu_text(in->facts, by, &fresh, ns.v + ns.n, MAX_NOTES - ns.n);
    }
    header_text(in, prov, findings.s, &header);
    cal_facts_header(in->mismatch ? in->mismatch : "", in->base, &header);
    /* The probe measured this box: the base's paths and (when curves ran) its collective tables, which
     * may be another box's, are replaced whole; its compute tables stay. */
    static const char *const clear_all[] = {"paths", "measured.allreduce", "measured.allgather_nccl"};
    const cal_system_spec s = {.cmd = "probe", .base_opt = "base system file", .what = "the probed system file",
                               .base = in->base, .fresh_text = fresh.s, .header = header.s, .clear = clear_all,
                               .n_clear = in->curves_skipped ? 1 : 3, .notes = ns.v, .n_notes = ns.n,
                               .self_test = !probe_self_test(in)                ? NULL
                                            : in->device == CFG_DEVICE_CPU ? CAL_SELF_TEST_CPU
                                                                           : CAL_SELF_TEST_VIRTUAL};
    const int rc = cal_system_write(&s, out);
    notes_free(&ns);
    util_buf_free(&findings);
    util_buf_free(&fresh);
    util_buf_free(&header);
    return rc;
}

void probe_report(const probe_input *in, const char *out_path, util_buf *out)
{
    const exec_links_result *r = in->links;
    const int n = r->paths.gpus;
    probe_p2p p2p;
    probe_infer_p2p(r, &p2p);
    util_buf_printf(out, "vpsim probe: %d ranks on %s (%s, %s)%s\n", r->ranks, r->device_name, in->host, in->date,
                    probe_self_test(in) ? ", SELF-TEST: not an interconnect's figures" : "");
    if (r->paths.visible_us.n == n * n && n > 1) {
        util_buf_printf(out, "\npeer flag seen after, us (row stores, column polls; median of %d):\n%8s", r->reps, "");
        for (int j = 0; j < n; j++)
            util_buf_printf(out, " %7s%-2d", "GPU", j);
        util_buf_printf(out, "\n");
        for (int i = 0; i < n; i++) {
            util_buf_printf(out, "  GPU%-3d", i);
            for (int j = 0; j < n; j++) {
                const double v = r->paths.visible_us.v[i * n + j];
                if (i == j)
                    util_buf_printf(out, " %9s", "-");
                else if (probe_measured(v))
                    util_buf_printf(out, " %9.3g", v);
                else
                    util_buf_printf(out, " %9s", "n/a");
            }
            util_buf_printf(out, "\n");
        }
    }
    util_buf findings = {0};
    probe_findings(in, &p2p, &findings);
    util_buf_printf(out, "\ntopology.p2p: %s\nfindings:\n", cfg_p2p_names[p2p.mode]);
    for (const char *s = findings.s; s && *s;) {
        const size_t len = strcspn(s, "\n");
        util_buf_printf(out, "  - %.*s\n", (int)len, s);
        s += len + (s[len] == '\n');
    }
    util_buf_free(&findings);
    for (int k = 0; k < in->n_curves; k++) {
        const probe_curve *c = &in->curves[k];
        double lo = c->n > 0 ? c->us[0] : 0, hi = lo;
        for (int i = 1; i < c->n; i++) {
            lo = fmin(lo, c->us[i]);
            hi = fmax(hi, c->us[i]);
        }
        if (c->ran && c->n > 0)
            util_buf_printf(out, "curve %-18s %2d sizes %.0f-%.0f B: %.3g-%.4g us per call (%s)\n", c->label, c->n,
                            c->bytes[0], c->bytes[c->n - 1], lo, hi, c->graph ? "graph" : "eager");
        else
            util_buf_printf(out, "curve %-18s not measured: %s\n", c->label, c->why);
    }
    if (out_path)
        util_buf_printf(out, "\nwrote %s (load it with: vpsim model SCENARIO --system %s)\n", out_path, out_path);
}

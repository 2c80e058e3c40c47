/* Collectives per backend: NCCL's own tuning model over the box's link quantities, and the dispatch to
 * every family (vpsim's IPC kernels and host-staged MPI are in model_ipc.c, the link quantities in
 * model_links.c). Every formula is in docs/model.md ("Collectives"); every term is recorded for
 * --explain. */
#include "model_topo.h"

#include "../config/cfg_nccl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char model_skip_use[] = "measured.use is false";
const char model_skip_collectives[] = "measured.collectives is false";

/* ---------------- NCCL: what it runs (model_nccl.c, its latency tables too), priced from the links ---------------- */

/* The bytes' rate: channels x the slowest link's per-channel figure, up to the GPU's link; an SHM link
 * carries what one GPU stores into host memory and the next loads back, and that rate caps the ring. On
 * NVLink the system gives the per-GPU figure at NCCL's own channel count; a tuned count takes its share. */
static double nccl_bus_bw(const cfg_system *s, int n, model_terms *terms)
{
    const cfg_nccl_tuning *t = &s->nccl_tuning;
    const int channels = t->channels > 0 ? t->channels : s->nccl.channels;
    const char *ch_src = t->channels > 0 ? "scenario nccl.channels" : "system nccl.channels";
    if (s->topology.interconnect == CFG_IC_NVLINK) {
        if (t->channels <= 0 || s->nccl.channels <= 0) {
            model_term_add(terms, "busBw", s->nccl.nvlink_bw_gbs, "GB/s", "nccl.nvlink_bw_gbs (per GPU)");
            return s->nccl.nvlink_bw_gbs;
        }
        const double per_channel = s->nccl.nvlink_bw_gbs / s->nccl.channels;
        const double bw = fmin(channels * per_channel, s->nccl.nvlink_bw_gbs);
        model_term_add(terms, "busBw", bw, "GB/s", "min(%s %d x nvlink_bw_gbs %.1f / system channels %d, %.1f)",
                       ch_src, channels, s->nccl.nvlink_bw_gbs, s->nccl.channels, s->nccl.nvlink_bw_gbs);
        return bw;
    }
    double path_bw = s->nccl.pci_bw_gbs;
    for (int r = 0; r < n && n > 1; r++)
        if (model_topo_path_type(s, r, (r + 1) % n) == MODEL_PATH_SYS)
            path_bw = fmin(s->nccl.pci_bw_gbs, s->nccl.sys_bw_gbs);
    double bw = fmin(channels * path_bw, s->nccl.pci_bw_gbs);
    model_term_add(terms, "busBw", bw, "GB/s", "min(%s %d x %.1f GB/s (nccl.pci_bw_gbs / sys_bw_gbs), pci_bw_gbs %.1f)",
                   ch_src, channels, path_bw, s->nccl.pci_bw_gbs);
    for (int r = 0; r < n && n > 1; r++)
        if (model_nccl_pair_shm(s, r, (r + 1) % n, n)) {
            const char *src = "";
            const double g = model_link_host_path_gbs(s, r, (r + 1) % n, &src);
            if (g < bw) {
                bw = g;
                model_term_add(terms, "shm_bw", g, "GB/s", "ring link %d -> %d through host memory caps the rate: %s", r,
                               (r + 1) % n, src);
            }
        }
    return bw;
}

/* The scenario's tuning in NCCL's own terms: the variables the replay sets (min and max channels merged). */
static void tuning_term(const cfg_nccl_tuning *t, model_terms *terms)
{
    cfg_nccl_env_pair env[CFG_NCCL_ENV_MAX];
    char why[256], text[112] = "";
    const int n = cfg_nccl_env(t, 0, env, why, sizeof(why));
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof(text); i++) {
        if (strcmp(env[i].name, "NCCL_MAX_NCHANNELS") == 0)
            continue;
        const char *name = strcmp(env[i].name, "NCCL_MIN_NCHANNELS") == 0 ? "NCCL_MIN/MAX_NCHANNELS" : env[i].name;
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s=%s", len ? " " : "", name, env[i].value);
    }
    model_term_add(terms, "nccl_tuning", n, "vars", "%s", text);
}

/* For --explain: NCCL's rules on this box (transport, level, search). */
static void rules_terms(const cfg_system *s, int n, const model_nccl_graph *g, const model_ring_links *l,
                        model_terms *terms)
{
    if (!terms || n < 2)
        return;
    const char *why = "";
    const int level = model_nccl_p2p_level(s, n, &why);
    model_term_add(terms, "p2p_level", level, "path", "NCCL %s: P2P up to %s (%s)", s->nccl.version ? s->nccl.version : "?",
                   level < 0 ? "none (LOC)" : model_path_type_names[level], why);
    model_term_add(terms, "transports", l->counts[MODEL_NCCL_SHM] + l->counts[MODEL_NCCL_NET], "links",
                   "ring links: %d P2P, %d SHM, %d NET", l->counts[0], l->counts[1], l->counts[2]);
    if (s->topology.interconnect != CFG_IC_NVLINK)
        model_term_add(terms, "search", g->bw_gbs, "GB/s", "%s: ring bottleneck %.1f GB/s vs %s -> %d channel(s) x %.3g "
                       "GB/s, %d after Postset", g->fallback ? "no speed fits, 'falling back to simple order'" : "searched",
                       g->bottleneck_gbs, g->speeds, g->search_channels, g->bw_gbs, g->channels);
    model_term_add(terms, "ring_link_latency", l->mean, "us", "mean step over %d ring links (%.2f..%.2f): %s%s%s%s%s", l->n,
                   l->lo, l->hi, l->src[0] ? "P2P " : "", l->src[0] ? l->src[0] : "", l->src[1] ? "; SHM " : "",
                   l->src[1] ? l->src[1] : "", l->src[2] ? "; NET by host copies" : "");
    if (s->paths.gpus > 0 && s->paths.source && *s->paths.source)
        model_term_add(terms, "paths_source", s->paths.gpus, "GPUs", "%s", s->paths.source);
}

double model_nccl_formula_us(const cfg_system *s, plan_op_kind kind, double bytes, int n, model_terms *terms,
                             char *algo_proto)
{
    const bool allreduce = kind == PLAN_OP_ALLREDUCE;
    /* NCCL's reduce-scatter is a ring of n-1 steps like its all-gather (tree is allreduce-only), and
     * its tuning model times the whole send buffer, which is the payload here. */
    const bool whole = allreduce || kind == PLAN_OP_REDUCE_SCATTER;
    const cfg_nccl_tuning *tune = &s->nccl_tuning;
    const double nbytes = whole ? bytes : bytes * n; /* all-gather: n x the contribution */
    model_nccl_graph g;
    model_nccl_search(s, n, &g);
    int a, p;
    model_nccl_choose(s, &g, allreduce, nbytes, n, &a, &p, terms);
    model_ring_links links;
    model_ring_links_read(s, n, p, &links);
    rules_terms(s, n, &g, &links, terms);
    if (terms && cfg_nccl_tuned(tune))
        tuning_term(tune, terms);
    /* The choice priced: NCCL's base latency (its kernel's fixed cost), the steps over the box's links,
     * the bytes at the links' rate with the protocol's share of it. */
    const double bus_bw = nccl_bus_bw(s, n, terms);
    double bw, lat;
    if (a == MODEL_NCCL_RING) {
        const int nsteps = allreduce ? 2 * (n - 1) : n - 1;
        bw = p == MODEL_NCCL_LL ? fmin(s->nccl.ll_max_bw_gbs, bus_bw * 0.5) : p == MODEL_NCCL_LL128 ? bus_bw * 0.92 : bus_bw;
        bw *= (double)n / nsteps;
        lat = model_nccl_base_lat(a, p) + nsteps * links.mean;
    } else {
        bw = bus_bw * 0.92;
        bw = p == MODEL_NCCL_LL ? fmin(bw / 3.8, s->nccl.ll_max_bw_gbs) : p == MODEL_NCCL_LL128 ? bw * 7.0 / 9.0 : bw;
        bw *= 0.5;
        lat = model_nccl_base_lat(a, p) + 2.0 * (n - 1) * links.mean;
    }
    const double t = lat + nbytes / (1000.0 * bw);
    if (algo_proto)
        snprintf(algo_proto, 16, "%s/%s", model_nccl_algo_names[a], model_nccl_proto_names[p]);
    model_term_add(terms, "nccl_formula", t, "us", "%s/%s (NCCL's choice%s): lat %.2f (base %.1f + %s x step %.2f) + %.0f B "
                   "/ (1000 x algbw %.3g GB/s)", model_nccl_algo_names[a], model_nccl_proto_names[p],
                   tune->protocol != CFG_NCCL_PROTO_AUTO || (allreduce && tune->algorithm != CFG_NCCL_ALGO_AUTO)
                       ? " within the scenario's nccl.protocol/nccl.algorithm"
                       : "",
                   lat, model_nccl_base_lat(a, p), a == MODEL_NCCL_RING ? "nsteps" : "2 (n-1)", links.mean, nbytes, bw);
    return t;
}

/* ---------------- dispatch ---------------- */

bool model_backend_available(const cfg_system *s, cfg_backend be, int ranks, char *reason, size_t len)
{
    if (be == CFG_BACKEND_NONE)
        return true;
    if (be == CFG_BACKEND_MODEL) {
        snprintf(reason, len, "replay-only: `vpsim run --backend model` replaces collectives with delays from "
                              "this model; in model mode it is the other backends");
        return false;
    }
    if (ranks > s->gpus) {
        snprintf(reason, len, "TP=%d needs %d GPUs; system %s has %d (use --backend none to model one rank's compute)",
                 ranks, ranks, s->name ? s->name : "?", s->gpus);
        return false;
    }
    if (ranks > MODEL_MAX_RANKS) {
        snprintf(reason, len, "model mode handles at most %d ranks", MODEL_MAX_RANKS);
        return false;
    }
    if (ranks < 2)
        return true; /* no collectives at all */
    if (be == CFG_BACKEND_NCCL_SYMM && s->topology.interconnect != CFG_IC_NVLINK) {
        snprintf(reason, len, "NCCL symmetric-memory kernels need every rank in one NVLink domain; %s is PCIe-only",
                 s->name ? s->name : "this system");
        return false;
    }
    const cfg_peer_use use = cfg_backend_peer_use(be);
    const bool ipc = use != CFG_PEER_USE_NONE;
    if (ipc && s->topology.p2p == CFG_P2P_DIRECT &&
        (s->topology.peer_stores == CFG_PEER_OFF || (use == CFG_PEER_USE_LOADS && s->topology.peer_loads == CFG_PEER_OFF))) {
        snprintf(reason, len, "%s needs the platform to carry peer %s; system.topology.peer_%s=off", cfg_backend_names[be],
                 s->topology.peer_stores == CFG_PEER_OFF ? "stores (its flags)" : "loads",
                 s->topology.peer_stores == CFG_PEER_OFF ? "stores" : "loads");
        return false;
    }
    if (ipc && s->topology.p2p == CFG_P2P_OFF) {
        snprintf(reason, len, "%s needs GPU peer loads/stores; system.topology.p2p=off (try "
                              "--set system.topology.p2p=sysmem to stage through host memory)",
                 cfg_backend_names[be]);
        return false;
    }
    return true;
}

typedef struct formula_ctx {
    const cfg_system *s;
    cfg_backend be;
    plan_op_kind kind;
    int n;
    double known_bytes, known_us; /* the formula at the asked size, already computed: not priced twice */
} formula_ctx;

/* One formula per family of backends (CFG_BACKEND_LIST's `family` column picks it). */
typedef double (*formula_fn)(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n,
                             model_terms *terms, char *method, size_t mlen);

static double formula_nccl(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n,
                           model_terms *terms, char *method, size_t mlen)
{
    (void)be;
    int shm = 0;
    for (int r = 0; n > 1 && r < n; r++)
        shm += model_nccl_pair_shm(s, r, (r + 1) % n, n);
    char ap[16];
    double t = model_nccl_formula_us(s, kind, S, n, terms, ap);
    if (shm > 0)
        model_term_add(terms, "shm_transport", shm, "links", "%d of %d ring links through host memory: their steps "
                       "wait for a flag there (paths.host_visible_us or derived)", shm, n);
    snprintf(method, mlen, "formula: NCCL tuning model, %s over %s%s", ap,
             shm == 0 ? (s->topology.interconnect == CFG_IC_NVLINK ? "NVLink" : "P2P")
                      : (shm == n ? "SHM (host memory)" : "P2P + SHM"),
             cfg_nccl_tuned(&s->nccl_tuning) ? ", scenario nccl: tuning" : "");
    return t;
}

static double formula_symm(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n,
                           model_terms *terms, char *method, size_t mlen)
{
    (void)be;
    snprintf(method, mlen, "formula: symmetric one-shot over NVLink");
    return model_nccl_symm_us(s, kind, S, n, terms);
}

static double formula_ipc(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n,
                          model_terms *terms, char *method, size_t mlen)
{
    snprintf(method, mlen, "formula: %s over %s", cfg_backend_names[be],
             s->topology.p2p == CFG_P2P_SYSMEM ? "host memory (p2p=sysmem)"
             : s->topology.interconnect == CFG_IC_NVLINK ? "NVLink"
                                                          : "direct PCIe P2P");
    /* Each call is one kernel: it pays a kernel's fixed start and finish before and after its chain
     * of barriers and transfers (NCCL's tuning base latencies and symm_base_us include theirs). */
    model_term_add(terms, "kernel_floor", s->gpu.kernel_floor_us, "us", "gpu.kernel_floor_us: one kernel per call");
    return s->gpu.kernel_floor_us + model_ipc_us(s, be, kind, S, n, terms);
}

static double formula_host(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n,
                           model_terms *terms, char *method, size_t mlen)
{
    (void)be;
    snprintf(method, mlen, "formula: host-staged MPI");
    return model_mpi_us(s, kind, S, n, terms);
}

static double formula_none(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n,
                           model_terms *terms, char *method, size_t mlen)
{
    (void)s, (void)be, (void)kind, (void)S, (void)n, (void)terms;
    snprintf(method, mlen, "no communication");
    return 0.0;
}

#define FAMILY(ID, name, key, where, policy, table, family, ...) [CFG_BACKEND_##ID] = formula_##family,
static const formula_fn formula_of[CFG_BACKEND_COUNT] = {CFG_BACKEND_LIST(FAMILY)};
#undef FAMILY

static double backend_formula(const cfg_system *s, cfg_backend be, plan_op_kind kind, double S, int n,
                              model_terms *terms, char *method, size_t mlen)
{
    return formula_of[be](s, be, kind, S, n, terms, method, mlen);
}

static double formula_cb(void *vctx, double bytes)
{
    const formula_ctx *c = vctx;
    if (bytes == c->known_bytes)
        return c->known_us;
    char m[96];
    return backend_formula(c->s, c->be, c->kind, bytes, c->n, NULL, m, sizeof(m));
}

/* The measured table for this collective, if one applies: same group size and p2p setting as measured. */
static const cfg_sys_table *measured_table(const cfg_system *s, cfg_backend be, plan_op_kind kind, int n,
                                           model_terms *terms, const char **skipped)
{
    const cfg_sys_table *t = NULL;
    if (kind == PLAN_OP_REDUCE_SCATTER)
        return NULL; /* no measured reduce-scatter tables: the formula */
    if (kind == PLAN_OP_ALLGATHER)
        t = be == CFG_BACKEND_NCCL ? &s->measured.allgather_nccl : NULL;
    else if (cfg_backend_has_table(be))
        t = &s->measured.allreduce[be];
    if (!t || t->n_bytes == 0 || t->n_bytes != t->n_us)
        return NULL;
    const char *skip = NULL;
    if (!s->measured.use)
        skip = model_skip_use;
    else if (!s->measured.collectives)
        skip = model_skip_collectives;
    else if (t->ranks != 0 && t->ranks != n)
        skip = "measured at another group size";
    else if (t->p2p != 0 && t->p2p - 1 != s->topology.p2p)
        skip = "measured under another topology.p2p";
    else if (be == CFG_BACKEND_NCCL && cfg_nccl_tuned(&s->nccl_tuning))
        skip = "measured with NCCL's defaults; the scenario sets nccl.* tuning";
    else if (be == CFG_BACKEND_NCCL && (s->nccl.p2p_level != CFG_NCCL_LEVEL_AUTO || s->nccl.p2p_disable ||
                                        s->nccl.shm_disable || s->nccl.graph_bw_gbs > 0))
        skip = "measured with NCCL's default transports; system.nccl.p2p_level/p2p_disable/shm_disable/graph_bw_gbs "
               "change them";
    if (skip) {
        model_term_add(terms, "measured_skip", t->n_bytes, "points", "a measured table exists but is not used: %s "
                       "(ranks %d, p2p %s)", skip, t->ranks, cfg_table_p2p_names[t->p2p]);
        *skipped = skip;
        return NULL;
    }
    return t;
}

void model_collective(const cfg_system *s, cfg_backend be, plan_op_kind kind, double bytes, int ranks,
                      model_terms *terms, model_coll *out)
{
    memset(out, 0, sizeof(*out));
    if (!model_backend_available(s, be, ranks, out->reason, sizeof(out->reason)))
        return;
    out->available = true;
    if (be == CFG_BACKEND_NONE || ranks < 2) {
        snprintf(out->method, sizeof(out->method), ranks < 2 ? "one rank: no communication" : "no communication");
        return;
    }
    model_term_add(terms, "payload", bytes, "B", "%s per rank, %d ranks", plan_op_kind_names[kind], ranks);
    if (kind == PLAN_OP_ALLTOALL) { /* no measured table: those are allreduce / all-gather sweeps */
        out->us = model_alltoall_us(s, be, bytes, ranks, terms, out->method, sizeof(out->method));
        return;
    }
    if (kind == PLAN_OP_ALLREDUCE_NORM) {
        /* Its collective is an allreduce (formula and measured table); the norm part is model_norm_part_us. */
        model_term_add(terms, "allreduce_part", bytes, "B", "allreduce_norm: the allreduce here, the residual add + "
                       "norm costed apart (fused epilogue or separate kernel)");
        kind = PLAN_OP_ALLREDUCE;
    }
    const double f = backend_formula(s, be, kind, bytes, ranks, terms, out->method, sizeof(out->method));
    const cfg_sys_table *t = measured_table(s, be, kind, ranks, terms, &out->table_skip);
    out->table = t;
    if (!t) {
        out->us = f;
        return;
    }
    formula_ctx c = {s, be, kind, ranks, bytes, f};
    out->us = model_table_eval(t, bytes, formula_cb, &c);
    model_term_add(terms, "measured", out->us, "us", "measured table (%d point%s) overrides the formula %.2f us",
                   t->n_bytes, t->n_bytes == 1 ? "" : "s", f);
    snprintf(out->method, sizeof(out->method), "measured table (%d point%s; formula would give %.1f us)", t->n_bytes,
             t->n_bytes == 1 ? "" : "s", f);
}

bool model_backend_host_staged(cfg_backend be) { return formula_of[be] == formula_host; }

bool model_backend_fuses_norm(cfg_backend be) { return cfg_backend_fuses_norm(be); }

double model_norm_part_us(const cfg_system *s, bool fused, const plan_op *op, bool in_l2, model_terms *terms)
{
    /* The norm an unfused plan would hold: the same rows, the same activation type. */
    plan_op norm = {.kind = PLAN_OP_NORM, .m = op->m, .n = op->n, .adtype = op->adtype, .batch = 1, .ranks = op->ranks};
    plan_op_finalize(&norm);
    if (!fused) {
        model_term_add(terms, "separate_norm", 0.0, "", "no fused kernel: the norm runs as its own kernel after the "
                       "collective, with its own launch gap");
        return model_op_us(s, &norm, in_l2, terms, NULL);
    }
    /* In the epilogue the reduced rows are already in registers: the kernel reads the residual and the
     * weight, and writes the residual and the normalised rows once each. */
    const double ab = cfg_dtype_bytes(op->adtype);
    const double bytes = (3.0 * (double)op->m * (double)op->n + (double)op->n) * ab;
    const double bw = in_l2 ? s->gpu.l2_bw_gbs * 1e3 : s->gpu.mem_bw_gbs * s->gpu.mem_efficiency * 1e3;
    const double t = bytes / bw;
    model_term_add(terms, "epilogue_bytes", bytes, "B",
                   "derived: (3 x m %lld x n %lld + n) x %.0f B: residual read and written, normalised rows written, "
                   "weight read", op->m, op->n, ab);
    model_term_add(terms, "epilogue", t, "us", "epilogue_bytes / %s %.0f GB/s; inside the collective's kernel: no "
                   "launch, no kernel floor", in_l2 ? "gpu.l2_bw_gbs" : "gpu.mem_bw_gbs x mem_efficiency", bw / 1e3);
    return t;
}

double model_collective_launch_us(const cfg_system *s, cfg_backend be)
{
    /* NCCL plans every call on the host (group, algorithm choice, work upload) before its kernel
     * launch; vpsim's IPC kernels are one plain kernel launch, like any compute op. */
    return cfg_backend_launch(be) == CFG_LAUNCH_PLANNED ? s->launch.eager_collective_us : s->launch.eager_us;
}

void model_bench_call(const cfg_system *s, cfg_backend be, plan_op_kind kind, double bytes, int ranks, bool graph,
                      model_coll *out)
{
    model_collective(s, be, kind, bytes, ranks, NULL, out);
    if (!out->available)
        return;
    const double t = out->us;
    char how[64];
    /* The same launch terms as a cycle (model_cycle.c, docs/model.md "Launch costs"), for a stream of
     * identical calls: a graph pays one node gap per call; eager launches run ahead of the GPU, so a
     * call costs the GPU's gap plus its time unless the host's launch is longer; a host-staged
     * collective waits for the GPU and cannot be captured, so it costs its own time. */
    if (model_backend_host_staged(be)) {
        snprintf(how, sizeof(how), "; host-staged, eager");
    } else if (graph) {
        out->us = t + s->launch.graph_node_us;
        snprintf(how, sizeof(how), "; + launch.graph_node_us");
    } else {
        const double gpu = t + s->launch.eager_gap_us, host = model_collective_launch_us(s, be);
        out->us = gpu > host ? gpu : host;
        snprintf(how, sizeof(how), gpu >= host ? "; + launch.eager_gap_us" : "; host-bound: eager launch");
    }
    size_t n = strlen(out->method);
    snprintf(out->method + n, sizeof(out->method) - n, "%s", how);
}

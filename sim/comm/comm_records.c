/* Registration records and topology summaries for the custom allreduce backends (plain C, no CUDA):
 * see comm_custom.h. The packed form is explicit little-endian with a trailing FNV-1a checksum, so a
 * rank running a different binary (other layout) or a corrupted exchange fails with a clear message. */
#include "comm_custom.h"

#include <stdio.h>
#include <string.h>

const char *const comm_reg_kind_names[] = {"signal", "scratch", "stage", "send", "recv", NULL};
const char *const comm_reg_handle_names[] = {"cuda-ipc", "shm", NULL};

/* magic, version, rank, world, device, pid, n_regions: 7 x u32; host 64; bus 32;
 * per region: present u32, handle kind u32, offset u64, bytes u64, handle 64; checksum u32. */
#define REG_HEADER_BYTES (7 * 4 + 64 + 32)
#define REG_REGION_BYTES (4 + 4 + 8 + 8 + COMM_REG_HANDLE_BYTES)

size_t comm_reg_packed_bytes(void) { return REG_HEADER_BYTES + COMM_REG_REGIONS * REG_REGION_BYTES + 4; }

static uint32_t fnv1a(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return p + 4;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return p + 8;
}

static const unsigned char *get_u32(const unsigned char *p, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++)
        *v |= (uint32_t)p[i] << (8 * i);
    return p + 4;
}

static const unsigned char *get_u64(const unsigned char *p, uint64_t *v)
{
    *v = 0;
    for (int i = 0; i < 8; i++)
        *v |= (uint64_t)p[i] << (8 * i);
    return p + 8;
}

/* Fixed-width string field: copied with a guaranteed terminator (the sender's may be full). */
static unsigned char *put_str(unsigned char *p, const char *s, size_t width)
{
    memset(p, 0, width);
    size_t n = strnlen(s, width - 1);
    memcpy(p, s, n);
    return p + width;
}

/* A segment name the peer may pass to shm_open: "/" then 1..62 characters, none of them '/', NUL
 * inside the field; and a region that does not wrap around the address space. */
static int check_shm_region(const comm_reg_region *g, int k, char *why, size_t why_len)
{
    const char *name = (const char *)g->handle;
    const size_t n = strnlen(name, COMM_REG_HANDLE_BYTES);
    if (n == COMM_REG_HANDLE_BYTES || n < 2 || name[0] != '/' || strchr(name + 1, '/')) {
        snprintf(why, why_len,
                 "registration message: region %s: shm segment name is not \"/name\" (NUL-terminated, no other "
                 "'/')",
                 comm_reg_kind_names[k]);
        return -1;
    }
    if (g->bytes == 0 || g->offset > UINT64_MAX - g->bytes) {
        snprintf(why, why_len, "registration message: region %s: offset %llu + %llu bytes is out of range",
                 comm_reg_kind_names[k], (unsigned long long)g->offset, (unsigned long long)g->bytes);
        return -1;
    }
    return 0;
}

size_t comm_reg_pack(const comm_reg_record *r, unsigned char *buf, size_t len)
{
    const size_t need = comm_reg_packed_bytes();
    if (len < need)
        return 0;
    unsigned char *p = buf;
    p = put_u32(p, COMM_REG_MAGIC);
    p = put_u32(p, COMM_REG_VERSION);
    p = put_u32(p, (uint32_t)r->rank);
    p = put_u32(p, (uint32_t)r->world);
    p = put_u32(p, (uint32_t)r->device);
    p = put_u32(p, (uint32_t)r->pid);
    p = put_u32(p, COMM_REG_REGIONS);
    p = put_str(p, r->host, sizeof(r->host));
    p = put_str(p, r->bus_id, sizeof(r->bus_id));
    for (int k = 0; k < COMM_REG_REGIONS; k++) {
        const comm_reg_region *g = &r->region[k];
        p = put_u32(p, g->present ? 1u : 0u);
        p = put_u32(p, g->present ? (uint32_t)g->handle_kind : 0u);
        p = put_u64(p, g->present ? g->offset : 0);
        p = put_u64(p, g->present ? g->bytes : 0);
        if (g->present)
            memcpy(p, g->handle, COMM_REG_HANDLE_BYTES);
        else
            memset(p, 0, COMM_REG_HANDLE_BYTES);
        p += COMM_REG_HANDLE_BYTES;
    }
    p = put_u32(p, fnv1a(buf, (size_t)(p - buf)));
    return (size_t)(p - buf);
}

int comm_reg_unpack(const unsigned char *buf, size_t len, comm_reg_record *r, char *why, size_t why_len)
{
    memset(r, 0, sizeof(*r));
    const size_t need = comm_reg_packed_bytes();
    if (len < need) {
        snprintf(why, why_len, "registration message is %zu bytes, expected %zu", len, need);
        return -1;
    }
    uint32_t magic, version, rank, world, device, pid, n_regions, sum;
    const unsigned char *p = buf;
    p = get_u32(p, &magic);
    p = get_u32(p, &version);
    if (magic != COMM_REG_MAGIC || version != COMM_REG_VERSION) {
        snprintf(why, why_len,
                 "registration message has magic 0x%08x version %u, expected 0x%08x version %u (do all ranks run "
                 "the same vpsim binary?)",
                 magic, version, COMM_REG_MAGIC, COMM_REG_VERSION);
        return -1;
    }
    get_u32(buf + need - 4, &sum);
    if (sum != fnv1a(buf, need - 4)) {
        snprintf(why, why_len, "registration message checksum mismatch (corrupted exchange)");
        return -1;
    }
    p = get_u32(p, &rank);
    p = get_u32(p, &world);
    p = get_u32(p, &device);
    p = get_u32(p, &pid);
    p = get_u32(p, &n_regions);
    if (n_regions != COMM_REG_REGIONS || (int32_t)world < 1 || (int32_t)world > COMM_MAX_RANKS ||
        (int32_t)rank < 0 || (int32_t)rank >= (int32_t)world) {
        snprintf(why, why_len, "registration message out of range: rank %d, world %d, %u regions",
                 (int32_t)rank, (int32_t)world, n_regions);
        return -1;
    }
    r->rank = (int32_t)rank;
    r->world = (int32_t)world;
    r->device = (int32_t)device;
    r->pid = (int32_t)pid;
    memcpy(r->host, p, sizeof(r->host));
    r->host[sizeof(r->host) - 1] = '\0';
    p += sizeof(r->host);
    memcpy(r->bus_id, p, sizeof(r->bus_id));
    r->bus_id[sizeof(r->bus_id) - 1] = '\0';
    p += sizeof(r->bus_id);
    for (int k = 0; k < COMM_REG_REGIONS; k++) {
        comm_reg_region *g = &r->region[k];
        uint32_t present, kind;
        p = get_u32(p, &present);
        p = get_u32(p, &kind);
        p = get_u64(p, &g->offset);
        p = get_u64(p, &g->bytes);
        memcpy(g->handle, p, COMM_REG_HANDLE_BYTES);
        p += COMM_REG_HANDLE_BYTES;
        if (present > 1 || kind >= COMM_REG_HANDLE_KINDS || (!present && kind != 0)) {
            snprintf(why, why_len, "registration message: region %s has present=%u, handle kind %u",
                     comm_reg_kind_names[k], present, kind);
            return -1;
        }
        g->present = present == 1;
        g->handle_kind = (int)kind;
        if (g->present && kind == COMM_REG_HANDLE_SHM && check_shm_region(g, k, why, why_len))
            return -1;
    }
    return 0;
}

int comm_reg_check_set(const comm_reg_record *recs, int world, char *why, size_t why_len)
{
    for (int r = 0; r < world; r++) {
        const comm_reg_record *x = &recs[r];
        if (x->rank != r || x->world != world) {
            snprintf(why, why_len, "registration from slot %d says rank %d of %d, expected rank %d of %d", r, x->rank,
                     x->world, r, world);
            return -1;
        }
        if (strcmp(x->host, recs[0].host) != 0) {
            snprintf(why, why_len,
                     "rank %d is on host %s but rank 0 is on %s: CUDA IPC and shared memory map memory only between "
                     "processes of one host (use nccl across hosts)",
                     r, x->host, recs[0].host);
            return -1;
        }
        for (int k = 0; k < COMM_REG_REGIONS; k++) {
            const comm_reg_region *a = &recs[0].region[k], *b = &x->region[k];
            if (a->present != b->present || (a->present && a->bytes != b->bytes)) {
                snprintf(why, why_len,
                         "rank %d registered %s buffer %s (%llu bytes) but rank 0 %s (%llu bytes): every rank must "
                         "run the same plan",
                         r, comm_reg_kind_names[k], b->present ? "present" : "absent", (unsigned long long)b->bytes,
                         a->present ? "present" : "absent", (unsigned long long)a->bytes);
                return -1;
            }
            if (a->present && a->handle_kind != b->handle_kind) {
                snprintf(why, why_len,
                         "rank %d registered its %s buffer as %s but rank 0 as %s: every rank must run with the same "
                         "--p2p",
                         r, comm_reg_kind_names[k], comm_reg_handle_names[b->handle_kind],
                         comm_reg_handle_names[a->handle_kind]);
                return -1;
            }
        }
    }
    return 0;
}

uint64_t comm_reg_segment_bytes(const comm_reg_record *r, int k)
{
    if (k < 0 || k >= COMM_REG_REGIONS || !r->region[k].present || r->region[k].handle_kind != COMM_REG_HANDLE_SHM)
        return 0;
    uint64_t end = 0;
    for (int j = 0; j < COMM_REG_REGIONS; j++) {
        const comm_reg_region *g = &r->region[j];
        if (g->present && g->handle_kind == COMM_REG_HANDLE_SHM &&
            strncmp((const char *)g->handle, (const char *)r->region[k].handle, COMM_REG_HANDLE_BYTES) == 0 &&
            g->offset + g->bytes > end)
            end = g->offset + g->bytes;
    }
    return end;
}

void comm_topo_from_records(comm_topo *t, const comm_reg_record *recs, int world)
{
    memset(t, 0, sizeof(*t));
    memset(t->access, -1, sizeof(t->access));
    memset(t->perf_rank, -1, sizeof(t->perf_rank));
    memset(t->atomics, -1, sizeof(t->atomics));
    t->world = world;
    int first_rank[COMM_MAX_RANKS]; /* of each GPU */
    for (int r = 0; r < world && r < COMM_MAX_RANKS; r++) {
        int g = 0;
        while (g < t->n_gpus && strcmp(recs[first_rank[g]].bus_id, recs[r].bus_id) != 0)
            g++;
        if (g == t->n_gpus)
            first_rank[t->n_gpus++] = r;
        t->gpu[r] = g;
        t->ranks_on_gpu[g]++;
    }
}

bool comm_topo_virtual(const comm_topo *t) { return t->n_gpus < t->world; }

bool comm_topo_all_p2p(const comm_topo *t)
{
    for (int i = 0; i < t->n_gpus; i++)
        for (int j = 0; j < t->n_gpus; j++)
            if (i != j && t->access[i][j] != 1)
                return false;
    return true;
}

const char *comm_topo_summary(const comm_topo *t, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%d rank%s on %d GPU%s", t->world, t->world == 1 ? "" : "s", t->n_gpus,
                     t->n_gpus == 1 ? "" : "s");
    if (comm_topo_virtual(t)) {
        int most = 0;
        for (int g = 0; g < t->n_gpus; g++)
            most = t->ranks_on_gpu[g] > most ? t->ranks_on_gpu[g] : most;
        n += snprintf(buf + n, n < (int)len ? len - (size_t)n : 0, " (virtual ranks: up to %d per GPU)", most);
    }
    if (t->n_gpus < 2)
        return buf;
    int bad_i = -1, bad_j = -1, unknown = 0, atomics = 0, pairs = 0, best = 127, worst = -1;
    for (int i = 0; i < t->n_gpus; i++)
        for (int j = 0; j < t->n_gpus; j++) {
            if (i == j)
                continue;
            pairs++;
            if (t->access[i][j] == 0 && bad_i < 0)
                bad_i = i, bad_j = j;
            unknown += t->access[i][j] < 0;
            atomics += t->atomics[i][j] == 1;
            if (t->perf_rank[i][j] >= 0) {
                best = t->perf_rank[i][j] < best ? t->perf_rank[i][j] : best;
                worst = t->perf_rank[i][j] > worst ? t->perf_rank[i][j] : worst;
            }
        }
    if (n >= (int)len)
        return buf;
    if (bad_i >= 0)
        n += snprintf(buf + n, len - (size_t)n, "; no P2P access from GPU %d to GPU %d", bad_i, bad_j);
    else if (unknown)
        n += snprintf(buf + n, len - (size_t)n, "; P2P access unknown for %d of %d GPU pairs", unknown, pairs);
    else
        n += snprintf(buf + n, len - (size_t)n, "; P2P access all %d GPU pairs", pairs);
    if (n < (int)len)
        n += snprintf(buf + n, len - (size_t)n, "; native P2P atomics %d of %d pairs", atomics, pairs);
    if (n < (int)len && worst >= 0)
        snprintf(buf + n, len - (size_t)n, "; P2P perf rank %d..%d", best, worst);
    return buf;
}

/* Registration records of the custom allreduce backends (the message every rank contributes to the
 * MPI_Allgather at init) and the topology summary built from them. Plain C: no MPI, no GPU. */
#include "../../sim/comm/comm_custom.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static comm_reg_record sample(int rank, int world, const char *host, const char *bus)
{
    comm_reg_record r;
    memset(&r, 0, sizeof(r));
    r.rank = rank;
    r.world = world;
    r.device = rank % 2;
    r.pid = 1000 + rank;
    snprintf(r.host, sizeof(r.host), "%s", host);
    snprintf(r.bus_id, sizeof(r.bus_id), "%s", bus);
    for (int k = 0; k < COMM_REG_REGIONS; k++) {
        if (k == COMM_REG_SCRATCH)
            continue; /* one absent region */
        r.region[k].present = true;
        for (int i = 0; i < COMM_REG_HANDLE_BYTES; i++)
            r.region[k].handle[i] = (unsigned char)(i * 7 + k * 31 + rank);
        r.region[k].offset = (uint64_t)k * 256;
        r.region[k].bytes = 43008 + (uint64_t)k;
    }
    return r;
}

static size_t packed(const comm_reg_record *r, unsigned char *buf)
{
    size_t n = comm_reg_pack(r, buf, comm_reg_packed_bytes());
    cr_assert_eq(n, comm_reg_packed_bytes());
    return n;
}

Test(comm_reg, pack_unpack_round_trip)
{
    comm_reg_record a = sample(3, 8, "gpubox-01", "0000:c1:00.0"), b;
    unsigned char buf[1024];
    cr_assert_leq(comm_reg_packed_bytes(), sizeof(buf));
    size_t n = packed(&a, buf);
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, n, &b, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(b.rank, 3);
    cr_assert_eq(b.world, 8);
    cr_assert_eq(b.device, 1);
    cr_assert_eq(b.pid, 1003);
    cr_assert_str_eq(b.host, "gpubox-01");
    cr_assert_str_eq(b.bus_id, "0000:c1:00.0");
    for (int k = 0; k < COMM_REG_REGIONS; k++) {
        cr_assert_eq(b.region[k].present, a.region[k].present, "region %s", comm_reg_kind_names[k]);
        cr_assert_eq(b.region[k].offset, a.region[k].offset);
        cr_assert_eq(b.region[k].bytes, a.region[k].bytes);
        cr_assert_eq(memcmp(b.region[k].handle, a.region[k].handle, COMM_REG_HANDLE_BYTES), 0);
    }
}

Test(comm_reg, packing_is_little_endian_with_magic_first)
{
    comm_reg_record a = sample(0, 2, "h", "b");
    unsigned char buf[1024];
    packed(&a, buf);
    cr_assert_eq(buf[0], 'V');
    cr_assert_eq(buf[1], 'P');
    cr_assert_eq(buf[2], 'S');
    cr_assert_eq(buf[3], 'R');
    cr_assert_eq(buf[4], COMM_REG_VERSION);
}

Test(comm_reg, short_buffers_are_refused_both_ways)
{
    comm_reg_record a = sample(0, 2, "h", "b"), b;
    unsigned char buf[1024];
    cr_assert_eq(comm_reg_pack(&a, buf, comm_reg_packed_bytes() - 1), 0);
    packed(&a, buf);
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, comm_reg_packed_bytes() - 1, &b, why, sizeof(why)), -1);
    cr_assert(strstr(why, "bytes") != NULL, "%s", why);
}

Test(comm_reg, corruption_fails_the_checksum)
{
    comm_reg_record a = sample(1, 2, "h", "b"), b;
    unsigned char buf[1024];
    size_t n = packed(&a, buf);
    buf[n / 2] ^= 0x40;
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, n, &b, why, sizeof(why)), -1);
    cr_assert(strstr(why, "checksum") != NULL, "%s", why);
}

Test(comm_reg, another_binary_is_named_as_such)
{
    comm_reg_record a = sample(1, 2, "h", "b"), b;
    unsigned char buf[1024];
    size_t n = packed(&a, buf);
    buf[4] = COMM_REG_VERSION + 1;
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, n, &b, why, sizeof(why)), -1);
    cr_assert(strstr(why, "same vpsim binary") != NULL, "%s", why);
}

Test(comm_reg, out_of_range_rank_is_refused)
{
    comm_reg_record a = sample(1, 2, "h", "b"), b;
    a.rank = 5; /* >= world */
    unsigned char buf[1024];
    size_t n = packed(&a, buf);
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, n, &b, why, sizeof(why)), -1);
    cr_assert(strstr(why, "out of range") != NULL, "%s", why);
}

Test(comm_reg, long_host_names_are_truncated_not_overrun)
{
    comm_reg_record a = sample(0, 1, "", "b"), b;
    memset(a.host, 'x', sizeof(a.host)); /* no terminator at all */
    unsigned char buf[1024];
    size_t n = packed(&a, buf);
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, n, &b, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(strlen(b.host), sizeof(b.host) - 1);
}

Test(comm_reg, a_consistent_set_passes)
{
    comm_reg_record s[4];
    for (int r = 0; r < 4; r++)
        s[r] = sample(r, 4, "box", "0000:01:00.0");
    char why[256] = "";
    cr_assert_eq(comm_reg_check_set(s, 4, why, sizeof(why)), 0, "%s", why);
}

Test(comm_reg, ranks_on_two_hosts_are_refused_with_the_reason)
{
    comm_reg_record s[2] = {sample(0, 2, "box-a", "x"), sample(1, 2, "box-b", "x")};
    char why[256] = "";
    cr_assert_eq(comm_reg_check_set(s, 2, why, sizeof(why)), -1);
    cr_assert(strstr(why, "CUDA IPC") != NULL && strstr(why, "box-b") != NULL, "%s", why);
}

Test(comm_reg, mismatched_buffer_sizes_name_rank_and_buffer)
{
    comm_reg_record s[3] = {sample(0, 3, "h", "x"), sample(1, 3, "h", "x"), sample(2, 3, "h", "x")};
    s[2].region[COMM_REG_SEND].bytes += 2;
    char why[256] = "";
    cr_assert_eq(comm_reg_check_set(s, 3, why, sizeof(why)), -1);
    cr_assert(strstr(why, "rank 2") != NULL && strstr(why, "send") != NULL, "%s", why);
    s[2] = sample(2, 3, "h", "x");
    s[1].region[COMM_REG_SCRATCH].present = true;
    cr_assert_eq(comm_reg_check_set(s, 3, why, sizeof(why)), -1);
    cr_assert(strstr(why, "rank 1") != NULL && strstr(why, "scratch") != NULL, "%s", why);
}

Test(comm_reg, records_out_of_order_are_refused)
{
    comm_reg_record s[2] = {sample(1, 2, "h", "x"), sample(0, 2, "h", "x")};
    char why[256] = "";
    cr_assert_eq(comm_reg_check_set(s, 2, why, sizeof(why)), -1);
    cr_assert(strstr(why, "slot 0") != NULL, "%s", why);
}

/* --p2p sysmem: signal, scratch and stage in one shm segment per rank, at page offsets; send and recv
 * absent (peers never read them in that mode). */
static comm_reg_record sample_shm(int rank, int world, const char *name)
{
    comm_reg_record r = sample(rank, world, "box", "0000:01:00.0");
    memset(r.region, 0, sizeof(r.region));
    const uint64_t offset[3] = {0, 4096, 12288}, bytes[3] = {3600, 6000, 86016};
    for (int k = COMM_REG_SIGNAL; k <= COMM_REG_STAGE; k++) {
        comm_reg_region *g = &r.region[k];
        g->present = true;
        g->handle_kind = COMM_REG_HANDLE_SHM;
        snprintf((char *)g->handle, sizeof(g->handle), "%s", name);
        g->offset = offset[k];
        g->bytes = bytes[k];
    }
    return r;
}

Test(comm_reg, shm_regions_round_trip_with_their_kind_and_name)
{
    comm_reg_record a = sample_shm(1, 2, "/vpsim-0123abcd-r1"), b;
    unsigned char buf[1024];
    size_t n = packed(&a, buf);
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, n, &b, why, sizeof(why)), 0, "%s", why);
    for (int k = COMM_REG_SIGNAL; k <= COMM_REG_STAGE; k++) {
        cr_assert(b.region[k].present);
        cr_assert_eq(b.region[k].handle_kind, COMM_REG_HANDLE_SHM, "region %s", comm_reg_kind_names[k]);
        cr_assert_str_eq((const char *)b.region[k].handle, "/vpsim-0123abcd-r1");
        cr_assert_eq(b.region[k].offset, a.region[k].offset);
        cr_assert_eq(b.region[k].bytes, a.region[k].bytes);
    }
    cr_assert(!b.region[COMM_REG_SEND].present && !b.region[COMM_REG_RECV].present);
    /* A peer maps up to the stage's end: 12288 + 86016 (whichever region it asks about). */
    cr_assert_eq(comm_reg_segment_bytes(&b, COMM_REG_SIGNAL), 98304u);
    cr_assert_eq(comm_reg_segment_bytes(&b, COMM_REG_STAGE), 98304u);
    cr_assert_eq(comm_reg_segment_bytes(&b, COMM_REG_SEND), 0u); /* absent */
    /* An IPC record has no segment to map. */
    comm_reg_record ipc = sample(0, 2, "box", "x");
    cr_assert_eq(comm_reg_segment_bytes(&ipc, COMM_REG_SIGNAL), 0u);
}

Test(comm_reg, regions_in_different_segments_are_sized_apart)
{
    comm_reg_record a = sample_shm(0, 1, "/seg-a");
    snprintf((char *)a.region[COMM_REG_STAGE].handle, COMM_REG_HANDLE_BYTES, "/seg-b");
    cr_assert_eq(comm_reg_segment_bytes(&a, COMM_REG_SIGNAL), 4096u + 6000u); /* scratch ends /seg-a */
    cr_assert_eq(comm_reg_segment_bytes(&a, COMM_REG_STAGE), 12288u + 86016u);
}

static void expect_refused(const comm_reg_record *a, const char *what)
{
    unsigned char buf[1024];
    comm_reg_record b;
    size_t n = packed(a, buf);
    char why[256] = "";
    cr_assert_eq(comm_reg_unpack(buf, n, &b, why, sizeof(why)), -1, "accepted (expected: %s)", what);
    cr_assert(strstr(why, what) != NULL, "%s", why);
}

Test(comm_reg, corrupt_shm_regions_are_refused)
{
    comm_reg_record a = sample_shm(0, 2, "vpsim-no-slash");
    expect_refused(&a, "shm segment name");
    a = sample_shm(0, 2, "/dir/name");
    expect_refused(&a, "shm segment name");
    a = sample_shm(0, 2, "/");
    expect_refused(&a, "shm segment name");
    a = sample_shm(0, 2, "/x");
    memset(a.region[COMM_REG_SCRATCH].handle, 'n', COMM_REG_HANDLE_BYTES); /* no terminator */
    a.region[COMM_REG_SCRATCH].handle[0] = '/';
    expect_refused(&a, "region scratch: shm segment name");
    a = sample_shm(0, 2, "/x");
    a.region[COMM_REG_STAGE].offset = UINT64_MAX - 10; /* wraps */
    expect_refused(&a, "out of range");
    a = sample_shm(0, 2, "/x");
    a.region[COMM_REG_SIGNAL].handle_kind = 7;
    expect_refused(&a, "handle kind 7");
}

Test(comm_reg, a_set_mixing_ipc_and_shm_names_the_rank_and_p2p)
{
    comm_reg_record s[2] = {sample_shm(0, 2, "/a-r0"), sample_shm(1, 2, "/a-r1")};
    char why[256] = "";
    cr_assert_eq(comm_reg_check_set(s, 2, why, sizeof(why)), 0, "%s", why);
    s[1].region[COMM_REG_STAGE].handle_kind = COMM_REG_HANDLE_IPC;
    cr_assert_eq(comm_reg_check_set(s, 2, why, sizeof(why)), -1);
    cr_assert(strstr(why, "rank 1") && strstr(why, "stage") && strstr(why, "cuda-ipc") && strstr(why, "--p2p"),
              "%s", why);
}

/* ---------------- topology ---------------- */

Test(comm_topo, virtual_ranks_on_one_gpu)
{
    comm_reg_record s[8];
    for (int r = 0; r < 8; r++)
        s[r] = sample(r, 8, "h", "0000:18:00.0");
    comm_topo t;
    comm_topo_from_records(&t, s, 8);
    cr_assert_eq(t.n_gpus, 1);
    cr_assert_eq(t.ranks_on_gpu[0], 8);
    cr_assert(comm_topo_virtual(&t));
    cr_assert(comm_topo_all_p2p(&t), "one GPU needs no P2P");
    char buf[160];
    comm_topo_summary(&t, buf, sizeof(buf));
    cr_assert_str_eq(buf, "8 ranks on 1 GPU (virtual ranks: up to 8 per GPU)");
}

static void four_gpus(comm_topo *t, signed char access)
{
    comm_reg_record s[4];
    const char *bus[4] = {"0000:18:00.0", "0000:3b:00.0", "0000:86:00.0", "0000:af:00.0"};
    for (int r = 0; r < 4; r++)
        s[r] = sample(r, 4, "h", bus[r]);
    comm_topo_from_records(t, s, 4);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (i != j) {
                t->access[i][j] = access;
                t->atomics[i][j] = 0;
                t->perf_rank[i][j] = (signed char)(i / 2 == j / 2 ? 0 : 1); /* two per socket */
            }
}

Test(comm_topo, four_gpus_with_p2p)
{
    comm_topo t;
    four_gpus(&t, 1);
    cr_assert_eq(t.n_gpus, 4);
    cr_assert_not(comm_topo_virtual(&t));
    cr_assert(comm_topo_all_p2p(&t));
    char buf[160];
    comm_topo_summary(&t, buf, sizeof(buf));
    cr_assert_str_eq(buf, "4 ranks on 4 GPUs; P2P access all 12 GPU pairs; native P2P atomics 0 of 12 pairs; P2P perf "
                          "rank 0..1");
}

Test(comm_topo, a_pair_without_p2p_is_named)
{
    comm_topo t;
    four_gpus(&t, 1);
    t.access[2][1] = 0;
    cr_assert_not(comm_topo_all_p2p(&t));
    char buf[160];
    comm_topo_summary(&t, buf, sizeof(buf));
    cr_assert(strstr(buf, "no P2P access from GPU 2 to GPU 1") != NULL, "%s", buf);
}

Test(comm_topo, unknown_access_is_not_reported_as_present)
{
    comm_topo t;
    four_gpus(&t, -1);
    cr_assert_not(comm_topo_all_p2p(&t));
    char buf[160];
    comm_topo_summary(&t, buf, sizeof(buf));
    cr_assert(strstr(buf, "unknown for 12 of 12") != NULL, "%s", buf);
}

Test(comm_topo, two_ranks_per_gpu_group_by_bus_id)
{
    comm_reg_record s[4] = {sample(0, 4, "h", "A"), sample(1, 4, "h", "B"), sample(2, 4, "h", "A"),
                            sample(3, 4, "h", "B")};
    comm_topo t;
    comm_topo_from_records(&t, s, 4);
    cr_assert_eq(t.n_gpus, 2);
    cr_assert_eq(t.gpu[0], 0);
    cr_assert_eq(t.gpu[1], 1);
    cr_assert_eq(t.gpu[2], 0);
    cr_assert_eq(t.gpu[3], 1);
    cr_assert(comm_topo_virtual(&t));
    char buf[8];
    comm_topo_summary(&t, buf, sizeof(buf)); /* truncation is safe */
    cr_assert_eq(strlen(buf), sizeof(buf) - 1);
}

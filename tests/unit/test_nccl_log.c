/* NCCL's INFO log read back (sim/comm/comm_nccl_log.c), on lines in the form NCCL 2.2x writes them, and
 * what `vpsim probe` writes from it. */
#include "../../sim/calib/probe_text.h"
#include "../../sim/comm/comm_nccl_log.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <string.h>

/* A dual-socket AMD box of 8 GPUs under NCCL 2.28 (rank 0's file): SHM ring, the search's fallback. */
static const char *const shm_log =
    "box:1234:1234 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n"
    "box:1234:1234 [0] NCCL INFO NCCL version 2.28.3+cuda12.9\n"
    "box:1234:1290 [0] NCCL INFO comm 0x5555 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"
    "box:1234:1290 [0] NCCL INFO Could not find a path for pattern 4, falling back to simple order\n"
    "box:1234:1290 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 1, bw 0.100000/0.100000, type SYS/SYS, sameChannels 1\n"
    "box:1234:1290 [0] NCCL INFO  0 : GPU/0 GPU/1 GPU/2 GPU/3 GPU/4 GPU/5 GPU/6 GPU/7\n"
    "box:1234:1290 [0] NCCL INFO Pattern 1, crossNic 0, nChannels 1, bw 0.100000/0.100000, type SYS/SYS, sameChannels 1\n"
    "box:1234:1290 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7\n"
    "box:1234:1290 [0] NCCL INFO Channel 01/02 :    0   1   2   3   4   5   6   7\n"
    "box:1234:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
    "box:1234:1290 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
    "box:1234:1290 [0] NCCL INFO Channel 00/0 : 7[7] -> 0[0] via SHM/direct/direct\n";

Test(nccl_log, reads_version_channels_transports_and_the_search)
{
    comm_nccl_log l;
    cr_assert(comm_nccl_log_parse(shm_log, &l));
    cr_assert_str_eq(l.version, "2.28.3");
    cr_assert_eq(l.channels, 2);
    cr_assert_eq(l.shm, 3);
    cr_assert_eq(l.p2p, 0);
    cr_assert_eq(l.net, 0);
    cr_assert(l.searched && l.fallback);
    cr_assert_eq(l.pattern, 4, "the ring's graph, not the tree's");
    cr_assert_eq(l.search_channels, 1);
    cr_assert_float_eq(l.bw_intra, 0.1, 1e-12);
    cr_assert_str_eq(l.type_intra, "SYS");
    /* With NCCL_P2P_LEVEL=SYS the same box connects P2P; a box with no NCCL lines is nothing. */
    comm_nccl_log p;
    cr_assert(comm_nccl_log_parse("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
                                  "h:1:1 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via NET/Socket/0\n",
                                  &p));
    cr_assert_eq(p.p2p, 1);
    cr_assert_eq(p.net, 1);
    cr_assert(!comm_nccl_log_parse("hello\nworld\n", &p));
    cr_assert(!comm_nccl_log_parse("", &p));
}

Test(nccl_log, the_probe_writes_what_nccl_said)
{
    exec_links_result r;
    memset(&r, 0, sizeof(r));
    r.ranks = 2;
    snprintf(r.device_name, sizeof(r.device_name), "Test GPU");
    r.paths.gpus = 2;
    comm_nccl_log l;
    cr_assert(comm_nccl_log_parse(shm_log, &l));
    const probe_input in = {.links = &r, .device = CFG_DEVICE_CUDA, .date = "2026-01-02 03:04 UTC", .host = "h",
                            .base = th_path("configs/systems/h200-1x.yaml"), .nccl_log = &l};
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    cr_assert_not_null(strstr(out.s, "  version: \"2.28.3\"  # measured: probe"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "  channels: 2  # measured: probe"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "0 P2P, 3 SHM, 0 NET"), "%s", out.s);
    cr_assert_not_null(strstr(out.s, "falling back to simple order"), "%s", out.s);
    util_buf_free(&out);
    /* One rank: NCCL builds its maximum of channels for a communicator of one; the count is left out. */
    r.ranks = 1;
    r.paths.gpus = 1;
    util_buf one = {0};
    cr_assert_eq(probe_system_text(&in, &one), 0);
    cr_assert_null(strstr(one.s, "  channels: 2  # measured: probe"), "%s", one.s);
    cr_assert_not_null(strstr(one.s, "  version: \"2.28.3\"  # measured: probe"), "%s", one.s);
    util_buf_free(&one);
}

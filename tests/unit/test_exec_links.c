/* The link probe's driver and its CPU backend (sim/exec/exec_links*.c): the pure helpers against hand
 * values, the CPU path at one rank without mpirun, and the CPU path at 2 ranks (and 3 with a failed pair)
 * under mpirun. Both paths run this test binary again: the `exec_links_rank` tests do the work only when
 * VPSIM_LINKS_ONE_RANK or VPSIM_LINKS_RANK_OUT is set (the ranks write rank 0's result there for the
 * parent test to check). */
#include "test_helpers.h"

#include "../../sim/config/cfg.h"
#include "../../sim/exec/exec_links_internal.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ---- */

static int cycle_length(const unsigned *next, int n)
{
    unsigned at = 0;
    int steps = 0;
    do {
        at = next[at];
        steps++;
    } while (at != 0 && steps <= n);
    return steps;
}

Test(exec_links, chain_is_one_cycle_over_every_node)
{
    static unsigned next[1000];
    const int sizes[] = {1, 2, 3, 7, 256, 1000};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        const int n = sizes[k];
        exec_links_chain(next, n, 12345 + k);
        /* A permutation (every node once as a successor) whose walk from 0 returns after exactly n hops. */
        static int seen[1000];
        memset(seen, 0, sizeof(seen));
        for (int i = 0; i < n; i++) {
            cr_assert_lt(next[i], (unsigned)n);
            seen[next[i]]++;
        }
        for (int i = 0; i < n; i++)
            cr_assert_eq(seen[i], 1, "n=%d: node %d is the successor of %d nodes", n, i, seen[i]);
        cr_assert_eq(cycle_length(next, n), n, "n=%d", n);
        for (int i = 0; n > 1 && i < n; i++)
            cr_assert_neq(next[i], (unsigned)i, "n=%d: node %d points at itself", n, i);
    }
    /* Another seed, another order (a prefetcher cannot learn one chain for all ranks). */
    static unsigned other[256];
    exec_links_chain(next, 256, 1);
    exec_links_chain(other, 256, 2);
    cr_assert_neq(memcmp(next, other, sizeof(other)), 0);
}

Test(exec_links, chain_fill_puts_the_successor_on_every_line)
{
    enum { N = 5 };
    const unsigned next[N] = {3, 0, 4, 2, 1}; /* 0 -> 3 -> 2 -> 4 -> 1 -> 0 */
    unsigned char *buf = calloc(N, EXEC_LINKS_NODE_BYTES);
    exec_links_chain_fill(buf, next, N);
    for (int i = 0; i < N; i++)
        for (int l = 0; l < EXEC_LINKS_CHAIN_LINES; l++) {
            unsigned v;
            memcpy(&v, buf + (size_t)i * EXEC_LINKS_NODE_BYTES + (size_t)l * EXEC_LINKS_LINE_BYTES, sizeof(v));
            cr_assert_eq(v, next[i], "node %d line %d", i, l);
        }
    /* Between the lines nothing is written: a walk can only land on a line's first word. */
    unsigned v;
    memcpy(&v, buf + 4, sizeof(v));
    cr_assert_eq(v, 0u);
    cr_assert_eq(EXEC_LINKS_CHAIN_LINES, 32);
    free(buf);
}

Test(exec_links, median_and_spread)
{
    double odd[] = {5, 1, 3};
    cr_assert_float_eq(util_percentile(odd, 3, 0.5), 3.0, 1e-12);
    double even[] = {4, 1, 3, 2};
    cr_assert_float_eq(util_percentile(even, 4, 0.5), 2.5, 1e-12);
    double one[] = {7};
    cr_assert_float_eq(util_percentile(one, 1, 0.5), 7.0, 1e-12);
    /* (12 - 10) / 11 = 18.18 %; the input is not reordered. */
    const double v[] = {10, 12, 11};
    cr_assert_float_eq(exec_links_spread_pct(v, 3), 200.0 / 11.0, 1e-9);
    cr_assert_float_eq(v[0], 10.0, 0);
    cr_assert_float_eq(exec_links_spread_pct(v, 1), 0.0, 0);
}

Test(exec_links, cells_and_flags)
{
    /* Row-major over the probe's GPUs: row = the GPU that stores or loads, column = whose memory. */
    cr_assert_eq(exec_links_cell(4, 1, 2), 6);
    cr_assert_eq(exec_links_cell(4, 3, 0), 12);
    cr_assert_eq(exec_links_cell(2, 1, 0), 2);
    /* Flags only move forward, across the 32-bit wrap too. */
    cr_assert(exec_links_reached(5, 5));
    cr_assert(exec_links_reached(6, 5));
    cr_assert(!exec_links_reached(4, 5));
    cr_assert(exec_links_reached(3u, 0xfffffffeu));
    cr_assert(!exec_links_reached(0xfffffffeu, 3u));
}

Test(exec_links, far_node_and_bus_numa_without_sysfs_entries)
{
    cr_assert_eq(exec_links_bus_numa(""), -1);
    cr_assert_eq(exec_links_bus_numa("ffff:ff:1f.7"), -1); /* no such device */
    cr_assert_eq(exec_links_far_node(-1), -1);             /* near unknown: no "far" either */
}

Test(exec_links, host_memory_is_placed_where_asked_or_not_at_all)
{
    const size_t bytes = 1 << 20;
    unsigned char *any = exec_links_alloc_on(bytes, -1);
    cr_assert_not_null(any);
    cr_assert_eq(any[0], 0);
    cr_assert_eq(any[bytes - 1], 0);
    exec_links_unmap(any, bytes);
    /* A node that does not exist: no memory at all, never memory on some other node. */
    cr_assert_null(exec_links_alloc_on(bytes, 1000));
    cr_assert_null(exec_links_alloc_on(bytes, 5000));
}

/* ---- the CPU path ---- */

/* What every measured CPU result satisfies: lists sized for `ranks`, values positive off the diagonal,
 * the diagonal 0, the launch costs unmeasured, the note saying what the figures are. */
static void check_cpu_result(const exec_links_result *r, int ranks, int reps)
{
    cr_assert_eq(r->ranks, ranks);
    cr_assert_eq(r->reps, reps);
    cr_assert_eq(r->paths.gpus, ranks);
    cr_assert_not_null(strstr(r->note, "self-test of the pipeline, not any interconnect"), "%s", r->note);
    cr_assert_null(strstr(r->note, "unmeasured"), "%s", r->note);
    cr_assert(r->eager_launch_us < 0 && r->eager_gap_us < 0 && r->graph_node_us < 0 && r->graph_launch_us < 0);
    cr_assert(!r->virtual_ranks);
    const cfg_paths_list *lists[] = {&r->paths.visible_us,     &r->paths.load_rtt_us,   &r->paths.store_gbs,
                                     &r->paths.load_gbs,       &r->paths.all_store_gbs, &r->paths.all_load_gbs,
                                     &r->paths.many_writer_gbs, &r->paths.host_visible_us};
    const int dims[] = {2, 2, 2, 2, 2, 2, 1, 2};
    for (int k = 0; k < 8; k++) {
        const int want = ranks < 2 ? 0 : dims[k] == 2 ? ranks * ranks : ranks;
        cr_assert_eq(lists[k]->n, want, "list %d: n=%d, want %d", k, lists[k]->n, want);
        for (int i = 0; i < lists[k]->n; i++) {
            if (dims[k] == 2 && i / ranks == i % ranks)
                cr_assert_float_eq(lists[k]->v[i], 0.0, 0, "list %d diagonal", k);
            else
                cr_assert(lists[k]->v[i] > 0 && isfinite(lists[k]->v[i]), "list %d cell %d: %g", k, i, lists[k]->v[i]);
        }
    }
    /* Host lists: this process's own memory, one per rank; no far socket on the CPU device. */
    cr_assert_eq(r->paths.host_load_rtt_us.n, ranks);
    cr_assert_eq(r->paths.host_store_gbs.n, ranks);
    cr_assert_eq(r->paths.host_load_gbs.n, ranks);
    cr_assert_eq(r->paths.host_far_load_rtt_us.n, 0);
    cr_assert_eq(r->paths.host_far_store_gbs.n, 0);
    for (int g = 0; g < ranks; g++) {
        /* A dependent load from memory takes more than a nanosecond and less than a millisecond. */
        cr_assert(r->paths.host_load_rtt_us.v[g] > 1e-3 && r->paths.host_load_rtt_us.v[g] < 1e3, "%g",
                  r->paths.host_load_rtt_us.v[g]);
        cr_assert(r->paths.host_store_gbs.v[g] > 0.01 && r->paths.host_store_gbs.v[g] < 1e4);
    }
}

/* The body of exec_links/cpu_device_one_rank_in_process, in a test process of its own; skipped in the
 * ordinary run. */
Test(exec_links_rank, one_rank, .timeout = 60)
{
    if (!getenv("VPSIM_LINKS_ONE_RANK"))
        cr_skip_test("runs only as the process of exec_links/cpu_device_one_rank_in_process");
    dist_job d;
    dist_init(&d, NULL, NULL);
    exec_links_opts o = {.device = CFG_DEVICE_CPU, .quick = true, .bw_bytes = 1 << 20};
    exec_links_result r;
    char why[400] = "";
    cr_assert_eq(exec_links_measure(&d, &o, &r, why, sizeof(why)), 0, "%s", why);
    check_cpu_result(&r, 1, 3);
    cr_assert_not_null(strstr(r.note, "one rank: per-GPU host lists only"), "%s", r.note);
    /* Neither device: refused with the choices. */
    o.device = CFG_DEVICE_COUNT;
    cr_assert_eq(exec_links_measure(&d, &o, &r, why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "cuda or cpu"), "%s", why);
    /* The CUDA device where there is no GPU (CI) or no CUDA in the build: refused with the reason, no
     * crash. On a machine with a GPU this is a real one-rank probe. */
    o.device = CFG_DEVICE_CUDA;
    if (exec_links_measure(&d, &o, &r, why, sizeof(why)) != 0)
        cr_assert(strstr(why, "no CUDA device") || strstr(why, "built without CUDA"), "%s", why);
    else
        cr_assert_eq(r.paths.host_load_rtt_us.n, 1);
    dist_finalize(&d);
}

/* This test binary, to run again as the ranks or as a process of its own. */
static void self_path(char *buf, size_t size)
{
    const ssize_t len = readlink("/proc/self/exe", buf, size - 1);
    cr_assert_gt(len, 0);
    buf[len] = '\0';
}

/* The CPU path at one rank without mpirun. It initialises MPI, so it runs in a process started with
 * TH_MPI_ASAN rather than in this worker (whose unwinder cannot see Open MPI's frames); and since
 * Criterion passes a test whose worker leaks at exit, that process's output is read for a leak report. */
Test(exec_links, cpu_device_one_rank_in_process, .timeout = 90)
{
    char self[4096];
    self_path(self, sizeof(self));
    th_result res = th_sh("env -u BXFI_MAP -u GMON_OUT_PREFIX " TH_MPI_ASAN "VPSIM_LINKS_ONE_RANK=1 '%s' "
                          "--filter 'exec_links_rank/one_rank' --jobs 1",
                          self);
    cr_assert_eq(res.status, 0, "%s\n%s", res.out, res.err);
    cr_assert(strstr(res.out, "Passing: 1 ") || strstr(res.err, "Passing: 1 "), "the body ran and passed:\n%s\n%s",
              res.out, res.err);
    cr_assert_null(strstr(res.err, "LeakSanitizer"), "%s", res.err);
    th_free(&res);
}

/* The body of each rank under mpirun (see the top of the file); skipped in the ordinary run. */
Test(exec_links_rank, measure, .timeout = 110)
{
    const char *out = getenv("VPSIM_LINKS_RANK_OUT");
    if (!out)
        cr_skip_test("runs only as a rank of exec_links/cpu_device_*_ranks");
    dist_job d;
    dist_init(&d, NULL, NULL);
    exec_links_opts o = {.device = CFG_DEVICE_CPU, .quick = true, .reps = 2, .bw_bytes = 1 << 20};
    exec_links_result r;
    char why[400] = "";
    const char *unmapped = getenv("VPSIM_LINKS_RANK_UNMAPPED");
    int a = -1, b = -1;
    if (unmapped && sscanf(unmapped, "%d,%d", &a, &b) == 2)
        exec_links_test_unmapped(a, b);
    const int rc = exec_links_measure(&d, &o, &r, why, sizeof(why));
    if (d.rank == 0) {
        FILE *f = fopen(out, "wb");
        cr_assert_not_null(f);
        fwrite(&rc, sizeof(rc), 1, f);
        fwrite(&r, sizeof(r), 1, f);
        fwrite(why, sizeof(why), 1, f);
        fclose(f);
    }
    dist_finalize(&d);
}

/* Run the ranks; rank 0's return code and result. `unmapped`: "A,B" for the testing hook, or "". */
static int run_ranks(int np, const char *unmapped, exec_links_result *r, char *why)
{
    th_need_mpirun();
    char self[4096];
    self_path(self, sizeof(self));
    char out[] = "/tmp/vpsim-links-XXXXXX";
    const int fd = mkstemp(out);
    cr_assert_geq(fd, 0);
    close(fd);
    /* The ranks are this binary again: without Criterion's worker marker (BXFI_MAP), which would make
     * each of them a sandboxed worker of this process instead of a test runner of its own. Ranks waiting
     * in MPI yield their core (mpi_yield_when_idle): the suite's timing tests run beside this one. */
    th_result res = th_sh("env -u BXFI_MAP -u GMON_OUT_PREFIX " TH_MPIRUN
                          " --mca mpi_yield_when_idle 1"
                          " -np %d -x VPSIM_LINKS_RANK_OUT=%s -x VPSIM_LINKS_RANK_UNMAPPED=%s %s --filter "
                          "'exec_links_rank/measure' --jobs 1",
                          np, out, unmapped[0] ? unmapped : "none", self);
    cr_assert_eq(res.status, 0, "%s\n%s", res.out, res.err);
    int rc = -1;
    FILE *f = fopen(out, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(&rc, sizeof(rc), 1, f), 1u, "no result from rank 0: %s", res.err);
    cr_assert_eq(fread(r, sizeof(*r), 1, f), 1u);
    cr_assert_eq(fread(why, 400, 1, f), 1u);
    fclose(f);
    unlink(out);
    th_free(&res);
    return rc;
}

static void cpu_ranks(int np)
{
    exec_links_result r;
    char why[400];
    cr_assert_eq(run_ranks(np, "", &r, why), 0, "%s", why);
    check_cpu_result(&r, np, 2);
}

Test(exec_links, cpu_device_two_ranks, .timeout = 130) { cpu_ranks(2); }

/* A pair whose mappings did not open is not fatal: every list that needs that pair's peer memory stays
 * empty (the schema wants positive values in every cell), the note names the first failed cell of each,
 * and what does not need it (host memory, flags through host memory) is still measured. */
Test(exec_links, an_unmapped_pair_leaves_its_lists_unmeasured, .timeout = 130)
{
    exec_links_result r;
    char why[400];
    cr_assert_eq(run_ranks(3, "0,1", &r, why), 0, "%s", why);
    const cfg_paths_list *peer_lists[] = {&r.paths.visible_us,    &r.paths.load_rtt_us,   &r.paths.store_gbs,
                                          &r.paths.load_gbs,      &r.paths.all_store_gbs, &r.paths.all_load_gbs,
                                          &r.paths.many_writer_gbs};
    for (size_t k = 0; k < sizeof(peer_lists) / sizeof(peer_lists[0]); k++)
        cr_assert_eq(peer_lists[k]->n, 0, "list %zu", k);
    cr_assert_eq(r.paths.gpus, 3);
    cr_assert_eq(r.paths.host_visible_us.n, 9);
    cr_assert_eq(r.paths.host_load_rtt_us.n, 3);
    cr_assert_eq(r.paths.host_store_gbs.n, 3);
    /* Row-major: the first failed cell of each matrix is 0 -> 1; of many_writer_gbs, GPU 0 (rank 1 could
     * not write into it). */
    cr_assert_not_null(strstr(r.note, "unmeasured: 0->1 (visible_us, load_rtt_us, store_gbs, load_gbs, "
                                      "all_store_gbs, all_load_gbs), GPU 0 (many_writer_gbs)"),
                       "%s", r.note);
}

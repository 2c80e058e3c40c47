/* Machines without what a command needs: a CUDA request on a machine with no usable GPU
 * or driver is a plain refusal (exit 2, the reason, "use --device cpu") on every rank, before any
 * device or backend setup, never an MPI abort; `--backend all` on the CPU device runs what that device
 * can. CI has no GPU; on a machine where CUDA works the refusal tests skip themselves. */
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bin(void)
{
    const char *b = getenv("VPSIM_BIN");
    return b ? b : "build/vpsim";
}

/* The refusal is what these tests are about; where a GPU answers, there is nothing to refuse. */
static void need_no_gpu(void)
{
    th_result r = th_sh("nvidia-smi -L 2>/dev/null | grep -q '^GPU '");
    const int status = r.status;
    th_free(&r);
    if (status == 0)
        cr_skip_test("a GPU is visible here");
}

static void expect_no_cuda_refusal(th_result r, const char *cmd)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "vpsim %s: ", cmd);
    cr_assert_eq(r.status, 2, "exit %d, want 2\n%s\n%s", r.status, r.out, r.err);
    cr_assert_not_null(strstr(r.err, prefix), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "no usable CUDA device here ("), "%s", r.err);
    cr_assert_not_null(strstr(r.err, "): use --device cpu"), "%s", r.err);
    /* Refused before any device call: no abort of the job and no failed CUDA call named. */
    cr_assert_null(strstr(r.err, "MPI_ABORT"), "%s", r.err);
    cr_assert_null(strstr(r.err, "dev_cuda.c"), "%s", r.err);
    cr_assert_null(strstr(r.err, "terminated by the MPI launcher"), "%s", r.err);
    th_free(&r);
}

Test(no_gpu, bench_allreduce_on_cuda_exits_2_with_the_hint_under_mpirun, .timeout = 150)
{
    th_need_mpirun();
    need_no_gpu();
    expect_no_cuda_refusal(th_sh(TH_MPIRUN " -np 2 '%s' bench-allreduce -b 1K -e 4K", bin()), "bench-allreduce");
}

Test(no_gpu, run_on_cuda_exits_2_with_the_hint_under_mpirun, .timeout = 150)
{
    th_need_mpirun();
    need_no_gpu();
    expect_no_cuda_refusal(th_sh(TH_MPIRUN " -np 2 '%s' run configs/tiny.yaml --device cuda --iters 1", bin()),
                           "run");
}

Test(no_gpu, run_on_cuda_exits_2_with_the_hint_without_mpirun, .timeout = 60)
{
    need_no_gpu();
    expect_no_cuda_refusal(th_run("run configs/tiny.yaml --device cuda --iters 1"), "run");
}

Test(no_gpu, backend_all_on_cpu_runs_what_the_cpu_device_can, .timeout = 150)
{
    th_need_mpirun();
    th_result r = th_sh(TH_MPIRUN " -np 2 '%s' bench-allreduce --device cpu --backend all -b 1K -e 2K -n 2 -w 0",
                        bin());
    cr_assert_eq(r.status, 0, "exit %d\n%s\n%s", r.status, r.out, r.err);
    cr_assert_not_null(strstr(r.out, "# backend mpi ("), "%s", r.out);
    /* The CUDA-only backends are named once in a note, not run as 'unsupported' rows. */
    cr_assert_null(strstr(r.out, "unsupported"), "%s", r.out);
    cr_assert_not_null(strstr(r.err, "vpsim bench-allreduce: note: --backend all on the cpu device: skipping nccl, "
                                     "nccl-symm, oneshot, twoshot, push"),
                       "%s", r.err);
    th_free(&r);
}

/* `make CUDA=0` after a CUDA build: its own objects (build/obj-nocuda) and a relink of build/vpsim
 * without the CUDA libraries (asked of make -n, which builds nothing). */
Test(no_gpu, make_cuda0_relinks_the_binary_without_cuda, .timeout = 60)
{
    /* VARIANT=release: under `make test VARIANT=asan` the variable reaches this shell too. */
    th_result r = th_sh("command -v make >/dev/null && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "
                        "make -n CUDA=0 VARIANT=release V=1 build/vpsim 2>&1");
    if (r.status == 127 || strstr(r.out, "missing build dependencies")) {
        th_free(&r);
        cr_skip_test("make or a build dependency is missing here");
    }
    cr_assert_eq(r.status, 0, "%s", r.out);
    const char *link = strstr(r.out, "-o build/vpsim\n");
    cr_assert_not_null(link, "make -n CUDA=0 must relink build/vpsim:\n%s", r.out);
    const char *line = link;
    while (line > r.out && line[-1] != '\n')
        line--;
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%.*s", (int)(link - line), line);
    cr_assert_not_null(strstr(cmd, "build/obj-nocuda/libvpsim.a"), "%s", cmd);
    cr_assert_null(strstr(cmd, "-lcudart"), "%s", cmd);
    cr_assert_null(strstr(cmd, "build/obj/"), "no object of the CUDA build:\n%s", cmd);
    th_free(&r);
}

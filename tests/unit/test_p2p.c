/* --p2p direct|sysmem of bench-allreduce and run (the custom backends' path to their peers): bad values
 * and requests it cannot apply to are refused with exit 2, a saved result carries the mode ("p2p" in
 * JSON, the table's header), and a comparison with a system whose topology.p2p differs says so. The
 * sysmem path itself needs a GPU: tests/gpu/steps/60-sysmem.sh. */
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(p2p, a_bad_value_names_the_choices)
{
    th_expect_bad(th_run("bench-allreduce --p2p bogus"), "--p2p 'bogus'", "valid choices: direct, sysmem");
    th_expect_bad(th_run("run configs/tiny.yaml --p2p bogus"), "--p2p 'bogus'", "valid choices: direct, sysmem");
    th_expect_bad(th_run("bench-allreduce --p2p"), "'--p2p' needs a value", "");
}

Test(p2p, sysmem_on_the_cpu_device_is_refused, .timeout = 60)
{
    th_expect_bad(th_run("bench-allreduce --device cpu --p2p sysmem --sizes 16 -n 1 -w 0"),
                  "--p2p sysmem: the cpu device has no custom kernels", "--device cuda");
    th_expect_bad(th_run("run configs/tiny.yaml --device cpu --backend mpi --p2p sysmem --iters 1"),
                  "--p2p sysmem: the cpu device has no custom kernels", "--device cuda");
    /* direct is the default path and means nothing on cpu: accepted, and the result says it. */
    th_result r = th_run("bench-allreduce --device cpu --backend mpi --p2p direct --sizes 16 -n 1 -w 0 --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"p2p\": \"direct\"") != NULL, "%s", r.out);
    th_free(&r);
}

Test(p2p, sysmem_without_a_custom_backend_is_refused, .timeout = 60)
{
    if (!VPSIM_HAVE_CUDA)
        cr_skip_test("a CUDA=0 build has no cuda device to name");
    /* Checked before the device is opened, so this holds on a machine without a GPU too. */
    th_expect_bad(th_run("bench-allreduce --device cuda --backend nccl,nccl-symm --p2p sysmem --sizes 16"),
                  "--p2p sysmem applies to the custom backends (oneshot, twoshot, push) only",
                  "none of them is requested (nccl, nccl-symm)");
    th_expect_bad(th_run("run configs/tiny.yaml --device cuda --backend nccl --p2p sysmem --iters 1"),
                  "--p2p sysmem applies to the custom backends", "(nccl)");
    th_expect_bad(th_run("run configs/tiny.yaml --device cuda --allreduce-policy 'mpi<=1K,nccl' --p2p sysmem"),
                  "--p2p sysmem applies to the custom backends", "(mpi, nccl)");
}

Test(p2p, from_takes_the_mode_from_the_file)
{
    th_expect_bad(th_run("bench-allreduce --from x.json --p2p sysmem"), "--p2p applies to a measurement", "--from");
}

/* A saved CPU result relabelled as a custom backend's sysmem measurement (the fields a GPU run writes). */
static char *saved_sysmem_result(const char *p2p_value)
{
    th_result r = th_run("bench-allreduce --device cpu --backend mpi --sizes 16,1K -n 1 -w 0 --format json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *json = r.out;
    r.out = NULL;
    th_free(&r);
    char *p = strstr(json, "\"p2p\": \"direct\""), *n = strstr(json, "\"name\": \"mpi\"");
    cr_assert(p && n, "%s", json);
    char buf[16384];
    cr_assert_lt(strlen(json) + 64, sizeof(buf));
    /* name "mpi" -> "oneshot" (n is after p in the document), p2p -> the value under test */
    snprintf(buf, sizeof(buf), "%.*s\"p2p\": \"%s\"%.*s\"name\": \"oneshot\"%s", (int)(p - json), json, p2p_value,
             (int)(n - (p + strlen("\"p2p\": \"direct\""))), p + strlen("\"p2p\": \"direct\""),
             n + strlen("\"name\": \"mpi\""));
    free(json);
    return th_write_temp(buf, strlen(buf), ".json");
}

Test(p2p, a_saved_sysmem_result_says_so_and_the_model_note_names_the_difference)
{
    char *f = saved_sysmem_result("sysmem");
    th_result r = th_run("bench-allreduce --from %s --system configs/systems/h200-2x-nvlink.yaml", f);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, ", --p2p sysmem (custom backends: exchange buffers and flags in pinned host memory)") !=
                  NULL,
              "%s", r.out);
    cr_assert(strstr(r.err, "note: backend oneshot ran with --p2p sysmem but the model's system has "
                            "topology.p2p=direct; add --set system.topology.p2p=sysmem") != NULL,
              "%s", r.err);
    th_free(&r);
    /* The system file says sysmem too: like for like, no note. */
    r = th_run("bench-allreduce --from %s --system configs/systems/h200-2x-nvlink.yaml --set system.topology.p2p=sysmem "
               "--format json",
               f);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "--p2p") == NULL, "%s", r.err);
    cr_assert(strstr(r.out, "\"p2p\": \"sysmem\"") != NULL, "the mode survives the round trip:\n%s", r.out);
    th_free(&r);
    remove(f);
    free(f);
}

Test(p2p, a_saved_result_with_a_bad_mode_is_refused)
{
    char *f = saved_sysmem_result("bogus");
    th_expect_bad(th_run("bench-allreduce --from %s", f), f, "p2p: unknown value 'bogus'; valid choices: direct, sysmem");
    remove(f);
    free(f);
}

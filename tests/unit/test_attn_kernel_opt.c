/* vpsim run --attn-kernel auto|general|mla|wgmma: the choices named on a bad value, and a named kernel
 * refused on the cpu device (which runs none of them) before anything runs. The kernels themselves, and
 * which one a plan ran (environment.attention_kernel), need a GPU: tests/gpu (make test-gpu). */
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <string.h>

Test(attn_kernel, a_bad_value_names_the_choices)
{
    th_expect_bad(th_run("run configs/tiny.yaml --attn-kernel bogus"), "--attn-kernel 'bogus'",
                  "valid choices: auto, general, mla, wgmma");
}

Test(attn_kernel, a_named_kernel_on_the_cpu_device_is_refused, .timeout = 60)
{
    th_expect_bad(th_run("run configs/tiny.yaml --device cpu --backend none --attn-kernel wgmma --iters 1"),
                  "--attn-kernel wgmma chooses a CUDA attention kernel; the cpu device runs none", "auto");
    /* auto means nothing on cpu: accepted. */
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --attn-kernel auto --iters 1 --warmup 0 "
                         "--instrumented 1");
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
}

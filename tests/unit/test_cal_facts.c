/* A measured system file describes the machine that measured it: the device's facts
 * against the device a base names, from hand-made facts (an H200's, on this machine without a GPU),
 * and the probe's file written from them. */
#include "test_helpers.h"

#include "../../sim/calib/cal_facts.h"
#include "../../sim/calib/probe_text.h"
#include "../../sim/config/cfg_schema.h"
#include "../../sim/config/cfg_system.h"
#include "../../sim/config/cfg_tree.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What dev_cuda_facts reports on the nvidia-h200 kinds (their vpsim run environment, 2026-11-29). */
static exec_facts h200(void)
{
    exec_facts f;
    memset(&f, 0, sizeof(f));
    snprintf(f.device, sizeof(f.device), "cuda");
    snprintf(f.gpu_name, sizeof(f.gpu_name), "NVIDIA H200");
    f.sms = 132;
    f.memory_gib = 139.8;
    f.cc = 90;
    snprintf(f.clocks, sizeof(f.clocks), "SM 1980 MHz, memory 3201 MHz, 39 C, 90 W");
    snprintf(f.cpu_vendor, sizeof(f.cpu_vendor), "intel");
    snprintf(f.host, sizeof(f.host), "testhost");
    snprintf(f.label, sizeof(f.label), "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)");
    return f;
}

Test(cal_facts, names_compare_without_case_or_blanks_and_sms_tell_parts_apart)
{
    exec_facts f = h200();
    char diff[400];
    cr_assert_not(cal_facts_differ(&f, "NVIDIA H200", 132, diff, sizeof(diff)));
    cr_assert_not(cal_facts_differ(&f, "nvidia  h200 ", 0, diff, sizeof(diff)), "blanks and case do not matter");
    cr_assert_not(cal_facts_differ(&f, "", 188, diff, sizeof(diff)), "a base that names no GPU differs from none");
    cr_assert(cal_facts_differ(&f, "NVIDIA RTX PRO 6000 Blackwell Server Edition", 188, diff, sizeof(diff)));
    cr_assert_str_eq(diff, "measured on NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB), but the base names NVIDIA RTX PRO "
                           "6000 Blackwell Server Edition");
    cr_assert(cal_facts_differ(&f, "NVIDIA H200 NVL", 132, diff, sizeof(diff)), "another part's name is another part");
    cr_assert(cal_facts_differ(&f, "NVIDIA H200", 114, diff, sizeof(diff)));
    cr_assert_str_eq(diff, "measured on NVIDIA H200 with 132 SMs, but the base's NVIDIA H200 has 114");
}

/* The class of the issue: an H200's measurements into the RTX PRO 6000's file. Refused unless the base
 * was given explicitly, and the refusal points at the files that name an H200. */
Test(cal_facts, an_h200_into_the_rtx_pro_6000_base_is_refused_without_base, .init = cr_redirect_stderr)
{
    exec_facts f = h200();
    char mismatch[400] = "x";
    const char *rtx = "configs/systems/rtx-pro-6000-8x-pcie.yaml";
    cr_assert_eq(cal_facts_check("calibrate", &f, rtx, false, mismatch, sizeof(mismatch)), 2);
    cr_assert_str_eq(mismatch, "", "nothing to write on a refusal");
    fflush(stderr);
    char err[4096] = "";
    FILE *e = cr_get_redirected_stderr();
    const size_t got = fread(err, 1, sizeof(err) - 1, e);
    err[got] = '\0';
    cr_assert_not_null(strstr(err, "vpsim calibrate: base configs/systems/rtx-pro-6000-8x-pcie.yaml: measured on NVIDIA "
                                   "H200 (sm_90, 132 SMs, 139.8 GiB), but the base names NVIDIA RTX PRO 6000"), "%s", err);
    cr_assert_not_null(strstr(err, "configs/systems/h200-1x.yaml"), "the H200 files are offered:\n%s", err);
    cr_assert_null(strstr(err, "rtx-pro-6000-4x-pcie.yaml,"), "an RTX file is no H200's:\n%s", err);
    /* --base given: written, the mismatch kept for the header. */
    cr_assert_eq(cal_facts_check("calibrate", &f, rtx, true, mismatch, sizeof(mismatch)), 0);
    cr_assert_not_null(strstr(mismatch, "but the base names NVIDIA RTX PRO 6000 Blackwell Server Edition"), "%s", mismatch);
    /* Its own base: no mismatch, explicit or not. */
    cr_assert_eq(cal_facts_check("calibrate", &f, "configs/systems/h200-1x.yaml", false, mismatch, sizeof(mismatch)), 0);
    cr_assert_str_eq(mismatch, "");
}

/* The CPU device's facts are a self-test's: they name no GPU, so any GPU base differs from them. */
Test(cal_facts, the_cpu_device_says_it_is_a_self_test)
{
    dist_job d;
    memset(&d, 0, sizeof(d));
    snprintf(d.host, sizeof(d.host), "testhost");
    exec_facts f;
    exec_device_facts(&d, CFG_DEVICE_CPU, &f);
    cr_assert(f.self_test);
    cr_assert_str_eq(f.device, "cpu");
    cr_assert_eq(strncmp(f.gpu_name, "CPU device (", 12), 0, "%s", f.gpu_name);
    cr_assert_eq(f.sms, 0);
    cr_assert_eq(f.cc, 0);
    char diff[400];
    cr_assert(cal_facts_differ(&f, "NVIDIA H200", 132, diff, sizeof(diff)));
}

/* The probe's file from an H200's facts into the RTX base, --base given: the gpu section is the H200's,
 * each value with its provenance; the header names the mismatch; the base's unmeasured values keep
 * theirs; it binds as a system file. */
Test(cal_facts, a_probe_written_into_another_base_on_purpose_says_so)
{
    exec_links_result r;
    memset(&r, 0, sizeof(r));
    r.ranks = 1;
    r.paths.gpus = 1;
    r.reps = 3;
    snprintf(r.device_name, sizeof(r.device_name), "NVIDIA H200");
    r.eager_launch_us = r.eager_gap_us = r.graph_node_us = r.graph_launch_us = -1;
    const exec_facts f = h200();
    const char *rtx = th_path("configs/systems/rtx-pro-6000-8x-pcie.yaml");
    char mismatch[400];
    cr_assert_eq(cal_facts_check("probe", &f, rtx, true, mismatch, sizeof(mismatch)), 0);
    const probe_input in = {.links = &r, .device = CFG_DEVICE_CUDA, .date = "2026-01-02 03:04 UTC", .host = "testhost",
                            .base = rtx, .cpu_vendor = f.cpu_vendor, .facts = &f, .mismatch = mismatch};
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    const char *t = out.s;
    cr_assert_not_null(strstr(t, "#   MISMATCH, written because --base "), "%s", t);
    cr_assert_not_null(strstr(t, "\n  name: \"NVIDIA H200\"  # measured: probe, 2026-01-02 03:04 UTC, testhost, NVIDIA "
                                 "H200: cudaGetDeviceProperties; NVML then: SM 1980 MHz"), "%s", t);
    cr_assert_not_null(strstr(t, "\n  sms: 132  # measured: probe, "), "%s", t);
    cr_assert_not_null(strstr(t, "\n  memory_gib: 139.8  # measured: probe, "), "%s", t);
    cr_assert_not_null(strstr(t, "\n  cc: 90  # measured: probe, "), "%s", t);
    cr_assert_not_null(strstr(t, "\n  mem_bw_gbs: 1792  # spec: 512-bit GDDR7"), "the base's own value and tag:\n%s", t);
    cr_assert_not_null(strstr(t, "\n  cpu_vendor: intel  # measured: probe, "), "%s", t);
    cr_assert_null(strstr(t, "SELF-TEST"), "a GPU's probe is no self-test:\n%s", t);
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text(t, strlen(t), "probe test", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    cfg_system sys;
    memset(&sys, 0, sizeof(sys));
    cr_assert_eq(cfg_schema_bind(cfg_system_fields, cfg_doc_root(doc), &sys, "", &err), 0, "%s", err.msg);
    cr_assert_str_eq(sys.gpu.name, "NVIDIA H200");
    cr_assert_eq(sys.gpu.sms, 132);
    cr_assert_eq(sys.topology.cpu_vendor, CFG_CPU_INTEL);
    cfg_schema_free(cfg_system_fields, &sys);
    cfg_doc_free(doc);
    util_buf_free(&out);
}

/* A self-test probe (the CPU device) tags every value it writes, the CPU vendor included. */
Test(cal_facts, a_cpu_probe_tags_every_value_self_test)
{
    exec_links_result r;
    memset(&r, 0, sizeof(r));
    r.ranks = 2;
    r.paths.gpus = 2;
    r.reps = 3;
    snprintf(r.device_name, sizeof(r.device_name), "host CPU");
    r.eager_launch_us = 0.5, r.eager_gap_us = 0.1, r.graph_node_us = -1, r.graph_launch_us = -1;
    r.memcpy_lat_us = 0.2;
    dist_job d;
    memset(&d, 0, sizeof(d));
    exec_facts f;
    exec_device_facts(&d, CFG_DEVICE_CPU, &f);
    snprintf(f.cpu_vendor, sizeof(f.cpu_vendor), "intel");
    const probe_input in = {.links = &r, .device = CFG_DEVICE_CPU, .date = "2026-01-02 03:04 UTC", .host = "testhost",
                            .base = th_path("configs/systems/h200-1x.yaml"), .cpu_vendor = f.cpu_vendor, .facts = &f};
    util_buf out = {0};
    cr_assert_eq(probe_system_text(&in, &out), 0);
    int tagged = 0;
    static const char *const keys[] = {"\n  gpus: ", "\n  eager_us: ", "\n  eager_gap_us: ", "\n  memcpy_lat_us: ",
                                       "\n  p2p: ", "\n  cpu_vendor: ", "\n  name: \"CPU device"};
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        const char *at = strstr(out.s, keys[k]);
        cr_assert_not_null(at, "%s missing:\n%s", keys[k], out.s);
        const char *eol = strchr(at + 1, '\n'), *tag = strstr(at, "  # SELF-TEST (the CPU device");
        cr_assert(tag && tag < eol, "%s not tagged:\n%.200s", keys[k], at);
        tagged++;
    }
    cr_assert_eq(tagged, 7);
    util_buf_free(&out);
}

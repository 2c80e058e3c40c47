/* Per-size allreduce backend selection: size parsing, the rule language, and vLLM/SGLang's choice. */
#include "../../sim/config/cfg.h"
#include "../../sim/config/cfg_policy.h"

#include <criterion/criterion.h>
#include <string.h>

static long long bytes_of(const char *s)
{
    long long v = -7;
    cr_assert_eq(cfg_parse_bytes(s, &v), 0, "'%s' should parse", s);
    return v;
}

Test(cfg_policy, sizes_parse_with_binary_suffixes)
{
    cr_assert_eq(bytes_of("16"), 16);
    cr_assert_eq(bytes_of("43008"), 43008);
    cr_assert_eq(bytes_of("42K"), 42 * 1024);
    cr_assert_eq(bytes_of("42k"), 42 * 1024);
    cr_assert_eq(bytes_of("8M"), 8 << 20);
    cr_assert_eq(bytes_of("8MB"), 8 << 20);
    cr_assert_eq(bytes_of("8MiB"), 8 << 20);
    cr_assert_eq(bytes_of("1G"), 1LL << 30);
    cr_assert_eq(bytes_of("512B"), 512);
}

Test(cfg_policy, bad_sizes_are_refused)
{
    const char *bad[] = {"", "K", "1.5M", "-1", "8Q", "8 M", "M8", "99999999999999999999", "8MiBx", "0x10"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        long long v;
        cr_assert_eq(cfg_parse_bytes(bad[i], &v), -1, "'%s' should not parse", bad[i]);
    }
}

Test(cfg_policy, formatting_round_trips)
{
    long long cases[] = {1, 16, 1000, 1024, 43008, 262143, 262144, 8 << 20, (8 << 20) - 1, 3LL << 30};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[32];
        cr_assert_eq(bytes_of(cfg_format_bytes(cases[i], buf, sizeof(buf))), cases[i], "%s", buf);
    }
    char buf[32];
    cr_assert_str_eq(cfg_format_bytes(43008, buf, sizeof(buf)), "42K");
    cr_assert_str_eq(cfg_format_bytes(8 << 20, buf, sizeof(buf)), "8M");
    cr_assert_str_eq(cfg_format_bytes(1000, buf, sizeof(buf)), "1000");
}

Test(cfg_policy, rules_pick_by_size_with_inclusive_bounds)
{
    cfg_policy p;
    char why[256] = "";
    cr_assert_eq(cfg_policy_parse("oneshot<=256K,twoshot<=8M,nccl", &p, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(p.n, 3);
    cr_assert_eq(cfg_policy_pick(&p, 16), CFG_BACKEND_ONESHOT);
    cr_assert_eq(cfg_policy_pick(&p, 43008), CFG_BACKEND_ONESHOT, "the verify pass's 42 KB allreduce");
    cr_assert_eq(cfg_policy_pick(&p, 256 << 10), CFG_BACKEND_ONESHOT);
    cr_assert_eq(cfg_policy_pick(&p, (256 << 10) + 1), CFG_BACKEND_TWOSHOT);
    cr_assert_eq(cfg_policy_pick(&p, 8 << 20), CFG_BACKEND_TWOSHOT);
    cr_assert_eq(cfg_policy_pick(&p, (8 << 20) + 1), CFG_BACKEND_NCCL);
    char buf[128];
    cr_assert_str_eq(cfg_policy_format(&p, buf, sizeof(buf)), "oneshot<=256K,twoshot<=8M,nccl");
}

Test(cfg_policy, a_single_backend_is_a_policy)
{
    cfg_policy p;
    char why[256] = "";
    cr_assert_eq(cfg_policy_parse("push", &p, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(cfg_policy_pick(&p, 1LL << 40), CFG_BACKEND_PUSH);
    cfg_policy q;
    cfg_policy_single(&q, CFG_BACKEND_PUSH);
    cr_assert_eq(memcmp(&p, &q, sizeof(p)), 0);
}

static void refused(const char *spec, const char *needle)
{
    cfg_policy p;
    char why[256] = "";
    cr_assert_eq(cfg_policy_parse(spec, &p, why, sizeof(why)), -1, "'%s' should be refused", spec);
    cr_assert(strstr(why, needle) != NULL, "'%s': message '%s' lacks '%s'", spec, why, needle);
}

Test(cfg_policy, bad_policies_say_what_is_wrong)
{
    refused("", "empty");
    refused("carrier-pigeon", "valid choices: nccl, nccl-symm, oneshot, twoshot, push, mpi");
    refused("none", "valid choices");
    refused("model<=1K,nccl", "unknown backend 'model'");
    refused("oneshot<=1K", "last rule must have no bound");
    refused("oneshot<=1K,", "trailing comma");
    refused("nccl,oneshot", "follows the unbounded rule");
    refused("oneshot<=8M,twoshot<=1M,nccl", "bounds must increase");
    refused("oneshot<=1K,twoshot<=1K,nccl", "bounds must increase");
    refused("oneshot<=lots,nccl", "not a size");
    refused("oneshot<=0,nccl", "not a size");
    refused("oneshot,,nccl", "empty");
    refused("push<=1,push<=2,push<=3,push<=4,push<=5,push<=6,push<=7,push<=8,nccl", "more than 8 rules");
}

Test(cfg_policy, vllm_gates_custom_allreduce_off_on_pcie_beyond_two_gpus)
{
    cfg_policy p;
    char why[256] = "";
    cr_assert_eq(cfg_policy_vllm(8, false, &p, why, sizeof(why)), -1);
    cr_assert(strstr(why, "without full NVLink") != NULL, "%s", why);
    cr_assert_eq(cfg_policy_pick(&p, 43008), CFG_BACKEND_NCCL);
    cr_assert_eq(cfg_policy_vllm(4, false, &p, why, sizeof(why)), -1);
    cr_assert_eq(cfg_policy_vllm(3, true, &p, why, sizeof(why)), -1);
    cr_assert(strstr(why, "2, 4, 6, 8") != NULL, "%s", why);
}

Test(cfg_policy, vllm_two_gpus_always_use_one_shot_below_max_size)
{
    cfg_policy p;
    char why[256] = "";
    cr_assert_eq(cfg_policy_vllm(2, false, &p, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(cfg_policy_pick(&p, 43008), CFG_BACKEND_ONESHOT);
    cr_assert_eq(cfg_policy_pick(&p, (8 << 20) - 1), CFG_BACKEND_ONESHOT);
    cr_assert_eq(cfg_policy_pick(&p, 8 << 20), CFG_BACKEND_NCCL, "max_size is exclusive");
}

Test(cfg_policy, vllm_full_nvlink_thresholds)
{
    cfg_policy p;
    char why[256] = "";
    cr_assert_eq(cfg_policy_vllm(8, true, &p, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(cfg_policy_pick(&p, 43008), CFG_BACKEND_ONESHOT);
    cr_assert_eq(cfg_policy_pick(&p, (256 << 10) - 1), CFG_BACKEND_ONESHOT);
    cr_assert_eq(cfg_policy_pick(&p, 256 << 10), CFG_BACKEND_TWOSHOT, "8 GPUs: one-shot only below 256 KiB");
    cr_assert_eq(cfg_policy_pick(&p, 8 << 20), CFG_BACKEND_NCCL);
    cr_assert_eq(cfg_policy_vllm(4, true, &p, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(cfg_policy_pick(&p, 300 << 10), CFG_BACKEND_ONESHOT, "4 GPUs: one-shot below 512 KiB");
    cr_assert_eq(cfg_policy_pick(&p, 512 << 10), CFG_BACKEND_TWOSHOT);
    cr_assert_eq(cfg_policy_vllm(6, true, &p, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(cfg_policy_pick(&p, 300 << 10), CFG_BACKEND_TWOSHOT, "6 GPUs: the 8-GPU threshold");
    char buf[128];
    cfg_policy_vllm(8, true, &p, why, sizeof(why));
    cr_assert_str_eq(cfg_policy_format(&p, buf, sizeof(buf)), "oneshot<=262143,twoshot<=8388607,nccl");
}

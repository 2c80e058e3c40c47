/* vpsim calibrate with many GEMM sizes: the merged table holds at most CAL_MAX_POINTS points however many
 * sizes the plan has (merge_points once wrote one point per size group into a 33-entry stack array:
 * 100 sizes passed silently in a release build, 520 crashed it). */
#include "../../sim/calib/cal_system.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A one-rank plan of `n` GEMMs whose sizes grow by 10.5% each (every one its own group at the first
 * merge ratio), and results giving op i a duration of 1 + i us. */
static void write_plan_and_results(int n, char **plan_path, char **results_path)
{
    util_buf plan_doc = {0}, res = {0};
    util_buf_printf(&plan_doc, "{\"schema\": \"vpsim.plan/1\", \"scenario\": \"many-gemms\", \"ranks\": 1, \"batch\": 1,"
                           " \"context\": 16, \"expected_tokens\": 1, \"phases\": [{\"name\": \"decode\", \"kind\":"
                           " \"decode\", \"model\": \"target\", \"tokens\": 1, \"batch\": 1, \"ops\": [\n");
    /* What calibrate checks first (cal_results.h): a whole results record (docs/schemas/results.schema.json)
     * of a GPU run of this very plan. */
    util_buf_printf(&res, "{\"schema\": \"vpsim.results/1\", \"mode\": \"run\", \"scenario\": \"many-gemms\","
                          " \"scenario_path\": null, \"system\": \"h200\", \"model\": null, \"tp\": 1, \"batch\": 1,"
                          " \"context\": 16, \"graph\": true, \"expected_tokens\": 1, \"tokens_formula\": null,"
                          " \"provenance\": null, \"measured\": {\"ranks\": 1, \"iters\": 1, \"graph\": true,"
                          " \"cycle_median_ms\": 1, \"cycle_p10_ms\": 1, \"cycle_p90_ms\": 1, \"cycle_min_ms\": 1,"
                          " \"cycle_max_ms\": 1, \"instrumented_passes\": 1, \"instrumented_pass_median_ms\": 1,"
                          " \"instrumented_as_graph\": false, \"timer_overhead_us\": 0, \"timer_empty_pair_us\": 0,"
                          " \"check_failures\": 0}, \"model_comparison\": null, \"command_line\": [],"
                          " \"environment\": {\"device\": \"cuda\", \"gpu\": \"NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)\"},"
                          " \"backends\": [{\"backend\": \"none\", \"available\": true, \"reason\": null,"
                          " \"allreduce_us\": 0, \"allreduce_method\": \"\", \"allgather_us\": 0, \"verify_ms\": 1,"
                          " \"verify_gemm_ms\": 1, \"verify_attention_ms\": 0, \"verify_comm_ms\": 0, \"verify_other_ms\": 0,"
                          " \"draft_ms\": 0, \"draft_steps_ms\": 0, \"draft_extend_ms\": 0, \"host_ms\": 0, \"cycle_ms\": 1,"
                          " \"tokens_per_cycle\": 1, \"tok_per_s\": 1000, \"phases\": [], \"ops\": [\n");
    for (int i = 0; i < n; i++) {
        long long nk = (long long)sqrt(16.0 * pow(1.105, i)) + 1;
        util_buf_printf(&plan_doc,
                        "%s{\"kind\": \"gemm\", \"name\": \"g%d\", \"layer\": 0, \"stream\": \"main\", \"adtype\": "
                        "\"bf16\", \"m\": 1, \"n\": %lld, \"k\": %lld, \"batch\": 1, \"wdtype\": \"bf16\", \"wgroup\": 0}\n",
                        i ? "," : "", i, nk, nk);
        util_buf_printf(&res, "%s{\"phase\": \"decode\", \"index\": %d, \"name\": \"g%d\", \"kind\": \"gemm\", \"layer\": 0,"
                              " \"us\": %d}\n", i ? "," : "", i, i, 1 + i);
    }
    util_buf_printf(&plan_doc, "]}]}\n");
    util_buf_printf(&res, "]}]}\n");
    *plan_path = th_write_temp(plan_doc.s, plan_doc.len, ".json");
    *results_path = th_write_temp(res.s, res.len, ".json");
    util_buf_free(&plan_doc);
    util_buf_free(&res);
}

/* Calibrate against `n` sizes: exit 0, a gemm table of at most CAL_MAX_POINTS points, bytes rising. */
static void calibrate_many(int n)
{
    char *plan_file, *results;
    write_plan_and_results(n, &plan_file, &results);
    th_result r = th_run("calibrate --plan '%s' --results '%s' --base configs/systems/h200-1x.yaml", plan_file, results);
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    char want[64];
    snprintf(want, sizeof(want), "%d ops merged into ", n);
    const char *src = strstr(r.out, want);
    cr_assert_not_null(src, "stdout lacks '%s':\n%s", want, r.out);
    int points = atoi(src + strlen(want));
    cr_assert(points >= 1 && points <= CAL_MAX_POINTS, "%d points", points);
    const char *bytes = strstr(r.out, "bytes: [");
    cr_assert_not_null(bytes, "%s", r.out);
    double prev = -1;
    int count = 0;
    for (const char *p = bytes + 8; *p && *p != ']'; count++) {
        char *end;
        double v = strtod(p, &end);
        cr_assert(end != p && v > prev, "bytes not rising at point %d:\n%s", count, r.out);
        prev = v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    cr_assert_eq(count, points, "%d byte values for %d points", count, points);
    th_free(&r);
    unlink(plan_file);
    unlink(results);
    free(plan_file);
    free(results);
}

Test(calibrate_points, hundred_gemm_sizes_fit_the_table, .timeout = 60)
{
    calibrate_many(100);
}

/* 300 sizes growing 10.5% a step end near 1e14 bytes, under the plan loader's 1 PiB bound per op. */
Test(calibrate_points, three_hundred_gemm_sizes_do_not_crash, .timeout = 60)
{
    calibrate_many(300);
}

Test(calibrate_points, merge_never_writes_past_max)
{
    enum { N = 600, MAX = 4, GUARD = 8 };
    cal_point *in = calloc(N, sizeof(cal_point));
    for (int i = 0; i < N; i++)
        in[i] = (cal_point){16.0 * pow(1.3, i % 200) + i, (double)i};
    /* Sorted by bytes, as calibrate hands them over. */
    for (int i = 1; i < N; i++)
        for (int j = i; j > 0 && in[j - 1].bytes > in[j].bytes; j--) {
            cal_point t = in[j];
            in[j] = in[j - 1];
            in[j - 1] = t;
        }
    cal_point out[MAX + GUARD];
    for (int i = 0; i < MAX + GUARD; i++)
        out[i] = (cal_point){-7, -7};
    int m = cal_merge_points(in, N, out, MAX);
    cr_assert(m >= 1 && m <= MAX, "%d points", m);
    for (int i = MAX; i < MAX + GUARD; i++)
        cr_assert(out[i].bytes == -7 && out[i].us == -7, "out[%d] was written (max %d)", i, MAX);
    free(in);
}

Test(calibrate_points, merge_handles_edge_counts)
{
    cal_point out[CAL_MAX_POINTS];
    cr_assert_eq(cal_merge_points(NULL, 0, out, CAL_MAX_POINTS), 0);
    cal_point one = {100, 5};
    cr_assert_eq(cal_merge_points(&one, 1, out, CAL_MAX_POINTS), 1);
    cr_assert(out[0].us == 5);
    /* Zero-byte ops (and only those) still merge into one point. */
    cal_point zeros[40];
    for (int i = 0; i < 40; i++)
        zeros[i] = (cal_point){0, (double)i};
    cr_assert_eq(cal_merge_points(zeros, 40, out, 1), 1);
    /* The widest spread doubles allow still ends in `max` points. */
    cal_point wide[3] = {{0, 1}, {1, 2}, {1e300, 3}};
    cr_assert_eq(cal_merge_points(wide, 3, out, 1), 1);
}

/* The refusals, on hand-made tables: tolerance max(20 %, 0.5 us) below the slowest earlier point. */
Test(calibrate_points, check_refuses_zero_and_falling_times_only_beyond_the_noise)
{
    char why[400];
    const cal_point fine[] = {{100, 1.0}, {200, 0.9}, {400, 0.55}, {800, 10}, {1600, 8.1}, {3200, 20}};
    /* 0.9: 10 % below 1.0; 0.55: 45 % below but only 0.45 us; 8.1: 19 % below 10. */
    cr_assert_eq(cal_check_points("gemm", fine, 6, why, sizeof(why)), -1, "%s", why);
    const cal_point falls[] = {{100, 10}, {200, 7.9}};
    cr_assert_eq(cal_check_points("gemm", falls, 2, why, sizeof(why)), 1);
    cr_assert_not_null(strstr(why, "gemm at 200 B: 7.9 us, below 10 us at 100 B by 21 % (2.10 us)"), "%s", why);
    /* A slow slide is measured against the slowest earlier point, not the previous one. */
    const cal_point slide[] = {{100, 10}, {200, 9}, {300, 8.5}, {400, 7.9}};
    cr_assert_eq(cal_check_points("norm", slide, 4, why, sizeof(why)), 3);
    cr_assert_not_null(strstr(why, "norm at 400 B"), "%s", why);
    const cal_point zero[] = {{100, 1}, {200, 0}};
    cr_assert_eq(cal_check_points("elementwise", zero, 2, why, sizeof(why)), 1);
    cr_assert_not_null(strstr(why, "elementwise at 200 B: 0 us; a measured time must be > 0"), "%s", why);
    const cal_point negative[] = {{100, -1}};
    cr_assert_eq(cal_check_points("norm", negative, 1, why, sizeof(why)), 0);
}

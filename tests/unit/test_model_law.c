/* model: the probed compute laws (docs/model.md "Probed compute laws") against values computed by hand,
 * their checks, and their place in model_op_us (probed law, then measured.ops, then the formula). */
#include "../../sim/model/model.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB4 4194304.0
#define MB16 16777216.0
#define MB64 67108864.0
#define EPS 1e-5

/* docs/model.md's worked example: a gemm_wide table with points at rows 2 and 4. */
static cfg_law_table example(void)
{
    return (cfg_law_table){.n_rows = 6, .n_bytes = 6, .n_us = 6, .rows = {2, 2, 2, 4, 4, 4},
                           .bytes = {MB4, MB16, MB64, MB4, MB16, MB64}, .us = {3.0, 6.5, 19.0, 3.4, 7.3, 21.0},
                           .source = "docs example"};
}

static const model_term *term(const model_terms *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->t[i].name, name) == 0)
            return &t->t[i];
    cr_assert_fail("no term %s", name);
    return NULL;
}

/* ---------------- the law ---------------- */

Test(model_law, bytes_between_two_points_are_linear)
{
    cfg_law_table t = example();
    /* rows 2: (5500000 - 4194304) / (16777216 - 4194304) = 1305696 / 12582912 = 0.1037674;
     * 3.0 + 0.1037674 x 3.5 = 3.363186 */
    cr_assert_float_eq(model_law_eval(&t, 2, 5.5e6, 0, NULL), 3.363186, EPS);
    /* rows 4, between 16 and 64 MiB: (33554432 - 16777216) / 50331648 = 1/3; 7.3 + 13.7 / 3 = 11.866667 */
    cr_assert_float_eq(model_law_eval(&t, 4, 33554432, 0, NULL), 11.866667, EPS);
    /* On a point: its own time. */
    cr_assert_float_eq(model_law_eval(&t, 2, MB16, 0, NULL), 6.5, 1e-12);
    cr_assert_float_eq(model_law_eval(&t, 4, MB64, 0, NULL), 21.0, 1e-12);
}

Test(model_law, below_the_smallest_point_the_op_is_no_faster)
{
    cfg_law_table t = example();
    cr_assert_float_eq(model_law_eval(&t, 2, 1000, 0, NULL), 3.0, 1e-12);
    cr_assert_float_eq(model_law_eval(&t, 4, 1, 0, NULL), 3.4, 1e-12);
    cr_assert_float_eq(model_law_eval(&t, 2, MB4, 0, NULL), 3.0, 1e-12);
}

Test(model_law, above_the_largest_point_a_rising_last_segment_sets_the_slope)
{
    cfg_law_table t = example();
    model_terms terms = {.n = 0};
    /* rows 4: s = (21.0 - 7.3) / (67108864 - 16777216) = 13.7 / 50331648 = 2.721945e-7 us/B;
     * 21.0 + (1e8 - 67108864) x s = 21.0 + 32891136 x 2.721945e-7 = 29.952788 */
    cr_assert_float_eq(model_law_eval(&t, 4, 1e8, 0, &terms), 29.952788, EPS);
    cr_assert(strstr(term(&terms, "law@rows 4")->note, "last segment's slope"), "%s", term(&terms, "law@rows 4")->note);
    /* docs/model.md: the same at rows 8, above the largest rows (the rows-4 law). */
    cr_assert_float_eq(model_law_eval(&t, 8, 1e8, 0, NULL), 29.952788, EPS);
}

Test(model_law, above_the_largest_point_a_falling_or_flat_last_segment_uses_the_average_rate)
{
    /* Falling 9 -> 8 us: s = 8 / 4e6 = 2e-6 us/B; at 8e6: 8 + 4e6 x 2e-6 = 16. */
    cfg_law_table t = {.n_rows = 3, .n_bytes = 3, .n_us = 3, .rows = {1, 1, 1}, .bytes = {1e6, 2e6, 4e6},
                       .us = {5, 9, 8}};
    model_terms terms = {.n = 0};
    cr_assert_float_eq(model_law_eval(&t, 1, 8e6, 0, &terms), 16.0, 1e-9);
    cr_assert(strstr(term(&terms, "law@rows 1")->note, "not rising"), "%s", term(&terms, "law@rows 1")->note);
    /* Inside the table the falling segment is still followed: 3e6 is halfway from 9 to 8. */
    cr_assert_float_eq(model_law_eval(&t, 1, 3e6, 0, NULL), 8.5, 1e-9);
    /* Flat 9 -> 9 us: s = 9 / 4e6; at 8e6: 9 + 4e6 x 9 / 4e6 = 18. */
    t.us[2] = 9;
    cr_assert_float_eq(model_law_eval(&t, 1, 8e6, 0, NULL), 18.0, 1e-9);
}

Test(model_law, one_point_holds_below_and_scales_with_bytes_above)
{
    cfg_law_table t = {.n_rows = 1, .n_bytes = 1, .n_us = 1, .rows = {8}, .bytes = {1e6}, .us = {4}};
    cr_assert_float_eq(model_law_eval(&t, 8, 5e5, 0, NULL), 4.0, 1e-12);
    cr_assert_float_eq(model_law_eval(&t, 8, 1e6, 0, NULL), 4.0, 1e-12);
    cr_assert_float_eq(model_law_eval(&t, 8, 3e6, 0, NULL), 12.0, 1e-9, "4 x 3e6 / 1e6");
    /* Rows do not matter with one rows value. */
    cr_assert_float_eq(model_law_eval(&t, 1, 3e6, 0, NULL), 12.0, 1e-9);
    cr_assert_float_eq(model_law_eval(&t, 64, 3e6, 0, NULL), 12.0, 1e-9);
}

Test(model_law, rows_between_two_groups_are_linear_in_log_rows)
{
    cfg_law_table t = example();
    model_terms terms = {.n = 0};
    /* docs/model.md: f(rows 2) = 3.0 + 0.1037674 x 3.5 = 3.363186; f(rows 4) = 3.4 + 0.1037674 x 3.9 = 3.804693;
     * w = ln(3/2) / ln(4/2) = 0.5849625; 3.363186 + 0.5849625 x 0.441507 = 3.621451 */
    const double us = model_law_eval(&t, 3, 5.5e6, 0, &terms);
    cr_assert_float_eq(us, 3.621451, EPS);
    cr_assert_float_eq(term(&terms, "law@rows 2")->value, 3.363186, EPS);
    cr_assert_float_eq(term(&terms, "law@rows 4")->value, 3.804693, EPS);
    cr_assert_float_eq(term(&terms, "t_law")->value, us, 1e-12);
    cr_assert(strstr(term(&terms, "t_law")->note, "rows 3 between 2 and 4 (log)"), "%s", term(&terms, "t_law")->note);
    cr_assert(strstr(term(&terms, "law@rows 2")->note, "between 4.194e+06 and 1.678e+07 (linear)"), "%s",
              term(&terms, "law@rows 2")->note);
}

Test(model_law, the_two_groups_around_the_rows_are_the_ones_used)
{
    /* rows 2, 4, 16; rows 8 lies between 4 and 16: w = ln(8/4) / ln(16/4) = 0.5. At 16 MiB: f(4) = 7.3,
     * f(16) = 10: 7.3 + 0.5 x 2.7 = 8.65 (rows 2's 6.5 plays no part). */
    cfg_law_table t = example();
    const double b[] = {MB4, MB16, MB64}, u[] = {5, 10, 30};
    for (int i = 0; i < 3; i++) {
        t.rows[6 + i] = 16;
        t.bytes[6 + i] = b[i];
        t.us[6 + i] = u[i];
    }
    t.n_rows = t.n_bytes = t.n_us = 9;
    cr_assert_str_eq(model_law_check(&t), "");
    cr_assert_float_eq(model_law_eval(&t, 8, MB16, 0, NULL), 8.65, 1e-9);
    /* Exactly on the middle group: its law alone. */
    cr_assert_float_eq(model_law_eval(&t, 4, MB16, 0, NULL), 7.3, 1e-12);
}

Test(model_law, rows_outside_the_table_take_the_nearest_group)
{
    cfg_law_table t = example();
    model_terms terms = {.n = 0};
    cr_assert_float_eq(model_law_eval(&t, 1, 5.5e6, 0, &terms), 3.363186, EPS, "rows 1 < 2: the rows-2 law");
    cr_assert(strstr(term(&terms, "t_law")->note, "below the smallest"), "%s", term(&terms, "t_law")->note);
    terms.n = 0;
    cr_assert_float_eq(model_law_eval(&t, 100, 5.5e6, 0, &terms), 3.804693, EPS, "rows 100 > 4: the rows-4 law");
    cr_assert(strstr(term(&terms, "t_law")->note, "above the largest"), "%s", term(&terms, "t_law")->note);
}

Test(model_law, an_empty_table_has_no_value)
{
    cfg_law_table t = {.n_rows = 0};
    cr_assert(isnan(model_law_eval(&t, 3, 1e6, 0, NULL)));
    cfg_law_table u = example();
    u.n_us = 5; /* unequal lists are never read */
    cr_assert(isnan(model_law_eval(&u, 3, 1e6, 0, NULL)));
}

/* ---------------- the checks ---------------- */

Test(model_law, sound_tables_pass_the_check)
{
    cfg_law_table t = example(); /* bytes fall from 64 MiB to 4 MiB across the rows change: allowed */
    cr_assert_str_eq(model_law_check(&t), "");
    cfg_law_table empty = {.n_rows = 0};
    cr_assert_str_eq(model_law_check(&empty), "");
}

Test(model_law, every_unsound_table_is_named)
{
    cfg_law_table t = example();
    t.n_us = 5;
    cr_assert(strstr(model_law_check(&t), "(rows has 6, bytes 6, us 5)"), "%s", model_law_check(&t));
    t = example();
    t.rows[5] = 1;
    cr_assert(strstr(model_law_check(&t), "rows must be ascending (rows[5]=1 after 4)"), "%s", model_law_check(&t));
    t = example();
    t.bytes[2] = MB16;
    cr_assert(strstr(model_law_check(&t), "bytes must be strictly increasing within rows 2 (bytes[2]=1.67772e+07 "
                                          "after 1.67772e+07)"), "%s", model_law_check(&t));
    t = example();
    t.us[4] = -1;
    cr_assert(strstr(model_law_check(&t), "us must be >= 0 (us[4]=-1)"), "%s", model_law_check(&t));
    t = example();
    t.rows[0] = 0;
    cr_assert(strstr(model_law_check(&t), "rows and bytes must be > 0 (point 0"), "%s", model_law_check(&t));
    t = example();
    t.bytes[3] = NAN;
    cr_assert(strstr(model_law_check(&t), "rows and bytes must be > 0 (point 3"), "%s", model_law_check(&t));
}

/* ---------------- the width coordinate (grouped classes) ---------------- */

/* Two widths, 144 and 576, each with rows 1 and 2 at 1 and 4 MiB (docs/model.md "Probed compute laws",
 * the width): at 144 wide the op is slower per byte than at 576. */
static cfg_law_table widths(void)
{
    return (cfg_law_table){.n_width = 8, .n_rows = 8, .n_bytes = 8, .n_us = 8,
                           .width = {144, 144, 144, 144, 576, 576, 576, 576}, .rows = {1, 1, 2, 2, 1, 1, 2, 2},
                           .bytes = {1e6, 4e6, 1e6, 4e6, 1e6, 4e6, 1e6, 4e6}, .us = {4, 10, 5, 12, 3, 6, 4, 8}};
}

Test(model_law, widths_between_two_are_linear_in_log_width)
{
    cfg_law_table t = widths();
    model_terms terms = {.n = 0};
    /* rows 1 at 2.5e6 B: width 144: 4 + 1.5e6 / 3e6 x 6 = 7; width 576: 3 + 0.5 x 3 = 4.5. Width 288:
     * f = ln(288 / 144) / ln(576 / 144) = 0.5: 7 + 0.5 x (4.5 - 7) = 5.75. */
    cr_assert_float_eq(model_law_eval(&t, 1, 2.5e6, 288, &terms), 5.75, 1e-9);
    cr_assert_float_eq(term(&terms, "law@w144 rows 1")->value, 7.0, 1e-9);
    cr_assert_float_eq(term(&terms, "law@w576 rows 1")->value, 4.5, 1e-9);
    cr_assert(strstr(term(&terms, "t_law")->note, "width 288 between 144 and 576 (log): w 0.5000"), "%s",
              term(&terms, "t_law")->note);
    /* rows 1.5 at 1e6 B: width 144: 4 + ln 1.5 / ln 2 x (5 - 4) = 4.5849625; width 576: 3 + 0.5849625 = 3.5849625;
     * width 144 x 2^0.5 (f 0.25): 4.5849625 - 0.25 = 4.3349625. */
    cr_assert_float_eq(model_law_eval(&t, 1.5, 1e6, 144 * sqrt(2.0), NULL), 4.3349625, EPS);
    /* On a width: that width's law alone. */
    cr_assert_float_eq(model_law_eval(&t, 2, 4e6, 576, NULL), 8.0, 1e-12);
    cr_assert_float_eq(model_law_eval(&t, 2, 4e6, 144, NULL), 12.0, 1e-12);
}

Test(model_law, widths_outside_the_table_take_the_nearest_width)
{
    cfg_law_table t = widths();
    model_terms terms = {.n = 0};
    cr_assert_float_eq(model_law_eval(&t, 1, 4e6, 2048, &terms), 6.0, 1e-12, "above 576: the 576 law");
    cr_assert(strstr(term(&terms, "t_law")->note, "above the largest, the law of width 576"), "%s",
              term(&terms, "t_law")->note);
    cr_assert_float_eq(model_law_eval(&t, 1, 4e6, 64, NULL), 10.0, 1e-12, "below 144: the 144 law");
    cr_assert_float_eq(model_law_eval(&t, 1, 4e6, 0, NULL), 10.0, 1e-12, "no width: the smallest width's law");
}

Test(model_law, unsound_widths_are_named)
{
    cfg_law_table t = widths();
    cr_assert_str_eq(model_law_check(&t), "", "rows restart at each width: allowed");
    t.n_width = 7;
    cr_assert(strstr(model_law_check(&t), "width, when given, must have one value per point (width has 7, us 8)"),
              "%s", model_law_check(&t));
    t = widths();
    t.width[4] = 100;
    cr_assert(strstr(model_law_check(&t), "width must be ascending (width[4]=100 after 144)"), "%s",
              model_law_check(&t));
    t = widths();
    t.width[0] = 0;
    cr_assert(strstr(model_law_check(&t), "width must be > 0 (point 0: width 0)"), "%s", model_law_check(&t));
    t = widths();
    t.rows[3] = 0.5;
    cr_assert(strstr(model_law_check(&t), "rows must be ascending within a width (rows[3]=0.5 after 2)"), "%s",
              model_law_check(&t));
    t = widths();
    t.bytes[5] = 1e6;
    cr_assert(strstr(model_law_check(&t), "bytes must be strictly increasing within rows 1 (bytes[5]=1e+06 after "
                                          "1e+06)"), "%s", model_law_check(&t));
}

/* ---------------- in model_op_us, through a system file ---------------- */

/* h200-1x.yaml with a norm law (rows 1 and 4) and a measured.ops.norm table beside it. */
#define NORM_TABLES                                                                                                    \
    "  ops:\n"                                                                                                         \
    "    norm:\n"                                                                                                      \
    "      bytes: [1e5]\n"                                                                                             \
    "      us: [50]\n"                                                                                                 \
    "      source: hand-made ops table\n"                                                                              \
    "  compute:\n"                                                                                                     \
    "    norm:\n"                                                                                                      \
    "      rows: [1, 1, 4, 4]\n"                                                                                       \
    "      bytes: [1e4, 1e6, 1e4, 1e6]\n"                                                                              \
    "      us: [2, 4, 3, 6]\n"                                                                                         \
    "      source: hand-made law, not a measurement\n"

/* A temporary system file: h200-1x.yaml (its last line is `measured: use: true`) plus `extra` under
 * `measured:`. Free and unlink the path. */
static char *system_with(const char *extra)
{
    char *base = th_slurp(th_path("configs/systems/h200-1x.yaml"));
    cr_assert_not_null(base);
    char *text = util_xasprintf("%s%s", base, extra);
    char *path = th_write_temp(text, strlen(text), ".yaml");
    free(text);
    free(base);
    return path;
}

static void load(cfg_scenario *sc, const char *system, const char *const *sets, int n_sets)
{
    cfg_error err;
    int rc = cfg_scenario_load(th_path("configs/default.yaml"), sets, n_sets, system, sc, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
}

/* A decoder layer's RMSNorm at TP=8 shapes, 3 tokens: read 3 x 7168 x 2 + 7168 x 2 (weight) = 57344 B,
 * written 3 x 7168 x 2 = 43008 B: 100352 B, rows 3. */
static plan_op norm_op(void)
{
    plan_op op;
    memset(&op, 0, sizeof(op));
    op.kind = PLAN_OP_NORM;
    op.m = 3;
    op.n = 7168;
    op.batch = 1;
    op.adtype = op.wdtype = CFG_DT_BF16;
    plan_op_finalize(&op);
    return op;
}

/* A norm runs one block per row (kernels/vp_kernels.cu): each rows group is read at the bytes the op
 * would have at that group's rows, (2 m + 1) x 7168 x 2 B, not at its own. The NORM_TABLES law, m = 2:
 * rows 1 at 43008 B: 2 + 33008 / 990000 x 2 = 2.0666828; rows 4 at 129024 B: 3 + 119024 / 990000 x 3 =
 * 3.3606788; w = ln 2 / ln 4 = 0.5: 2.7136808. At the op's own 71680 B both groups would give 2.1246061
 * and 3.1869091: 2.6557576. */
Test(model_law, a_row_parallel_op_reads_each_rows_group_at_its_own_width)
{
    cfg_law_table t = {.n_rows = 4, .n_bytes = 4, .n_us = 4, .rows = {1, 1, 4, 4}, .bytes = {1e4, 1e6, 1e4, 1e6},
                       .us = {2, 4, 3, 6}};
    plan_op op = norm_op();
    op.m = 2;
    plan_op_finalize(&op);
    cr_assert_float_eq(op.bytes_read + op.bytes_written, 71680.0, 0.5);
    model_terms terms = {.n = 0};
    cr_assert_float_eq(model_law_eval_per_row(&t, &op, 2, &terms), 2.7136808, EPS);
    cr_assert_float_eq(term(&terms, "law@rows 1")->value, 2.0666828, EPS);
    cr_assert_float_eq(model_law_eval(&t, 2, 71680, 0, NULL), 2.6557576, EPS, "the bytes rule, for comparison");
}

Test(model_law_op, a_loaded_law_prices_the_op_before_the_ops_table_and_the_formula)
{
    char *path = system_with(NORM_TABLES);
    cfg_scenario sc;
    load(&sc, path, NULL, 0);
    const cfg_law_table *law = &sc.system.measured.compute[CFG_LAW_NORM];
    cr_assert_eq(law->n_rows, 4);
    cr_assert_str_eq(law->source, "hand-made law, not a measurement");
    plan_op op = norm_op();
    double rows = 0;
    cr_assert_eq(plan_op_law_class(&op, &rows), CFG_LAW_NORM);
    cr_assert_float_eq(rows, 3.0, 1e-12);
    cr_assert_float_eq(op.bytes_read + op.bytes_written, 100352.0, 1e-9);
    /* One block per row: each rows group at the op's width, (2 m + 1) x 7168 x 2 B at its rows. f(rows 1) at
     * 43008 B = 2 + 33008 / 990000 x 2 = 2.066683; f(rows 4) at 129024 B = 3 + 119024 / 990000 x 3 = 3.360679;
     * w = ln 3 / ln 4 = 0.7924813; 2.066683 + 0.7924813 x 1.293996 = 3.092150 */
    const char *src = NULL;
    model_terms terms = {.n = 0};
    cr_assert_float_eq(model_op_us(&sc.system, &op, false, &terms, &src), 3.092150, EPS);
    cr_assert_str_eq(src, "probed");
    cr_assert_str_eq(model_op_source(&sc.system, &op), "probed");
    cr_assert_float_eq(model_term_get(&terms, "t_law"), 3.092150, EPS);
    /* Without the law, the measured.ops.norm table: one point, scaled above it: 50 x 100352 / 1e5. */
    cfg_system no_law = sc.system; /* shallow: only the counts change, nothing is freed through it */
    no_law.measured.compute[CFG_LAW_NORM].n_us = 0;
    cr_assert_float_eq(model_op_us(&no_law, &op, false, NULL, &src), 50.176, 1e-9);
    cr_assert_str_eq(src, "measured");
    cfg_scenario_free(&sc);

    /* measured.use: false: the formula, here the kernel floor (gpu.kernel_floor_us 1.25 of h200-1x.yaml;
     * t_mem = 0.6 + 100352 / 4320 GB/s = 0.623 us). */
    const char *off[] = {"system.measured.use=false"};
    load(&sc, path, off, 1);
    cr_assert_float_eq(model_op_us(&sc.system, &op, false, NULL, &src), 1.25, 1e-12);
    cr_assert_str_eq(src, "formula");
    cfg_scenario_free(&sc);
    unlink(path);
    free(path);
}

static plan_op gemm(long long m)
{
    plan_op op;
    memset(&op, 0, sizeof(op));
    op.kind = PLAN_OP_GEMM;
    op.m = m;
    op.k = 4096;
    op.n = 4096;
    op.batch = 1;
    op.wdtype = op.adtype = CFG_DT_BF16;
    plan_op_finalize(&op);
    return op;
}

Test(model_law_op, gemm_rows_above_the_table_keep_the_compute_term)
{
    cfg_scenario sc;
    load(&sc, th_path("configs/systems/h200-1x.yaml"), NULL, 0);
    cfg_system *s = &sc.system;
    cfg_law_table *law = &s->measured.compute[CFG_LAW_GEMM_WIDE];
    *law = (cfg_law_table){.n_rows = 4, .n_bytes = 4, .n_us = 4, .rows = {1, 1, 256, 256},
                           .bytes = {1e6, 1e8, 1e6, 1e8}, .us = {1, 10, 1, 10},
                           .source = law->source}; /* the loaded '' is freed with sc */
    const char *src = NULL;
    /* m = 256 (the largest rows probed): the law alone although t_compute is larger. bytes = 4096 x 4096 x 2
     * + 2 x 256 x 4096 x 2 = 37748736; 1 + (37748736 - 1e6) / 99e6 x 9 = 4.340794. t_compute = 2 x 256 x
     * 4096^2 / (989e6 x 0.8 x min(1, 256 / 64)) = 10.856844 */
    plan_op op = gemm(256);
    cr_assert_eq(plan_op_law_class(&op, NULL), CFG_LAW_GEMM_WIDE);
    cr_assert_float_eq(model_op_us(s, &op, false, NULL, &src), 4.340794, EPS);
    cr_assert_str_eq(src, "probed");
    /* m = 512, above: bytes 33554432 + 2 x 512 x 4096 x 2 = 41943040, law 1 + 40943040 / 99e6 x 9 = 4.722095;
     * t_compute = 2 x 512 x 4096^2 / 791.2e6 = 21.713687 is larger and taken. */
    op = gemm(512);
    model_terms terms = {.n = 0};
    cr_assert_float_eq(model_op_us(s, &op, false, &terms, &src), 21.713687, EPS);
    cr_assert_str_eq(src, "probed");
    cr_assert_float_eq(model_term_get(&terms, "t_law"), 4.722095, EPS);
    cr_assert_float_eq(model_term_get(&terms, "t_compute"), 21.713687, EPS);
    /* A law slower than the compute term stays: 100 + 40943040 / 99e6 x 900 = 472.209455. */
    law->us[0] = law->us[2] = 100;
    law->us[1] = law->us[3] = 1000;
    cr_assert_float_eq(model_op_us(s, &op, false, NULL, &src), 472.209455, EPS);
    /* A narrow GEMM (n < k) has no law here: the formula. */
    op.n = 1024;
    plan_op_finalize(&op);
    cr_assert_eq(plan_op_law_class(&op, NULL), CFG_LAW_GEMM_NARROW);
    model_op_us(s, &op, false, NULL, &src);
    cr_assert_str_eq(src, "formula");
    cfg_scenario_free(&sc);
}

/* ---------------- through the CLI ---------------- */

Test(model_law_cli, an_unsound_law_table_is_refused_with_exit_2)
{
    char *path = system_with("  compute:\n    norm:\n      rows: [1, 1]\n      bytes: [1e4, 1e4]\n      us: [2, 3]\n");
    th_expect_bad(th_run("model configs/default.yaml --system '%s' --backend none", path), path,
                  "system.measured.compute.norm: bytes must be strictly increasing within rows 1 (bytes[1]=10000 "
                  "after 10000)");
    unlink(path);
    free(path);
}

Test(model_law_cli, explain_shows_the_law_terms_and_its_source)
{
    char *path = system_with(NORM_TABLES);
    th_result r = th_run("model configs/default.yaml --system '%s' --backend none --explain", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *ln = strstr(r.out, "  input_layernorm ");
    cr_assert_not_null(ln, "%s", r.out);
    cr_assert(strstr(ln, "(probed)") && strstr(ln, "(probed)") < strchr(ln, '\n'), "%.200s", ln);
    cr_assert(strstr(ln, "rows 3 between 1 and 4 (log)"), "%.800s", ln);
    cr_assert(strstr(ln, "measured.compute.norm source: hand-made law, not a measurement"), "%.800s", ln);
    th_free(&r);
    unlink(path);
    free(path);
}

/* compare's source column: "probed" when every compute op has a law, else the counts per op kind. */
Test(model_law_cli, compare_names_probed_sources)
{
    char all[4096] = "  compute:\n";
    for (int c = 0; c < CFG_LAW_COUNT; c++)
        snprintf(all + strlen(all), sizeof(all) - strlen(all), "    %s:\n      rows: [1]\n      bytes: [1e6]\n"
                 "      us: [5]\n", cfg_law_names[c]);
    const char *variants = "- name: base\n";
    char *vpath = th_write_temp(variants, strlen(variants), ".yaml");
    char *path = system_with(all);
    th_result r = th_run("compare configs/default.yaml --variants '%s' --system '%s' --backend none", vpath, path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *row = strstr(r.out, "base ");
    cr_assert_not_null(row, "%s", r.out);
    cr_assert(strstr(row, " probed\n"), "%s", r.out);
    th_free(&r);
    unlink(path);
    free(path);

    path = system_with(NORM_TABLES);
    r = th_run("compare configs/default.yaml --variants '%s' --system '%s' --backend none", vpath, path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "mixed: op kinds 1 probed, 0 partly probed, 0 measured,"), "%s", r.out);
    th_free(&r);
    unlink(path);
    free(path);

    /* A law for wide GEMMs only: the plan's narrow and batched GEMMs keep the formula. */
    path = system_with("  compute:\n    gemm_wide:\n      rows: [1]\n      bytes: [1e6]\n      us: [5]\n");
    r = th_run("compare configs/default.yaml --variants '%s' --system '%s' --backend none", vpath, path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "mixed: op kinds 0 probed, 1 partly probed, 0 measured,"), "%s", r.out);
    th_free(&r);
    unlink(path);
    free(path);
    unlink(vpath);
    free(vpath);
}

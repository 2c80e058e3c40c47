/* util: JSON writer and atomic file writes. */
#include "../../sim/util/util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Test(util_json, writes_nested_objects_with_escapes)
{
    util_json j;
    util_json_init(&j, false);
    util_json_obj_begin(&j);
    util_json_kstr(&j, "name", "a\"b\\c\n");
    util_json_key(&j, "xs");
    util_json_arr_begin(&j);
    util_json_int(&j, 1);
    util_json_num(&j, 2.5);
    util_json_arr_end(&j);
    util_json_kbool(&j, "ok", true);
    util_json_key(&j, "empty");
    util_json_arr_begin(&j);
    util_json_arr_end(&j);
    util_json_obj_end(&j);
    cr_assert_str_eq(j.out.s, "{\"name\":\"a\\\"b\\\\c\\n\",\"xs\":[1,2.5],\"ok\":true,\"empty\":[]}");
    util_buf_free(&j.out);
}

Test(util_json, non_finite_numbers_become_null)
{
    util_json j;
    util_json_init(&j, false);
    util_json_arr_begin(&j);
    util_json_num(&j, 1.0 / 0.0);
    util_json_arr_end(&j);
    cr_assert_str_eq(j.out.s, "[null]");
    util_buf_free(&j.out);
}

Test(util_file, atomic_write_replaces_and_leaves_no_temp)
{
    char dir[] = "/tmp/vpsim-atomic-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *path = util_xasprintf("%s/out.json", dir);
    char err[256];
    cr_assert_eq(util_write_file_atomic(path, "first", 5, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(util_write_file_atomic(path, "second!", 7, err, sizeof(err)), 0, "%s", err);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 7);
    char *cmd = util_xasprintf("test $(ls '%s' | wc -l) -eq 1", dir);
    cr_assert_eq(system(cmd), 0, "a temporary file was left behind");
    free(cmd);
    unlink(path);
    rmdir(dir);
    free(path);
}

Test(util_file, atomic_write_into_missing_directory_fails_cleanly)
{
    char err[256] = "";
    /* -2: the target itself is refused (a bad input, nothing touched), not a failed write */
    cr_assert_eq(util_write_file_atomic("/nonexistent-dir/x.json", "x", 1, err, sizeof(err)), -2);
    cr_assert(strstr(err, "cannot create") != NULL, "%s", err);
}

Test(util, percentile_interpolates_between_ranks_and_leaves_the_input)
{
    double v[] = {4, 1, 3, 2};
    cr_assert_float_eq(util_percentile(v, 4, 0.5), 2.5, 1e-12); /* (2 + 3) / 2 */
    cr_assert_float_eq(util_percentile(v, 4, 0.0), 1.0, 1e-12);
    cr_assert_float_eq(util_percentile(v, 4, 1.0), 4.0, 1e-12);
    cr_assert_float_eq(util_percentile(v, 4, 0.25), 1.75, 1e-12); /* position 0.75 between 1 and 2 */
    cr_assert_float_eq(v[0], 4.0, 0.0);                           /* not sorted in place */
    double odd[] = {9, 7, 8};
    cr_assert_float_eq(util_percentile(odd, 3, 0.5), 8.0, 1e-12);
}

Test(util, cpuinfo_reads_a_key_or_says_there_is_none)
{
    char buf[128];
    cr_assert(!util_cpuinfo("no such key here", buf, sizeof(buf)));
    cr_assert_str_eq(buf, "");
    /* Every Linux x86 or ARM /proc/cpuinfo has "processor" lines, numbered from 0. */
    cr_assert(util_cpuinfo("processor", buf, sizeof(buf)));
    cr_assert_str_eq(buf, "0");
}

Test(util, utc_now_has_the_provenance_format)
{
    char buf[32];
    util_utc_now(buf, sizeof(buf));
    int y, mo, d, h, mi;
    char utc[4];
    cr_assert_eq(sscanf(buf, "%4d-%2d-%2d %2d:%2d %3s", &y, &mo, &d, &h, &mi, utc), 6, "%s", buf);
    cr_assert_str_eq(utc, "UTC");
    cr_assert(y >= 2026 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 && mi <= 59, "%s", buf);
}

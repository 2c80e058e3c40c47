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
    cr_assert_eq(util_write_file_atomic("/nonexistent-dir/x.json", "x", 1, err, sizeof(err)), -1);
    cr_assert(strstr(err, "cannot create") != NULL, "%s", err);
}

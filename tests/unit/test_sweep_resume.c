/* vpsim sweep against hostile inputs: a resume is keyed by the scenario, model and system files and the
 * --vary list (a change refuses to resume, exit 2, and says what changed); no CSV value can pass for a
 * commit line of the partial file; an --out the sweep could not write is refused before anything runs. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A temporary copy of configs/ and models/, so the tests may edit the files a sweep reads. */
static char *copy_of_configs(void)
{
    char *dir = util_xstrdup("/tmp/vpsim-sweep-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    th_result r = th_sh("cp -r configs models '%s'/", dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    return dir;
}

static void remove_dir(char *dir)
{
    th_result r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
    free(dir);
}

/* The file's contents, or NULL when it cannot be read. */
static char *slurp(const char *dir, const char *name)
{
    th_result r = th_sh("cat '%s/%s'", dir, name);
    char *text = r.status == 0 ? r.out : NULL;
    if (!text)
        free(r.out);
    free(r.err);
    return text;
}

static bool exists(const char *dir, const char *name)
{
    char *path = util_xasprintf("%s/%s", dir, name);
    struct stat st;
    bool ok = stat(path, &st) == 0;
    free(path);
    return ok;
}

/* `vpsim sweep` on the copy's tiny scenario (model mode: milliseconds per scenario). */
#define SWEEP(dir, extra, ...) th_run("sweep '%s/configs/tiny.yaml' --backend none,nccl " extra, dir, __VA_ARGS__)

/* Stop after one scenario, so that a partial file exists. */
static void start_sweep(const char *dir, const char *vary)
{
    th_result r = SWEEP(dir, "%s --out '%s/s.csv' --limit 1", vary, dir);
    cr_assert_eq(r.status, 1, "a sweep stopped by --limit exits 1: %s", r.err);
    th_free(&r);
    cr_assert(exists(dir, "s.csv.partial"));
}

/* The resume is refused: exit 2, a message naming `what`, the partial file kept as it was, no CSV. */
static void expect_refused_resume(const char *dir, const char *vary, const char *what)
{
    char *before = slurp(dir, "s.csv.partial");
    th_result r = SWEEP(dir, "%s --out '%s/s.csv'", vary, dir);
    cr_assert_eq(r.status, 2, "exit %d, want 2; stderr:\n%s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, what), "stderr does not say '%s':\n%s", what, r.err);
    cr_assert_not_null(strstr(r.err, "--restart"), "the way out is named:\n%s", r.err);
    th_free(&r);
    char *after = slurp(dir, "s.csv.partial");
    cr_assert_not_null(after, "the partial file is kept");
    cr_assert_str_eq(after, before, "the partial file is not touched");
    cr_assert_not(exists(dir, "s.csv"), "no CSV from a refused resume");
    free(before);
    free(after);
}

Test(sweep_resume, values_that_look_like_commit_lines_survive_a_resume, .timeout = 60)
{
    /* Varied names "=1" and "=2" start their CSV rows: once read back as commit lines, they lost rows. */
    char *dir = copy_of_configs();
    const char *vary = "--vary name==1,=2,x";
    th_result full = SWEEP(dir, "%s --out '%s/full.csv'", vary, dir);
    cr_assert_eq(full.status, 0, "%s", full.err);
    th_free(&full);
    start_sweep(dir, vary);
    th_result rest = SWEEP(dir, "%s --out '%s/s.csv'", vary, dir);
    cr_assert_eq(rest.status, 0, "%s", rest.err);
    cr_assert_not_null(strstr(rest.err, "resuming: 1 of 3"), "%s", rest.err);
    th_free(&rest);
    char *a = slurp(dir, "full.csv"), *b = slurp(dir, "s.csv");
    cr_assert_not_null(b);
    cr_assert_str_eq(b, a, "the resumed sweep equals an uninterrupted one");
    cr_assert_not_null(strstr(b, "\n=1,none,true,"), "%s", b);
    cr_assert_not_null(strstr(b, "\n=2,nccl,"), "%s", b);
    free(a);
    free(b);
    remove_dir(dir);
}

/* Start a sweep, run `edit FOLDER/file` (a shell command and a file of the copy), then expect the resume
 * refused naming `what`. */
static void edit_then_expect_refused(const char *edit, const char *file, const char *what)
{
    char *dir = copy_of_configs();
    start_sweep(dir, "--vary workload.batch=1,2");
    th_result ed = th_sh("%s '%s/%s'", edit, dir, file);
    cr_assert_eq(ed.status, 0, "%s %s: %s", edit, file, ed.err);
    th_free(&ed);
    expect_refused_resume(dir, "--vary workload.batch=1,2", what);
    remove_dir(dir);
}

Test(sweep_resume, an_edited_scenario_refuses_to_resume, .timeout = 60)
{
    edit_then_expect_refused("sed -i 's/context: 256/context: 512/'", "configs/tiny.yaml",
                             "configs/tiny.yaml changed since the sweep began");
}

Test(sweep_resume, an_edited_model_file_refuses_to_resume, .timeout = 60)
{
    edit_then_expect_refused("echo '# edited' >>", "models/tiny-moe.yaml", "tiny-moe.yaml changed since the sweep began");
}

Test(sweep_resume, an_edited_system_file_refuses_to_resume, .timeout = 60)
{
    edit_then_expect_refused("echo '# edited' >>", "configs/systems/h200-1x.yaml",
                             "h200-1x.yaml changed since the sweep began");
}

Test(sweep_resume, a_varied_model_file_is_part_of_the_key, .timeout = 60)
{
    /* The second --vary value names another model file: editing it must refuse the resume too. */
    char *dir = copy_of_configs();
    th_result cp = th_sh("cp '%s/models/tiny-moe.yaml' '%s/models/tiny-moe-b.yaml'", dir, dir);
    th_free(&cp);
    /* A --set path is taken from the current directory, so the values are absolute. */
    char *vary = util_xasprintf("--vary model=%s/models/tiny-moe.yaml,%s/models/tiny-moe-b.yaml", dir, dir);
    start_sweep(dir, vary);
    th_result ed = th_sh("echo '# edited' >> '%s/models/tiny-moe-b.yaml'", dir);
    th_free(&ed);
    expect_refused_resume(dir, vary, "tiny-moe-b.yaml changed since the sweep began");
    free(vary);
    remove_dir(dir);
}

Test(sweep_resume, another_vary_list_refuses_to_resume, .timeout = 60)
{
    char *dir = copy_of_configs();
    start_sweep(dir, "--vary workload.batch=1,2");
    expect_refused_resume(dir, "--vary workload.batch=1,4", "the --vary keys or values differ");
    /* --restart is the way out. */
    th_result r = SWEEP(dir, "--vary workload.batch=1,4 --out '%s/s.csv' --restart", dir);
    cr_assert_eq(r.status, 0, "%s", r.err);
    th_free(&r);
    remove_dir(dir);
}

Test(sweep_resume, out_onto_a_directory_is_refused_before_running)
{
    char *dir = copy_of_configs();
    th_result r = SWEEP(dir, "--vary workload.batch=1,2 --out '%s/models'", dir);
    cr_assert_eq(r.status, 2, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, "is a directory"), "%s", r.err);
    cr_assert_null(strstr(r.err, "scenarios x"), "the sweep ran:\n%s", r.err);
    th_free(&r);
    cr_assert_not(exists(dir, "models.partial"), "nothing left behind");
    remove_dir(dir);
}

Test(sweep_resume, out_into_a_missing_directory_is_refused_before_running)
{
    char *dir = copy_of_configs();
    th_result r = SWEEP(dir, "--vary workload.batch=1,2 --out '%s/nowhere/s.csv'", dir);
    cr_assert_eq(r.status, 2, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, "does not exist"), "%s", r.err);
    th_free(&r);
    remove_dir(dir);
}

Test(sweep_resume, empty_out_is_refused)
{
    char *dir = copy_of_configs();
    const char *bin = getenv("VPSIM_BIN");
    th_result r = th_sh("cd '%s' && '%s' sweep configs/tiny.yaml --vary workload.batch=1,2 --out ''", dir,
                        bin ? bin : "build/vpsim");
    cr_assert_eq(r.status, 2, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, "--out ''"), "%s", r.err);
    th_free(&r);
    cr_assert_not(exists(dir, ".partial"), "nothing left behind");
    remove_dir(dir);
}

Test(sweep_resume, a_repeated_vary_key_is_refused)
{
    /* Refused without leaking the key (the asan variant of the suite checks the leak). */
    char *dir = copy_of_configs();
    th_result r = SWEEP(dir, "--vary workload.batch=1 --vary workload.batch=2 --out '%s/s.csv'", dir);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_assert_not_null(strstr(r.err, "given twice"), "%s", r.err);
    th_free(&r);
    cr_assert_not(exists(dir, "s.csv.partial"));
    remove_dir(dir);
}

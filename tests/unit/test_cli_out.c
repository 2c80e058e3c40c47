/* Output safety: --out and --trace write only regular files, refusing anything else with
 * exit 2 before any work; a symbolic link is followed and the file it leads to replaced; a failed write
 * leaves no temporary file; a failed stdout makes the exit status 1. */
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The binary, for commands th_run cannot express (limits, redirections of stdout). */
static const char *out_bin(void)
{
    const char *bin = getenv("VPSIM_BIN");
    return bin ? bin : "build/vpsim";
}

/* A fresh directory with the listing `ls -A` gives, to compare before and after a command. */
static char *out_temp_dir(void)
{
    char *dir = util_xstrdup("/tmp/vpsim-out-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static char *out_listing(const char *dir)
{
    th_result r = th_sh("ls -A '%s'", dir);
    free(r.err);
    return r.out;
}

static void out_remove(const char *dir)
{
    th_result r = th_sh("rm -rf '%s'", dir);
    th_free(&r);
}

/* Every command that takes --out (or --trace), as far as its option parsing; OUT is appended. */
static const char *const out_commands[] = {
    "plan configs/tiny.yaml --format json",
    "model configs/tiny.yaml --format json",
    "sweep configs/tiny.yaml --vary workload.batch=1,2",
    "calibrate configs/tiny.yaml --results traces/samples/h200-none-graph.results.json",
    "bench-allreduce --device cpu --backend mpi --sizes 16 -n 1 -w 0",
    "run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1",
    "run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1 --trace",
};

/* `target` refused by `cmd`: exit 2, nothing on stdout (no work done: `run` prints its table before it
 * writes), a message naming the option, the path and `why`, and `dir` as it was. */
static void expect_refused_by(const char *cmd, const char *dir, const char *target, const char *why)
{
    char *before = out_listing(dir);
    const bool trace = strstr(cmd, "--trace") != NULL;
    th_result r = th_run("%s %s '%s'", cmd, trace ? "" : "--out", target);
    char *named = util_xasprintf("%s '%s': ", trace ? "--trace" : "--out", target);
    cr_assert_eq(r.status, 2, "%s -> '%s': exit %d, want 2; stderr:\n%s", cmd, target, r.status, r.err);
    cr_assert_str_eq(r.out, "", "%s -> '%s': work was done before the refusal", cmd, target);
    cr_assert_not_null(strstr(r.err, named), "%s: stderr lacks \"%s\":\n%s", cmd, named, r.err);
    cr_assert_not_null(strstr(r.err, why), "%s: stderr lacks \"%s\":\n%s", cmd, why, r.err);
    char *after = out_listing(dir);
    cr_assert_str_eq(after, before, "%s -> '%s': the directory changed", cmd, target);
    free(after);
    free(named);
    th_free(&r);
    free(before);
}

/* The check is one function for every command; each target kind goes through `plan` (a process start
 * costs a third of a second here, so not every pair is run). */
static void expect_out_refused(const char *dir, const char *target, const char *why)
{
    expect_refused_by(out_commands[0], dir, target, why);
}

/* As expect_out_refused, and `path` still of its kind (S_IFIFO, S_IFLNK, S_IFCHR): not replaced. */
static void expect_refused_and_kept(const char *dir, const char *path, mode_t kind, const char *why)
{
    expect_out_refused(dir, path, why);
    struct stat st;
    cr_assert(lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == kind, "'%s' was replaced", path);
}

Test(cli_out, every_command_refuses_a_bad_target_before_any_work)
{
    char *dir = out_temp_dir();
    char *sub = util_xasprintf("%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    for (size_t i = 0; i < sizeof(out_commands) / sizeof(out_commands[0]); i++)
        expect_refused_by(out_commands[i], dir, sub, "is a directory, not a regular file");
    /* A sweep used to run to the end and leave sub.partial; run printed its table first. */
    struct stat st;
    cr_assert(stat(sub, &st) == 0 && S_ISDIR(st.st_mode), "the directory is still a directory");
    out_remove(dir);
    free(sub);
    free(dir);
}

Test(cli_out, an_empty_path_is_refused)
{
    char *dir = out_temp_dir();
    expect_out_refused(dir, "", "an empty path names no file");
    /* A sweep used to run, then leave ./.partial where it was started (the repo root here). */
    expect_refused_by(out_commands[2], dir, "", "an empty path names no file");
    cr_assert_neq(access(th_path(".partial"), F_OK), 0, "sweep --out '' left .partial behind");
    out_remove(dir);
    free(dir);
}

Test(cli_out, a_path_ending_in_a_slash_is_refused)
{
    char *dir = out_temp_dir();
    char *slash = util_xasprintf("%s/new/", dir);
    expect_out_refused(dir, slash, "ends with '/'");
    out_remove(dir);
    free(slash);
    free(dir);
}

Test(cli_out, a_fifo_or_a_device_node_is_refused_and_kept)
{
    char *dir = out_temp_dir();
    char *fifo = util_xasprintf("%s/fifo", dir), *link = util_xasprintf("%s/null-link", dir),
         *node = util_xasprintf("%s/node", dir);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    expect_refused_and_kept(dir, fifo, S_IFIFO, "is a FIFO, not a regular file");
    /* A link to /dev/null tests the refusal without ever aiming at a real device node. */
    cr_assert_eq(symlink("/dev/null", link), 0);
    expect_refused_and_kept(dir, link, S_IFLNK, "is a symbolic link to /dev/null, which is a character device");
    /* A node of our own (a copy of /dev/null's numbers) where mknod is allowed (root, no seccomp). */
    if (mknod(node, S_IFCHR | 0644, makedev(1, 3)) == 0)
        expect_refused_and_kept(dir, node, S_IFCHR, "is a character device, not a regular file");
    else
        cr_log_info("mknod not permitted here: the device-node case ran through the symbolic link only");
    out_remove(dir);
    free(node);
    free(link);
    free(fifo);
    free(dir);
}

Test(cli_out, a_missing_directory_or_a_kernel_file_system_is_refused)
{
    char *dir = out_temp_dir();
    char *missing = util_xasprintf("%s/no-such-dir/out.json", dir);
    char *why = util_xasprintf("directory '%s/no-such-dir' does not exist", dir);
    expect_out_refused(dir, missing, why);
    expect_out_refused(dir, "/proc/vpsim-out.json", "'/proc' is on the kernel's proc file system");
    expect_refused_by(out_commands[5], dir, "/proc/self/comm", "is on the kernel's proc file system");
    char *dangling = util_xasprintf("%s/dangling", dir);
    cr_assert_eq(symlink("no-such-file", dangling), 0);
    expect_out_refused(dir, dangling, "is a symbolic link that does not lead to an existing file");
    out_remove(dir);
    free(dangling);
    free(why);
    free(missing);
    free(dir);
}

Test(cli_out, a_symbolic_link_is_followed_and_its_target_replaced)
{
    char *dir = out_temp_dir();
    char *real = util_xasprintf("%s/real.json", dir), *link = util_xasprintf("%s/link.json", dir);
    th_result w = th_sh("printf old > '%s' && chmod 640 '%s'", real, real);
    cr_assert_eq(w.status, 0);
    th_free(&w);
    cr_assert_eq(symlink("real.json", link), 0);
    th_result r = th_run("plan configs/tiny.yaml --format json --out '%s'", link);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct stat st;
    cr_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link itself was replaced");
    cr_assert(stat(real, &st) == 0 && S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0640, "the replaced file's mode was not kept: %o", st.st_mode & 0777);
    th_result s = th_run("plan configs/tiny.yaml --format json");
    th_result c = th_sh("cat '%s'", real);
    cr_assert_str_eq(c.out, s.out, "the link's target does not hold the output");
    char *listing = out_listing(dir);
    cr_assert_str_eq(listing, "link.json\nreal.json\n", "files left beside the output:\n%s", listing);
    free(listing);
    th_free(&c);
    th_free(&s);
    th_free(&r);
    out_remove(dir);
    free(link);
    free(real);
    free(dir);
}

Test(cli_out, a_failed_write_exits_1_and_leaves_no_temporary_file)
{
    char *dir = out_temp_dir();
    /* A file-size limit of 1 KiB (SIGXFSZ ignored, so write() fails with EFBIG) fails the write itself,
     * after the temporary file exists. */
    th_result r = th_sh("trap '' XFSZ; ulimit -f 1; '%s' plan configs/default.yaml --format json --out '%s/plan.json'",
                        out_bin(), dir);
    cr_assert_eq(r.status, 1, "exit %d, want 1 (a runtime failure); stderr:\n%s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, "cannot write"), "%s", r.err);
    char *listing = out_listing(dir);
    cr_assert_str_eq(listing, "", "left behind:\n%s", listing);
    free(listing);
    th_free(&r);
    out_remove(dir);
    free(dir);
}

Test(cli_out, run_refuses_trace_and_out_naming_one_file)
{
    char *dir = out_temp_dir();
    th_result r = th_run("run configs/tiny.yaml --device cpu --backend none --out '%s/r.json' --trace '%s/./r.json'",
                         dir, dir);
    cr_assert_eq(r.status, 2, "exit %d; %s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, "are the same file"), "%s", r.err);
    cr_assert_str_eq(r.out, "");
    th_free(&r);
    out_remove(dir);
    free(dir);
}

/* ---------------- stdout: a failed write is a failure ---------------- */

Test(cli_out, a_full_stdout_exits_1_with_a_message)
{
    const char *cmds[] = {
        "plan configs/tiny.yaml --format json",
        "model configs/tiny.yaml",
        "config-reference",
        "plan --help",
        "calibrate configs/default.yaml --system configs/systems/h200-1x.yaml --results "
        "traces/samples/h200-none-graph.results.json --ops gemm",
        "bench-allreduce --device cpu --backend mpi --sizes 16 -n 1 -w 0 --format json",
        "run configs/tiny.yaml --device cpu --backend none --iters 1 --warmup 0 --instrumented 1",
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        th_result r = th_sh("%s'%s' %s > /dev/full", th_mpi_env(cmds[i]), out_bin(), cmds[i]);
        cr_assert_eq(r.status, 1, "%s > /dev/full: exit %d, want 1; stderr:\n%s", cmds[i], r.status, r.err);
        cr_assert_not_null(strstr(r.err, "cannot write to standard output: No space left on device"), "%s:\n%s",
                           cmds[i], r.err);
        th_free(&r);
    }
}

Test(cli_out, a_closed_stdout_exits_1)
{
    th_result r = th_sh("'%s' plan configs/tiny.yaml >&-", out_bin());
    cr_assert_eq(r.status, 1, "exit %d; %s", r.status, r.err);
    cr_assert_not_null(strstr(r.err, "cannot write to standard output"), "%s", r.err);
    th_free(&r);
}

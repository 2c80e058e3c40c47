#include "test_helpers.h"

#include <criterion/criterion.h>

#include "../../sim/util/util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The ASan suite starts Criterion's runner with the full unwinder: Criterion 2.4 leaves a 48-byte object
 * at exit, which tests/lsan.supp can only match by a function name that the full unwinder reaches. The
 * tests themselves run in workers, this binary started again with BoxFort's BXFI_MAP set; they and what
 * they start get VPSIM_WORKER_ASAN_OPTIONS instead (the fast unwinder), which the runner puts in place
 * here, before main, once ASan has read its own options. */
__attribute__((constructor)) static void th_worker_asan_options(void)
{
    const char *w = getenv("VPSIM_WORKER_ASAN_OPTIONS");
    if (w && !getenv("BXFI_MAP"))
        setenv("ASAN_OPTIONS", w, 1);
}

const char *th_path(const char *rel)
{
    static char bufs[8][4096];
    static int slot;
    char *b = bufs[slot++ % 8];
    const char *root = getenv("VPSIM_ROOT");
    snprintf(b, sizeof(bufs[0]), "%s/%s", root ? root : ".", rel);
    return b;
}

char *th_slurp(const char *path)
{
    return util_read_file(path);
}

static th_result run_shell(const char *cmd)
{
    char out_path[] = "/tmp/vpsim-test-out-XXXXXX", err_path[] = "/tmp/vpsim-test-err-XXXXXX";
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    close(fo);
    close(fe);
    const char *root = getenv("VPSIM_ROOT");
    char *full = util_xasprintf("cd '%s' && ( %s ) >'%s' 2>'%s' </dev/null", root ? root : ".", cmd, out_path,
                                err_path);
    int st = system(full);
    free(full);
    th_result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    r.out = th_slurp(out_path);
    r.err = th_slurp(err_path);
    if (!r.out)
        r.out = util_xstrdup("");
    if (!r.err)
        r.err = util_xstrdup("");
    unlink(out_path);
    unlink(err_path);
    return r;
}

th_result th_sh(const char *fmt, ...)
{
    util_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    util_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    th_result r = run_shell(b.s);
    util_buf_free(&b);
    return r;
}

/* `PREFIX'BIN' ARGS` through the shell, BIN being VPSIM_BIN (make test sets it) or build/vpsim. */
static th_result run_vpsim(const char *prefix, const char *args)
{
    util_buf b = {0};
    const char *bin = getenv("VPSIM_BIN");
    util_buf_printf(&b, "%s'%s' %s", prefix, bin ? bin : "build/vpsim", args);
    th_result r = run_shell(b.s);
    util_buf_free(&b);
    return r;
}

/* Whether `vpsim ARGS` initialises MPI: the commands that call dist_init, less calibrate without
 * --measure and bench-allreduce --from, which read saved results (one refused before dist_init only
 * pays for the slower unwinder). */
static bool inits_mpi(const char *args)
{
    args += strspn(args, " ");
    const size_t n = strcspn(args, " ");
#define TH_IS(cmd) (n == strlen(cmd) && !strncmp(args, cmd, n))
    const bool mpi = TH_IS("run") || TH_IS("probe") || (TH_IS("bench-allreduce") && !strstr(args, " --from")) ||
                     (TH_IS("calibrate") && strstr(args, " --measure"));
#undef TH_IS
    return mpi;
}

const char *th_mpi_env(const char *args)
{
    return inits_mpi(args) ? TH_MPI_ASAN : "";
}

th_result th_run(const char *fmt, ...)
{
    util_buf a = {0};
    va_list ap;
    va_start(ap, fmt);
    util_buf_vprintf(&a, fmt, ap);
    va_end(ap);
    const char *args = a.s ? a.s : "";
    th_result r = run_vpsim(th_mpi_env(args), args);
    util_buf_free(&a);
    return r;
}

th_result th_mpirun(int np, const char *fmt, ...)
{
    char prefix[sizeof(TH_MPIRUN) + 32];
    snprintf(prefix, sizeof(prefix), TH_MPIRUN " -np %d ", np);
    util_buf a = {0};
    va_list ap;
    va_start(ap, fmt);
    util_buf_vprintf(&a, fmt, ap);
    va_end(ap);
    th_result r = run_vpsim(prefix, a.s ? a.s : "");
    util_buf_free(&a);
    return r;
}

void th_free(th_result *r)
{
    free(r->out);
    free(r->err);
}

char *th_write_temp(const char *text, size_t len, const char *suffix)
{
    char *path = util_xasprintf("/tmp/vpsim-test-XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0)
        return path;
    if (write(fd, text, len) != (ssize_t)len) {
        close(fd);
        return path;
    }
    close(fd);
    return path;
}

void th_expect_bad(th_result r, const char *where, const char *what)
{
    cr_assert_eq(r.status, 2, "exit status %d, want 2; stderr: %s", r.status, r.err);
    cr_assert_str_eq(r.out, "", "nothing on stdout for a bad input");
    cr_assert_not_null(strstr(r.err, where), "stderr lacks '%s':\n%s", where, r.err);
    cr_assert_not_null(strstr(r.err, what), "stderr lacks '%s':\n%s", what, r.err);
    th_free(&r);
}

void th_need_mpirun(void)
{
    th_result r = th_sh("command -v mpirun");
    const int status = r.status;
    th_free(&r);
    if (status != 0)
        cr_skip_test("mpirun not installed");
}

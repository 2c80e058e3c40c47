#include "test_helpers.h"

#include <criterion/criterion.h>

#include "../../sim/util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
__attribute__((format(printf, 2, 0))) static th_result run_vpsim(const char *prefix, const char *fmt, va_list ap)
{
    util_buf b = {0};
    const char *bin = getenv("VPSIM_BIN");
    util_buf_printf(&b, "%s'%s' ", prefix, bin ? bin : "build/vpsim");
    util_buf_vprintf(&b, fmt, ap);
    th_result r = run_shell(b.s);
    util_buf_free(&b);
    return r;
}

th_result th_run(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    th_result r = run_vpsim("", fmt, ap);
    va_end(ap);
    return r;
}

th_result th_mpirun(int np, const char *fmt, ...)
{
    char prefix[sizeof(TH_MPIRUN) + 32];
    snprintf(prefix, sizeof(prefix), TH_MPIRUN " -np %d ", np);
    va_list ap;
    va_start(ap, fmt);
    th_result r = run_vpsim(prefix, fmt, ap);
    va_end(ap);
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

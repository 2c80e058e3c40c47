/* Shared helpers for the Criterion tests: paths into the repo and running the vpsim binary. */
#ifndef VPSIM_TEST_HELPERS_H
#define VPSIM_TEST_HELPERS_H

#include <stddef.h>

/* Absolute path of a file in the repo (VPSIM_ROOT, set by `make test`); static buffer per call slot. */
const char *th_path(const char *rel);

typedef struct th_result {
    int status;   /* exit status, or 128 + signal */
    char *out;    /* stdout */
    char *err;    /* stderr */
} th_result;

/* Run `build/vpsim ARGS` (a shell-quoted string) from the repo root; captures both streams. A command
 * that initialises MPI (run, probe, bench-allreduce, calibrate --measure) runs with TH_MPI_ASAN. */
th_result th_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What goes before `BIN ARGS` in a shell command that runs vpsim without th_run: TH_MPI_ASAN for a
 * command that initialises MPI, else "". */
const char *th_mpi_env(const char *args);
/* Run an arbitrary shell command from the repo root (e.g. mpirun ...); captures both streams. */
th_result th_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void th_free(th_result *r);

/* A whole file as a string (free it), or NULL when it cannot be opened. */
char *th_slurp(const char *path);
/* A bad input: exit status 2, nothing on stdout, and stderr holding `where` and `what`. Frees r. */
void th_expect_bad(th_result r, const char *where, const char *what);

/* Shell assignments for a command whose processes initialise Open MPI: ASan's full unwinder, which
 * tests/lsan.supp needs to see the Open MPI frame under what MPI_Init leaves for exit (the fast one stops
 * in Open MPI's plugins). It makes an allocation-heavy command ~15x slower, so the ASan suite gives it to
 * these processes only (VPSIM_MPI_ASAN_OPTIONS, from the Makefile), and to the workers of this test
 * binary when it runs as such a process (test_helpers.c); outside that suite the variables pass
 * unchanged. A process that initialises MPI without it fails under ASan with Open MPI's leaks reported:
 * one left out is seen, not silently unchecked. */
#define TH_MPI_ASAN                                                                                                     \
    "ASAN_OPTIONS=\"${VPSIM_MPI_ASAN_OPTIONS-$ASAN_OPTIONS}\" "                                                        \
    "VPSIM_WORKER_ASAN_OPTIONS=\"${VPSIM_MPI_ASAN_OPTIONS-$VPSIM_WORKER_ASAN_OPTIONS}\" "

/* mpirun for the multi-rank tests: CI runs as root, oversubscribes its cores, and `timeout` turns a hang
 * into exit 124 (then a kill 5 s later) instead of a stuck test run. */
#define TH_MPIRUN                                                                                                       \
    TH_MPI_ASAN "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "      \
    "timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe --bind-to none"
/* Run `TH_MPIRUN -np NP build/vpsim ARGS` (ARGS as for th_run) from the repo root; captures both streams. */
th_result th_mpirun(int np, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Skip the calling test when mpirun is not installed. */
void th_need_mpirun(void);

/* Write `text` to a new temporary file with the given suffix; returns its path (free it). */
char *th_write_temp(const char *text, size_t len, const char *suffix);

#endif

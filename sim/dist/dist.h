/* dist_job: the MPI job — rank, world, local rank, host — and the one error idiom for MPI, CUDA,
 * cuBLAS and NCCL calls: report file:line, rank and host, then abort every rank (MPI_Abort), so one
 * failed rank never leaves the others hanging in a collective. */
#ifndef VPSIM_DIST_H
#define VPSIM_DIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct dist_job {
    int rank, size;             /* MPI_COMM_WORLD */
    int local_rank, local_size; /* ranks on this host (MPI_Comm_split_type SHARED) */
    char host[64];
    bool mpi_initialised_here;
} dist_job;

/* Initialise MPI (idempotent; works without mpirun as a singleton). */
void dist_init(dist_job *d, int *argc, char ***argv);
void dist_finalize(dist_job *d);

/* Abort every rank after printing "vpsim[rank R@host]: file:line: what: detail". */
_Noreturn void dist_fail(const char *file, int line, const char *what, const char *detail);

/* Checked MPI call: `VP_MPI(MPI_Barrier(MPI_COMM_WORLD));` */
#define VP_MPI(call)                                                                                                    \
    do {                                                                                                                \
        int vp_rc_ = (call);                                                                                            \
        if (vp_rc_ != 0)                                                                                                \
            dist_mpi_fail(__FILE__, __LINE__, #call, vp_rc_);                                                      \
    } while (0)
_Noreturn void dist_mpi_fail(const char *file, int line, const char *call, int rc);

/* Collective helpers over MPI_COMM_WORLD (checked). */
void dist_barrier(void);
void dist_bcast(void *buf, size_t bytes, int root);
/* Element-wise max / sum of doubles across ranks, in place. */
void dist_max_doubles(double *v, int n);
void dist_sum_doubles(double *v, int n);
/* Gather `n` doubles from every rank into out[size * n] on rank 0 (out ignored elsewhere). */
void dist_gather_doubles(const double *in, int n, double *out);
/* Logical AND of a flag across ranks. */
bool dist_all(bool v);
/* Agree on a verdict across ranks, so that a rank that cannot go on never leaves the others waiting
 * in a collective and every rank reports the same reason. rc != 0 marks this rank failed, with its
 * reason in why. Returns 0 on every rank when none failed; else -1 on every rank, with why replaced
 * by the lowest failing rank's reason, prefixed "rank R: " when the job has several ranks. Collective. */
int dist_agree(const dist_job *d, int rc, char *why, size_t len);

/* "rank 1 (pid 4242 on host)" for each rank on this host whose process is gone (killed without a
 * word), comma-separated into buf; returns the length, 0 when none is known to be gone. Async-signal-
 * safe, for the watchdog and abort paths. When the launcher ends a multi-rank job with SIGTERM, every
 * survivor prints one line naming these ranks (installed by dist_init). */
size_t dist_vanished(char *buf, size_t cap);
/* The same list for ranks on this host that are stopped (SIGSTOP, a debugger: /proc state T), each marked
 * on the ranks' board so that its own late line says it was the one stopped. Async-signal-safe. */
size_t dist_stopped(char *buf, size_t cap);
/* This rank is about to end with status `code` (`said`: after its own vpsim line), for the survivors'
 * account of it (dist_board.c). Async-signal-safe. */
void dist_note_exit(int code, bool said);
/* The survivors found this rank stopped and gave up on it. */
bool dist_board_was_stopped(void);

#endif

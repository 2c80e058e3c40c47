/* exec_watch: a watchdog per rank, so that no run or benchmark can hang.
 *
 * The main thread marks progress as it goes (a step begins, an op or collective is enqueued); a
 * watchdog thread of the same process checks the time of the last mark. When nothing was marked for
 * the timeout, it prints one line naming the rank, host, command, backend, what was in progress and
 * the last thing completed, and ends the process with status 1 (mpirun then ends the job). Every rank
 * has its own watchdog, so a rank blocked in a collective, a kernel or a host stall reports by itself:
 * no MPI call is needed to notice, which is the point (MPI may be what is stuck).
 *
 * The marks are cheap (a mutex and a small copy) so that eager timing loops can mark every op. */
#ifndef VPSIM_EXEC_WATCH_H
#define VPSIM_EXEC_WATCH_H

#include "../plan/plan.h"
#include "../dist/dist.h"

#include <stdbool.h>

/* Default timeout (seconds): far above any single step of a healthy run (NCCL init at 8 ranks takes
 * a few seconds; the longest op of the CPU device's largest allowed plan well under one second), and
 * short enough that a hung job is noticed while someone is still looking. */
#define EXEC_WATCH_DEFAULT_S 60

/* Start this rank's watchdog for `command` ("run", "bench-allreduce"). timeout_s <= 0: none. */
void exec_watch_start(const dist_job *d, const char *command, double timeout_s);
/* Stop and join the watchdog thread (no-op when none runs). */
void exec_watch_stop(void);
/* Seconds of the running watchdog's timeout (0 when none). */
double exec_watch_timeout(void);

/* Progress marks. Each one marks progress and makes the activity it replaces the "last completed". */
void exec_watch_backend(const char *backend);
/* The plan whose ops exec_watch_op names (NULL: ops are named by size only). Kept by pointer. */
void exec_watch_plan(const plan *p);
/* A new step begins ("warm-up", "timed cycle 3/20", "size 43008 B: timed calls"). */
void exec_watch_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An op of the plan is being enqueued (flat index), or a collective of `bytes` (>= 0) as call
 * number `call` (>= 1); -1 where not applicable. */
void exec_watch_op(int flat, long long bytes, long long call);

/* The line the watchdog prints, for the state now, after `idle_s` seconds without progress (tests). */
void exec_watch_describe(char *buf, size_t len, double idle_s);

#endif

/* The watchdog (sim/exec/exec_watch.c): a rank that stalls on purpose (--inject-fault stall) must end
 * a CPU-device job with exit status 1 within the timeout, every rank printing one line that names its
 * rank, host, backend, where it was and what it completed last. Also the line itself, in-process. */
#include "../../sim/exec/exec_watch.h"
#include "test_helpers.h"
#include "th_plan.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *bin(void)
{
    const char *b = getenv("VPSIM_BIN");
    return b ? b : "build/vpsim";
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The watchdog line of `rank` in `err`, or NULL. */
static const char *line_of(const char *err, int rank)
{
    char head[48];
    snprintf(head, sizeof(head), "vpsim[rank %d@", rank);
    for (const char *p = strstr(err, head); p; p = strstr(p + 1, head)) {
        const char *eol = strchr(p, '\n');
        const char *w = strstr(p, "]: watchdog: no progress for ");
        if (w && (!eol || w < eol))
            return p;
    }
    return NULL;
}

static void assert_line_has(const char *line, const char *what)
{
    const char *eol = strchr(line, '\n');
    size_t n = eol ? (size_t)(eol - line) : strlen(line);
    char *copy = strndup(line, n);
    cr_assert(strstr(copy, what) != NULL, "watchdog line lacks '%s':\n%s", what, copy);
    free(copy);
}

/* `vpsim ARGS` under mpirun with NP ranks, one of which stalls 90 s with a 2 s timeout: the job must end
 * with exit status 1 long before the stall would (2 s of timeout, 1 s of grace, start-up, mpirun's
 * clean-up). */
static th_result stalled_job(int np, const char *args)
{
    const double t0 = now_s();
    th_result r = th_sh(TH_MPIRUN " -np %d '%s' %s --timeout 2", np, bin(), args);
    const double took = now_s() - t0;
    cr_assert_eq(r.status, 1, "exit %d after %.1f s\n%s\n%s", r.status, took, r.out, r.err);
    cr_assert_lt(took, 30.0, "the job took %.1f s: the watchdog did not end it", took);
    return r;
}

/* Every rank printed its watchdog line, and each line says every one of `wants` (NULL-terminated). */
static void assert_every_rank_says(const th_result *r, int np, const char *const *wants)
{
    for (int rank = 0; rank < np; rank++) {
        const char *line = line_of(r->err, rank);
        cr_assert_not_null(line, "no watchdog line from rank %d:\n%s", rank, r->err);
        for (const char *const *w = wants; *w; w++)
            assert_line_has(line, *w);
    }
}

Test(watchdog, a_stalled_rank_ends_a_cpu_run_with_exit_1_and_a_line_per_rank, .timeout = 120)
{
    /* Rank 1 sleeps 90 s before its 5th collective. */
    th_result r = stalled_job(2, "run configs/tiny.yaml --device cpu --backend mpi --iters 3 --warmup 1 "
                                 "--inject-fault stall:1:5:90");
    /* Rank 1 stalls before call 5, rank 0 waits in it. */
    const char *const wants[] = {"run, backend mpi", "phase ", "op #", "(call 5)", "; last completed: ",
                                 "timeout 2 s", NULL};
    assert_every_rank_says(&r, 2, wants);
    cr_assert(strstr(r.err, "--inject-fault stall") != NULL, "%s", r.err);
    th_free(&r);
}

Test(watchdog, a_stalled_rank_ends_a_cpu_benchmark_naming_the_size, .timeout = 120)
{
    th_result r = stalled_job(3, "bench-allreduce --device cpu --backend mpi --sizes 16,1K,64K -n 10 -w 2 "
                                 "--inject-fault stall:2:30:90");
    /* 12 calls per size (2 warm-up + 10): call 30 is the third size's. */
    const char *const wants[] = {"bench-allreduce, backend mpi", "collective of 65536 B (call 30)",
                                 "last completed: ", NULL};
    assert_every_rank_says(&r, 3, wants);
    th_free(&r);
}

Test(watchdog, the_scenario_sets_the_timeout_and_0_turns_it_off, .timeout = 120)
{
    /* run.timeout from the scenario (--set) fires; --timeout 0 on the command line wins over it, and the
     * stall (3 s) then merely delays the job, which succeeds. */
    th_result r = th_sh(TH_MPIRUN " -np 2 '%s' run configs/tiny.yaml --device cpu --backend mpi --iters 2 --warmup 0 "
                               "--inject-fault stall:0:3:60 --set run.timeout=1",
                        bin());
    cr_assert_eq(r.status, 1, "exit %d\n%s", r.status, r.err);
    cr_assert_not_null(line_of(r.err, 0), "%s", r.err);
    cr_assert(strstr(r.err, "timeout 1 s") != NULL, "%s", r.err);
    th_free(&r);
    r = th_sh(TH_MPIRUN " -np 2 '%s' run configs/tiny.yaml --device cpu --backend mpi --iters 2 --warmup 0 "
                     "--inject-fault stall:0:3:3 --set run.timeout=1 --timeout 0",
              bin());
    cr_assert_eq(r.status, 0, "exit %d\n%s", r.status, r.err);
    cr_assert(strstr(r.err, "watchdog") == NULL, "%s", r.err);
    th_free(&r);
}

Test(watchdog, bad_timeouts_and_faults_exit_2)
{
    const char *bad[][2] = {
        {"run configs/tiny.yaml --device cpu --timeout -1", "--timeout"},
        {"run configs/tiny.yaml --device cpu --timeout soon", "--timeout"},
        {"bench-allreduce --device cpu --timeout 1e9", "--timeout"},
        {"run configs/tiny.yaml --device cpu --backend mpi --inject-fault stall:5:1", "rank 5 does not exist"},
        {"bench-allreduce --device cpu --inject-fault kill:9:1", "rank 9 does not exist"},
        {"run configs/tiny.yaml --device cpu --inject-fault stall:0:1:5:extra", "MODE:RANK:CALL"},
        {"run configs/tiny.yaml --device cpu --set run.timeout=-3", "run.timeout"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        th_result r = th_run("%s", bad[i][0]);
        cr_assert_eq(r.status, 2, "'%s': exit %d\n%s", bad[i][0], r.status, r.err);
        cr_assert(strstr(r.err, bad[i][1]) != NULL, "'%s': no '%s' in:\n%s", bad[i][0], bad[i][1], r.err);
        th_free(&r);
    }
}

Test(watchdog, the_line_names_the_op_in_progress_and_the_last_one_completed)
{
    cfg_scenario sc;
    plan p;
    th_plan_build("configs/tiny.yaml", NULL, 0, &sc, &p);
    exec_watch_backend("oneshot");
    exec_watch_plan(&p);
    exec_watch_step("timed cycle %d/%d", 3, 20);
    const int first = p.phases[0].n_ops; /* op 0 of the second phase */
    exec_watch_op(first - 1, -1, -1);
    exec_watch_op(first, 4096, 7);
    char line[1024];
    exec_watch_describe(line, sizeof(line), 12.5);
    char want[256];
    snprintf(want, sizeof(want), "in: timed cycle 3/20, phase %s, op #%d '%s' (%s), collective of 4096 B (call 7)",
             p.phases[1].name, first, p.phases[1].ops[0].name, plan_op_kind_names[p.phases[1].ops[0].kind]);
    cr_assert(strstr(line, want) != NULL, "want '%s' in:\n%s", want, line);
    snprintf(want, sizeof(want), "last completed: timed cycle 3/20, phase %s, op #%d '%s'", p.phases[0].name,
             first - 1, p.phases[0].ops[first - 1].name);
    cr_assert(strstr(line, want) != NULL, "want '%s' in:\n%s", want, line);
    cr_assert(strstr(line, "no progress for 12.5 s") != NULL, "%s", line);
    cr_assert(strstr(line, "backend oneshot") != NULL, "%s", line);
    exec_watch_plan(NULL);
    th_plan_done(&sc, &p);
}

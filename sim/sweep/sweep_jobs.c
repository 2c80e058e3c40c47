/* sweep_jobs: the pending points of a sweep modelled by worker processes (--jobs N), or in this process
 * (N = 1). The workers are forked after everything is loaded, share nothing but a pipe each to the
 * parent, and model interleaved blocks of consecutive points (neighbours often share a plan: the last
 * --vary runs fastest). The parent alone writes FILE.partial, one record per point as it arrives, and
 * keeps each point's rows by its index, so the CSV — assembled in index order at the end — is byte for
 * byte the one a single process writes, and an interrupted run resumes the same way. */
#include "sweep.h"

#include "../util/util.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Points per block handed to one worker: large enough that a block's points share plans, small enough
 * that the workers finish together. */
#define SWEEP_BLOCK 16

typedef struct point_msg {
    long long idx;
    int ok;  /* the point could be modelled */
    int len; /* bytes of rows that follow */
} point_msg;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* 1 when `len` bytes were read, 0 at a clean end of file before any byte, -1 otherwise. */
static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, p + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 && got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

/* One point done: its record in the partial file, its rows kept, the counts and the progress bar. */
static void commit_point(sweep *sw, FILE *part, const sweep_runner *run, sweep_tally *t, long long idx, bool ok,
                         const char *rows)
{
    sweep_append_record(part, rows, idx);
    fflush(part);
    sw->rows[idx] = util_xstrdup(rows);
    t->done++;
    t->failed += !ok;
    if (run->progress)
        run->progress(t->done, sw->total, now_s() - t->t0);
}

static void run_here(sweep *sw, FILE *part, const sweep_runner *run, const long long *todo, long long n,
                     sweep_tally *t)
{
    util_buf rows = {0};
    for (long long i = 0; i < n && !*run->stop; i++) {
        rows.len = 0;
        if (rows.s)
            rows.s[0] = '\0';
        const bool ok = run->point(sw, todo[i], run->state, &rows);
        commit_point(sw, part, run, t, todo[i], ok, rows.s ? rows.s : "");
    }
    util_buf_free(&rows);
}

/* A worker: blocks w, w + jobs, w + 2 jobs, ... of `todo`, each point sent as a point_msg and its rows. */
static void worker(const sweep *sw, const sweep_runner *run, const long long *todo, long long n, int w, int jobs,
                   int fd)
{
    util_buf rows = {0};
    for (long long b = (long long)w * SWEEP_BLOCK; b < n && !*run->stop; b += (long long)jobs * SWEEP_BLOCK)
        for (long long i = b; i < b + SWEEP_BLOCK && i < n && !*run->stop; i++) {
            rows.len = 0;
            if (rows.s)
                rows.s[0] = '\0';
            point_msg m = {.idx = todo[i]};
            m.ok = run->point(sw, todo[i], run->state, &rows);
            m.len = (int)rows.len;
            if (write_all(fd, &m, sizeof(m)) || write_all(fd, rows.s ? rows.s : "", rows.len))
                _exit(3); /* the parent is gone: nothing to report to */
        }
    util_buf_free(&rows);
    close(fd);
    _exit(0);
}

/* The parent's side: every worker's records until each pipe ends, then every worker's status. */
static int collect(sweep *sw, FILE *part, const sweep_runner *run, sweep_tally *t, const pid_t *pids, int *fds,
                   int jobs)
{
    struct pollfd pf[SWEEP_MAX_JOBS];
    int open_fds = jobs, rc = 0;
    char *buf = NULL;
    size_t cap = 0;
    bool forwarded = false;
    while (open_fds > 0) {
        /* A SIGINT sent to this process alone (kill, a job runner) reaches the workers through here; a
         * terminal's Ctrl-C reaches them itself. They stop after their current point. */
        if (*run->stop && !forwarded) {
            for (int w = 0; w < jobs; w++)
                if (fds[w] >= 0)
                    kill(pids[w], SIGINT);
            forwarded = true;
        }
        for (int w = 0; w < jobs; w++)
            pf[w] = (struct pollfd){.fd = fds[w], .events = POLLIN};
        if (poll(pf, (nfds_t)jobs, -1) < 0) {
            if (errno == EINTR)
                continue; /* keep reading what the workers still send */
            fprintf(stderr, "vpsim sweep: poll: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        for (int w = 0; w < jobs; w++) {
            if (fds[w] < 0 || !(pf[w].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            point_msg m;
            int got = read_all(fds[w], &m, sizeof(m));
            bool bad = got < 0 || (got > 0 && (m.len < 0 || m.idx < 0 || m.idx >= sw->total || sw->rows[m.idx]));
            if (got > 0 && !bad) {
                if ((size_t)m.len + 1 > cap) {
                    cap = (size_t)m.len + 1;
                    buf = util_xrealloc(buf, cap);
                }
                bad = read_all(fds[w], buf, (size_t)m.len) < 0 && m.len > 0;
                if (!bad) {
                    buf[m.len] = '\0';
                    commit_point(sw, part, run, t, m.idx, m.ok != 0, buf);
                    continue;
                }
            }
            if (bad)
                rc = -1;
            close(fds[w]);
            fds[w] = -1;
            open_fds--;
        }
    }
    free(buf);
    for (int w = 0; w < jobs; w++) {
        if (fds[w] >= 0)
            close(fds[w]);
        int st = 0;
        while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(st) && WTERMSIG(st) != SIGINT) {
            fprintf(stderr, "vpsim sweep: worker %d (pid %d) died of signal %d (%s); the points it had not sent are "
                            "not done\n",
                    w + 1, (int)pids[w], WTERMSIG(st), strsignal(WTERMSIG(st)));
            rc = -1;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
            fprintf(stderr, "vpsim sweep: worker %d (pid %d) exited with status %d; the points it had not sent are "
                            "not done\n",
                    w + 1, (int)pids[w], WEXITSTATUS(st));
            rc = -1;
        }
    }
    return rc;
}

int sweep_run_points(sweep *sw, FILE *part, int jobs, const sweep_runner *run, sweep_tally *t)
{
    /* The points to model now: those the partial file lacks, at most --limit of them. */
    long long n = 0;
    long long *todo = util_xmalloc((size_t)(sw->total > 0 ? sw->total : 1) * sizeof(long long));
    for (long long idx = 0; idx < sw->total; idx++)
        if (!sw->rows[idx] && (sw->limit < 0 || n < sw->limit))
            todo[n++] = idx;
    const long long blocks = (n + SWEEP_BLOCK - 1) / SWEEP_BLOCK;
    if (jobs > blocks)
        jobs = (int)(blocks > 0 ? blocks : 1);
    t->jobs = jobs;
    if (jobs <= 1) {
        run_here(sw, part, run, todo, n, t);
        free(todo);
        return 0;
    }
    fflush(part); /* nothing buffered may be written twice by the children */
    fflush(stdout);
    fflush(stderr);
    pid_t pids[SWEEP_MAX_JOBS];
    int fds[SWEEP_MAX_JOBS];
    int started = 0, rc = 0;
    for (int w = 0; w < jobs; w++) {
        int pfd[2];
        if (pipe(pfd) != 0) {
            fprintf(stderr, "vpsim sweep: pipe: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "vpsim sweep: fork: %s\n", strerror(errno));
            close(pfd[0]);
            close(pfd[1]);
            rc = -1;
            break;
        }
        if (pid == 0) {
            close(pfd[0]);
            for (int k = 0; k < started; k++)
                close(fds[k]);
            worker(sw, run, todo, n, w, jobs, pfd[1]);
        }
        close(pfd[1]);
        pids[started] = pid;
        fds[started] = pfd[0];
        started++;
    }
    if (rc != 0) /* some workers did not start: stop those that did, keep what they sent */
        for (int k = 0; k < started; k++)
            kill(pids[k], SIGINT);
    if (started > 0 && collect(sw, part, run, t, pids, fds, started) != 0)
        rc = -1;
    free(todo);
    return rc;
}

int sweep_default_jobs(void)
{
    /* The cores this process may run on (taskset, a container's cpuset), not the machine's. */
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        n = CPU_COUNT(&set);
    return n < 1 ? 1 : n > SWEEP_MAX_JOBS ? SWEEP_MAX_JOBS : (int)n;
}

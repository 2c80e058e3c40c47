/* The per-rank watchdog (see exec_watch.h). One thread per process; state behind one mutex. */
#include "exec_watch.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What a rank is doing: a step (by slot, see below) and, within it, an op or collective. Small, because
 * eager timing loops copy one per op. */
typedef struct activity {
    int step;        /* slot in watch.steps, -1 none */
    int op;          /* flat op index, -1 none */
    long long bytes; /* collective payload, -1 none */
    long long call;  /* collective call number, -1 none */
} activity;

typedef struct watch {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* on CLOCK_MONOTONIC; signalled by exec_watch_stop */
    pthread_t thread;
    bool running, stop;
    double timeout_s;
    double last; /* CLOCK_MONOTONIC seconds of the last mark */
    dist_job dist;
    char command[32];
    char backend[48];
    const plan *plan;
    /* Step labels in two slots: `now` names one, `prev` the same or the other, so a new step writes the
     * slot `now` leaves and no label is copied per op. */
    char steps[2][112];
    activity now, prev;
} watch;

static watch g_watch = {.mu = PTHREAD_MUTEX_INITIALIZER, .now = {.step = -1, .op = -1, .bytes = -1, .call = -1},
                        .prev = {.step = -1, .op = -1, .bytes = -1, .call = -1}};

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Caller holds the mutex. */
static void shift(void)
{
    g_watch.prev = g_watch.now;
    g_watch.last = mono_s();
}

void exec_watch_backend(const char *backend)
{
    pthread_mutex_lock(&g_watch.mu);
    snprintf(g_watch.backend, sizeof(g_watch.backend), "%s", backend ? backend : "");
    g_watch.last = mono_s();
    pthread_mutex_unlock(&g_watch.mu);
}

void exec_watch_plan(const plan *p)
{
    pthread_mutex_lock(&g_watch.mu);
    g_watch.plan = p;
    pthread_mutex_unlock(&g_watch.mu);
}

void exec_watch_step(const char *fmt, ...)
{
    pthread_mutex_lock(&g_watch.mu);
    shift();
    const int slot = g_watch.now.step == 0 ? 1 : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_watch.steps[slot], sizeof(g_watch.steps[slot]), fmt, ap);
    va_end(ap);
    g_watch.now.step = slot;
    g_watch.now.op = -1;
    g_watch.now.bytes = -1;
    g_watch.now.call = -1;
    pthread_mutex_unlock(&g_watch.mu);
}

void exec_watch_op(int flat, long long bytes, long long call)
{
    pthread_mutex_lock(&g_watch.mu);
    shift();
    g_watch.now.op = flat;
    g_watch.now.bytes = bytes;
    g_watch.now.call = call;
    pthread_mutex_unlock(&g_watch.mu);
}

/* Caller holds the mutex. */
static void describe_activity(char *buf, size_t len, const activity *a)
{
    if (a->step < 0 && a->op < 0 && a->bytes < 0) {
        snprintf(buf, len, "nothing yet");
        return;
    }
    size_t n = (size_t)snprintf(buf, len, "%s", a->step >= 0 ? g_watch.steps[a->step] : "(no step)");
    const plan *p = g_watch.plan;
    if (a->op >= 0 && p && n < len) {
        int flat = a->op;
        for (int ph = 0; ph < p->n_phases; ph++) {
            if (flat < p->phases[ph].n_ops) {
                const plan_op *op = &p->phases[ph].ops[flat];
                n += (size_t)snprintf(buf + n, len - n, ", phase %s, op #%d '%s' (%s)", p->phases[ph].name, a->op,
                                      op->name, plan_op_kind_names[op->kind]);
                break;
            }
            flat -= p->phases[ph].n_ops;
        }
    }
    if (a->bytes >= 0 && n < len)
        n += (size_t)snprintf(buf + n, len - n, ", collective of %lld B", a->bytes);
    if (a->call >= 0 && n < len)
        snprintf(buf + n, len - n, " (call %lld)", a->call);
}

static void describe_locked(char *buf, size_t len, double idle_s)
{
    char now[320], prev[320];
    describe_activity(now, sizeof(now), &g_watch.now);
    describe_activity(prev, sizeof(prev), &g_watch.prev);
    snprintf(buf, len,
             "vpsim[rank %d@%s]: watchdog: no progress for %.1f s (timeout %g s: --timeout or run.timeout): %s, "
             "backend %s, in: %s; last completed: %s\n",
             g_watch.dist.rank, g_watch.dist.host[0] ? g_watch.dist.host : "?", idle_s, g_watch.timeout_s,
             g_watch.command[0] ? g_watch.command : "vpsim", g_watch.backend[0] ? g_watch.backend : "(none yet)", now,
             prev);
}

void exec_watch_describe(char *buf, size_t len, double idle_s)
{
    pthread_mutex_lock(&g_watch.mu);
    describe_locked(buf, len, idle_s);
    pthread_mutex_unlock(&g_watch.mu);
}

static void *watch_main(void *arg)
{
    (void)arg;
    const double t = g_watch.timeout_s;
    /* Check often enough that the report comes within a few percent of the timeout. The wait is on a
     * condition that exec_watch_stop signals, not a sleep: a sleep of up to 0.5 s made every command that
     * ran the watchdog wait that long at its end for the join. */
    double poll = t / 20.0;
    poll = poll < 0.02 ? 0.02 : poll > 0.5 ? 0.5 : poll;
    pthread_mutex_lock(&g_watch.mu);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        const double end = (double)until.tv_nsec * 1e-9 + poll;
        until.tv_sec += (time_t)end;
        until.tv_nsec = (long)((end - (double)(time_t)end) * 1e9);
        if (!g_watch.stop)
            pthread_cond_timedwait(&g_watch.wake, &g_watch.mu, &until);
        if (g_watch.stop) {
            pthread_mutex_unlock(&g_watch.mu);
            return NULL;
        }
        double idle = mono_s() - g_watch.last;
        if (idle < t)
            continue;
        char line[2048];
        describe_locked(line, sizeof(line), idle);
        pthread_mutex_unlock(&g_watch.mu);
        /* A peer that is stopped (SIGSTOP) is not gone: it is named here, and marked so that its own line,
         * should it be continued, says it was the one stopped rather than blaming the ranks that left. */
        char who[1024];
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n')
            line[--n] = '\0';
        if (dist_board_was_stopped())
            n += (size_t)snprintf(line + n, sizeof(line) - n, "; this rank was stopped (SIGSTOP) meanwhile, and the "
                                                              "others' watchdog gave up on it");
        if (dist_stopped(who, sizeof(who)) && n < sizeof(line))
            n += (size_t)snprintf(line + n, sizeof(line) - n, "; the job cannot go on: %s %s stopped (SIGSTOP or a "
                                                              "debugger)",
                                  who, strchr(who, ';') ? "are" : "is");
        if (n < sizeof(line) - 1)
            snprintf(line + n, sizeof(line) - n, "\n");
        dist_note_exit(1, true);
        /* One write, so that lines of different ranks do not interleave. */
        ssize_t w = write(2, line, strlen(line));
        (void)w;
        /* The other ranks, blocked in the same collective, reach their own timeout within moments:
         * give them a second to print theirs before this exit makes mpirun end the job. No MPI call
         * here: this is not the thread MPI was initialised for, and MPI may be what is stuck. */
        sleep(1);
        _exit(1);
    }
}

static pthread_once_t g_wake_once = PTHREAD_ONCE_INIT;

/* The condition waits on CLOCK_MONOTONIC, so that a change of the wall clock neither fires nor delays
 * the watchdog; that takes an attribute, hence no static initialiser. */
static void init_wake(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&g_watch.wake, &a);
    pthread_condattr_destroy(&a);
}

void exec_watch_start(const dist_job *d, const char *command, double timeout_s)
{
    pthread_once(&g_wake_once, init_wake);
    pthread_mutex_lock(&g_watch.mu);
    bool already = g_watch.running;
    g_watch.dist = *d;
    snprintf(g_watch.command, sizeof(g_watch.command), "%s", command);
    g_watch.timeout_s = timeout_s > 0 ? timeout_s : 0;
    g_watch.stop = false;
    g_watch.last = mono_s();
    pthread_mutex_unlock(&g_watch.mu);
    if (already || timeout_s <= 0)
        return;
    if (pthread_create(&g_watch.thread, NULL, watch_main, NULL) != 0) {
        fprintf(stderr, "vpsim[rank %d@%s]: warning: could not start the watchdog thread; a hang will not be "
                        "reported\n",
                d->rank, d->host);
        return;
    }
    g_watch.running = true;
}

void exec_watch_stop(void)
{
    if (!g_watch.running)
        return;
    pthread_mutex_lock(&g_watch.mu);
    g_watch.stop = true;
    pthread_cond_signal(&g_watch.wake);
    pthread_mutex_unlock(&g_watch.mu);
    pthread_join(g_watch.thread, NULL);
    g_watch.running = false;
}

double exec_watch_timeout(void) { return g_watch.running ? g_watch.timeout_s : 0.0; }

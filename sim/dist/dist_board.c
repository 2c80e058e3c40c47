/* The ranks' own account of their end (dist_board.h). One slot per rank of the job in a page shared by
 * the ranks of a host; a rank writes only its own slot (and a survivor the `stopped` mark of another). */
#include "dist_board.h"
#include "dist.h"
#include "dist_fail.h"
#include "dist_shm.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_RUNNING = 0, SLOT_EXITED, SLOT_SIGNAL };

typedef struct dist_slot {
    volatile sig_atomic_t state; /* SLOT_* */
    volatile sig_atomic_t code;  /* exit status or signal number */
    volatile sig_atomic_t said;  /* printed its own vpsim line */
    volatile sig_atomic_t stopped; /* a survivor found it stopped */
} dist_slot;

static dist_slot *g_board;
static size_t g_board_bytes;
static int g_rank, g_size;

/* The signals a rank can die of and still say so; SIGTERM is dist.c's (the launcher's). */
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGINT, SIGQUIT, SIGHUP};
#define N_FATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction g_old[N_FATAL];

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGHUP: return "SIGHUP";
    case SIGTERM: return "SIGTERM";
    default: return NULL;
    }
}

static void on_fatal(int sig)
{
    if (g_board && g_board[g_rank].state == SLOT_RUNNING) {
        g_board[g_rank].code = sig;
        g_board[g_rank].state = SLOT_SIGNAL;
    }
    /* Chained: the handler this one replaced (Open MPI's backtrace, a sanitizer's report) or the default
     * action runs next, as if this one were not there. */
    for (size_t i = 0; i < N_FATAL; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &g_old[i], NULL);
    raise(sig);
}

static void on_exit_status(int status, void *arg)
{
    (void)arg;
    /* The house rule: a non-zero status comes with a message (on this rank or on rank 0). */
    dist_note_exit(status, status != 0);
}

void dist_note_exit(int code, bool said)
{
    if (!g_board || g_board[g_rank].state != SLOT_RUNNING)
        return;
    g_board[g_rank].code = code;
    g_board[g_rank].said = said;
    g_board[g_rank].state = SLOT_EXITED;
}

void dist_board_init(const dist_job *d, int creator)
{
    g_rank = d->rank;
    g_size = d->size;
    char name[96], why[320];
    dist_shm_name(name, sizeof(name), "status", dist_shm_token(), creator);
    const size_t bytes = (size_t)d->size * sizeof(dist_slot);
    void *p = NULL;
    /* Best effort: without a board the survivors' lines fall back to what /proc shows. The barriers are
     * unconditional, so a rank that could not map it never leaves the others waiting. */
    if (d->rank == creator)
        p = dist_shm_create(name, bytes, false, why, sizeof(why));
    dist_barrier();
    if (d->rank != creator)
        p = dist_shm_attach(name, bytes, why, sizeof(why));
    dist_barrier();
    if (d->rank == creator && p)
        dist_shm_release(name);
    g_board = p;
    g_board_bytes = bytes;
    if (!g_board)
        return;
    on_exit(on_exit_status, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++)
        sigaction(fatal_signals[i], &sa, &g_old[i]);
}

void dist_board_fini(void)
{
    if (!g_board)
        return;
    for (size_t i = 0; i < N_FATAL; i++)
        sigaction(fatal_signals[i], &g_old[i], NULL);
    /* The slot stays mapped: an exit after MPI_Finalize still writes its status there. */
}

size_t dist_board_describe(int r, char *buf, size_t n, size_t cap)
{
    if (!g_board || r < 0 || r >= g_size || g_board[r].state == SLOT_RUNNING)
        return dist_put_str(buf, n, cap, ": its process is gone without a vpsim line of its own, so it was killed by "
                                         "a signal no process can catch (SIGKILL: kill -9, or the OOM killer)");
    const dist_slot *s = &g_board[r];
    if (s->state == SLOT_SIGNAL) {
        const char *sig = signal_name((int)s->code);
        n = dist_put_str(buf, n, cap, ": it died of ");
        if (sig)
            n = dist_put_str(buf, n, cap, sig);
        else {
            n = dist_put_str(buf, n, cap, "signal ");
            n = dist_put_int(buf, n, cap, (long)s->code);
        }
        return n;
    }
    n = dist_put_str(buf, n, cap, ": it exited with status ");
    n = dist_put_int(buf, n, cap, (long)s->code);
    return dist_put_str(buf, n, cap, s->said ? " (its own vpsim line, or rank 0's, says why)" : "");
}

void dist_board_mark_stopped(int r)
{
    if (g_board && r >= 0 && r < g_size)
        g_board[r].stopped = 1;
}

bool dist_board_was_stopped(void)
{
    return g_board && g_board[g_rank].stopped;
}

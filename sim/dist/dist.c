#include "dist.h"

#include "../util/util.h"
#include "dist_board.h"
#include "dist_fail.h"
#include "dist_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dist_job g_dist;

/* ---------------- naming a rank that vanished ----------------
 * A rank killed with SIGKILL says nothing, and Open MPI's launcher then ends the survivors with SIGTERM
 * (its banner names the rank, but in its own words and only on the launcher's terminal). Every rank
 * therefore learns the pid and host of the others at start-up; a survivor that is terminated, or whose
 * MPI call fails, looks for ranks on its own host whose process is gone and names them in one vpsim
 * line. A rank on another host cannot be checked from here: the line says so. */

typedef struct dist_peer {
    int pid;
    char host[64];
} dist_peer;

static dist_peer *g_peers; /* g_dist.size entries; NULL at one rank */

/* The state letter of /proc/PID/stat ("pid (comm) S ..."), '?' when it cannot be read, '\0' when the
 * process does not exist. Async-signal-safe. */
static char pid_state(int pid)
{
    if (kill(pid, 0) != 0)
        return errno == ESRCH ? '\0' : '?';
    char path[40];
    size_t n = dist_put_str(path, 0, sizeof(path), "/proc/");
    n = dist_put_int(path, n, sizeof(path), pid);
    dist_put_str(path, n, sizeof(path), "/stat");
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return '\0';
    char stat[256];
    ssize_t got = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    if (got <= 0)
        return '\0';
    stat[got] = '\0';
    /* The state follows the last ')'. */
    const char *rp = NULL;
    for (const char *p = stat; *p; p++)
        if (*p == ')')
            rp = p;
    return rp && rp[1] == ' ' ? rp[2] : '?';
}

/* Gone: no such process, or a zombie its parent has not reaped yet. Async-signal-safe. */
static bool pid_gone(int pid)
{
    const char st = pid_state(pid);
    return st == '\0' || st == 'Z' || st == 'X';
}

static size_t put_peer(char *buf, size_t n, size_t cap, int r, int found)
{
    n = dist_put_str(buf, n, cap, found ? "; rank " : "rank ");
    n = dist_put_int(buf, n, cap, r);
    n = dist_put_str(buf, n, cap, " (pid ");
    n = dist_put_int(buf, n, cap, g_peers[r].pid);
    n = dist_put_str(buf, n, cap, " on ");
    n = dist_put_str(buf, n, cap, g_peers[r].host);
    return dist_put_str(buf, n, cap, ")");
}

size_t dist_vanished(char *buf, size_t cap)
{
    size_t n = 0;
    int found = 0;
    buf[0] = '\0';
    if (!g_peers)
        return 0;
    for (int r = 0; r < g_dist.size; r++) {
        if (r == g_dist.rank || strcmp(g_peers[r].host, g_dist.host) != 0 || !pid_gone(g_peers[r].pid))
            continue;
        n = put_peer(buf, n, cap, r, found++);
        /* What the rank itself wrote of its end, not a guess (dist_board.c). */
        n = dist_board_describe(r, buf, n, cap);
    }
    return n;
}

size_t dist_stopped(char *buf, size_t cap)
{
    size_t n = 0;
    int found = 0;
    buf[0] = '\0';
    for (int r = 0; g_peers && r < g_dist.size; r++) {
        if (r == g_dist.rank || strcmp(g_peers[r].host, g_dist.host) != 0)
            continue;
        const char st = pid_state(g_peers[r].pid);
        if (st != 'T' && st != 't')
            continue;
        n = put_peer(buf, n, cap, r, found++);
        dist_board_mark_stopped(r);
    }
    return n;
}

static bool other_hosts(void)
{
    for (int r = 0; g_peers && r < g_dist.size; r++)
        if (strcmp(g_peers[r].host, g_dist.host) != 0)
            return true;
    return false;
}

/* Said first in a rank's own line when the survivors found it stopped and gave up on it. */
static const char stopped_self[] = "this rank was stopped (SIGSTOP) and the others' watchdog gave up on it; ";

static void on_terminate(int sig)
{
    const int saved = errno;
    dist_shm_cleanup(g_dist.size);
    char line[1536], gone[1024];
    size_t n = dist_put_str(line, 0, sizeof(line), "vpsim[rank ");
    n = dist_put_int(line, n, sizeof(line), g_dist.rank);
    n = dist_put_str(line, n, sizeof(line), "@");
    n = dist_put_str(line, n, sizeof(line), g_dist.host);
    n = dist_put_str(line, n, sizeof(line), "]: terminated by the MPI launcher (SIGTERM); ");
    if (dist_board_was_stopped())
        n = dist_put_str(line, n, sizeof(line), stopped_self);
    if (dist_vanished(gone, sizeof(gone))) {
        n = dist_put_str(line, n, sizeof(line), "the job lost ");
        n = dist_put_str(line, n, sizeof(line), gone);
    } else if (dist_stopped(gone, sizeof(gone))) {
        n = dist_put_str(line, n, sizeof(line), "the job cannot go on without ");
        n = dist_put_str(line, n, sizeof(line), gone);
        n = dist_put_str(line, n, sizeof(line), ", which is stopped (SIGSTOP or a debugger)");
    } else {
        n = dist_put_str(line, n, sizeof(line), other_hosts() ? "no rank on this host has vanished; one on another host may "
                                                           "have failed (the launcher's message names it)"
                                                         : "no rank has vanished; another rank failed or exited (its "
                                                           "own vpsim line says why)");
    }
    n = dist_put_str(line, n, sizeof(line), "\n");
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
    errno = saved;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The failure path's work that needs this file's state (dist_fail.c calls it through dist_fail_hooks, so
 * that the failure path sits below everything that fails): the shared segments go first, ... */
static void fail_cleanup(void) { dist_shm_cleanup(g_dist.size); }

/* ... then, after the failure's own line, the ranks the job lost, and this rank's exit for the board. */
static void fail_epilogue(void)
{
    /* A failed MPI call is often a peer that died (a closed TCP connection): name it when it is local. */
    char gone[1024];
    if (dist_vanished(gone, sizeof(gone)))
        fprintf(stderr, "vpsim[rank %d@%s]: %sthe job lost %s\n", g_dist.rank, g_dist.host,
                dist_board_was_stopped() ? stopped_self : "", gone);
    dist_note_exit(1, true);
}

/* Learn every rank's pid and host, and name the vanished ranks when the launcher ends this one. */
static void peers_init(const dist_job *d)
{
    if (d->size < 2)
        return;
    dist_peer me;
    memset(&me, 0, sizeof(me));
    me.pid = (int)getpid();
    memcpy(me.host, d->host, sizeof(me.host));
    g_peers = calloc((size_t)d->size, sizeof(*g_peers));
    if (!g_peers)
        return;
    VP_MPI(MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, g_peers, (int)sizeof(me), MPI_BYTE, MPI_COMM_WORLD));
    int creator = d->rank;
    for (int r = d->size - 1; r >= 0; r--)
        if (!strcmp(g_peers[r].host, d->host))
            creator = r;
    dist_board_init(d, creator);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_terminate;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGTERM, &sa, NULL);
}

void dist_init(dist_job *d, int *argc, char ***argv)
{
    int inited = 0;
    MPI_Initialized(&inited);
    memset(d, 0, sizeof(*d));
    if (!inited) {
        int provided = 0;
        /* FUNNELED: only the main thread calls MPI; host progress threads are NCCL's own. */
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "%s: MPI_Init_thread failed\n", util_prog());
            exit(1);
        }
        d->mpi_initialised_here = true;
    }
    /* Errors come back as codes so that VP_MPI can name the call before aborting. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    VP_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &d->rank));
    VP_MPI(MPI_Comm_size(MPI_COMM_WORLD, &d->size));
    MPI_Comm local;
    VP_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local));
    VP_MPI(MPI_Comm_rank(local, &d->local_rank));
    VP_MPI(MPI_Comm_size(local, &d->local_size));
    VP_MPI(MPI_Comm_free(&local));
    if (gethostname(d->host, sizeof(d->host) - 1) != 0)
        snprintf(d->host, sizeof(d->host), "unknown");
    g_dist = *d;
    dist_fail_identity(d->rank, d->host, fail_cleanup, fail_epilogue);
    peers_init(d);
}

void dist_finalize(dist_job *d)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (d->mpi_initialised_here && !fin)
        MPI_Finalize();
    signal(SIGTERM, SIG_DFL);
    dist_board_fini();
    free(g_peers);
    g_peers = NULL;
}

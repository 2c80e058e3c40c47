/* The failure path (dist.h: dist_fail, VP_MPI) and the async-signal-safe formatters, at the bottom of
 * sim/dist: every file fails through here and this file calls none of them. What failing needs from
 * above (removing the shared segments, naming the ranks the job lost, the board's note of this exit)
 * comes as two hooks that dist_init registers with the rank's identity. */
#include "dist_fail.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
    int rank;
    char host[64];
    void (*cleanup)(void), (*epilogue)(void);
} g_fail;

void dist_fail_identity(int rank, const char *host, void (*cleanup)(void), void (*epilogue)(void))
{
    g_fail.rank = rank;
    snprintf(g_fail.host, sizeof(g_fail.host), "%s", host);
    g_fail.cleanup = cleanup;
    g_fail.epilogue = epilogue;
}

/* Async-signal-safe: the handler below formats with these, not stdio. */
size_t dist_put_str(char *buf, size_t n, size_t cap, const char *s)
{
    while (*s && n + 1 < cap)
        buf[n++] = *s++;
    buf[n] = '\0';
    return n;
}

size_t dist_put_int(char *buf, size_t n, size_t cap, long v)
{
    char digits[24];
    int k = 0;
    unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
    do
        digits[k++] = (char)('0' + u % 10);
    while ((u /= 10) && k < (int)sizeof(digits));
    if (v < 0 && n + 1 < cap)
        buf[n++] = '-';
    while (k > 0 && n + 1 < cap)
        buf[n++] = digits[--k];
    buf[n] = '\0';
    return n;
}

_Noreturn void dist_fail(const char *file, int line, const char *what, const char *detail)
{
    if (g_fail.cleanup)
        g_fail.cleanup();
    fprintf(stderr, "vpsim[rank %d@%s]: %s:%d: %s: %s\n", g_fail.rank, g_fail.host[0] ? g_fail.host : "?", file,
            line, what, detail ? detail : "");
    if (g_fail.epilogue)
        g_fail.epilogue();
    fflush(stderr);
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

_Noreturn void dist_mpi_fail(const char *file, int line, const char *call, int rc)
{
    char msg[MPI_MAX_ERROR_STRING + 64];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof(msg), "MPI error %d", rc);
    dist_fail(file, line, call, msg);
}


/* dist_fail.h: the failure path's registration (dist_fail.c); dist_fail itself is declared in dist.h. */
#ifndef VPSIM_DIST_FAIL_H
#define VPSIM_DIST_FAIL_H

#include "dist.h"

/* Who fails (the "vpsim[rank R@host]" of every failure line), and what failing must do besides:
 * `cleanup` before the line, `epilogue` after it (either may be NULL). dist_init calls it. */
void dist_fail_identity(int rank, const char *host, void (*cleanup)(void), void (*epilogue)(void));

/* Async-signal-safe formatting, for the signal handlers and the board: append s (or v in decimal) to
 * buf[n..cap), always terminated; returns the new length. */
size_t dist_put_str(char *buf, size_t n, size_t cap, const char *s);
size_t dist_put_int(char *buf, size_t n, size_t cap, long v);

#endif

/* dist_board: what each rank of a host says of its own end, in one shared page per host (dist_board.c),
 * so that a survivor names a dead peer by what happened to it (its exit status, the signal it died of,
 * whether it printed its own line), not by a guess. A rank that could not write there was killed by a
 * signal no process can catch (SIGKILL). Every writer and reader here is async-signal-safe. */
#ifndef VPSIM_DIST_BOARD_H
#define VPSIM_DIST_BOARD_H

#include <stdbool.h>
#include <stddef.h>

struct dist_job;
/* Set up the host's board (collective: every rank of the job calls it) and the handlers that write this
 * rank's end into it (exit, and the fatal signals, each chained to the handler it replaces). `creator`:
 * the lowest rank on this host, which creates the page; the name is gone before this returns. */
void dist_board_init(const struct dist_job *d, int creator);
void dist_board_fini(void);
/* This rank is about to end with exit status `code`; `said`: it printed its own vpsim line first. */
void dist_note_exit(int code, bool said);
/* Append to buf (at n, capacity cap) what rank `r` said of its end: ": it exited with status 1 after its
 * own vpsim line", ": it died of SIGSEGV", or, with nothing written, that it was killed without a word.
 * Returns the new length. */
size_t dist_board_describe(int r, char *buf, size_t n, size_t cap);
/* The survivors' watchdog found rank `r` stopped (SIGSTOP): noted, so that rank's own late line says so. */
void dist_board_mark_stopped(int r);
/* A survivor noted this rank stopped. */
bool dist_board_was_stopped(void);

#endif

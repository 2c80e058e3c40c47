/* Shared by the executor's entry points (exec_core.c: exec_run; exec_groups.c: exec_time_groups):
 * opening a job's device and backend, and closing it. Not for callers outside sim/exec. */
#ifndef VPSIM_EXEC_INTERNAL_H
#define VPSIM_EXEC_INTERNAL_H

#include "exec.h"

/* Find x->opt's device and backend, refuse what cannot run here (rank 0 says why on stderr), then
 * initialise the device, its buffers for x->plan, and the backend. 0, or 2 on every rank. */
int exec_open(exec_ctx *x);
/* The environment facts into out->env, then release the backend and the device. */
void exec_close(exec_ctx *x, exec_result *out);

#endif

/* comm_env_set (comm.h): what every backend calls to record an environment fact, in a file of its own
 * below the backend list (comm_backends.c names the backends; the backends call this). */
#include "comm.h"

#include <stdarg.h>

void comm_env_set(comm_ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    util_env_vset(c->env, c->n_env, key, fmt, ap);
    va_end(ap);
}

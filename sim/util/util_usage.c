/* util_usage: the one form of a command-line error, and the comma-separated lists option values are
 * (util.h): shared by the commands (sim/cli) and the services that check their options' values. */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int util_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "vpsim %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'vpsim %s --help')\n", cmd);
    va_end(ap);
    return VP_EXIT_USAGE;
}

int util_split_list(const char *cmd, const char *opt, const char *arg, char ***items)
{
    int n = 1;
    for (const char *p = arg; *p; p++)
        n += *p == ',';
    char **v = util_xcalloc((size_t)n, sizeof(char *));
    const char *p = arg;
    for (int i = 0; i < n; i++) {
        size_t len = strcspn(p, ",");
        if (len == 0) {
            util_list_free(v, i);
            util_usage_error(cmd, "%s: item %d of %d is empty; expected items separated by single commas, with none "
                                 "before the first or after the last",
                            opt, i + 1, n);
            return -1;
        }
        v[i] = util_xstrndup(p, len);
        p += len + 1;
    }
    *items = v;
    return n;
}

void util_list_free(char **items, int n)
{
    for (int i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

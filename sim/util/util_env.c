#include "util_env.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void util_env_vset(util_env_item *items, int *n, const char *key, const char *fmt, va_list ap)
{
    int slot = 0;
    while (slot < *n && strcmp(items[slot].key, key) != 0)
        slot++;
    if (slot == *n) {
        if (*n == UTIL_ENV_MAX)
            return;
        (*n)++;
    }
    snprintf(items[slot].key, sizeof(items[slot].key), "%s", key);
    vsnprintf(items[slot].value, sizeof(items[slot].value), fmt, ap);
}

const char *util_env_get(const util_env_item *items, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(items[i].key, key) == 0)
            return items[i].value;
    return NULL;
}

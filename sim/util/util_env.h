/* util_env: environment facts as ordered "key": value pairs (GPU, driver, library versions, NCCL_*
 * variables, topology notes) that devices and backends record for the results' environment block. */
#ifndef VPSIM_UTIL_ENV_H
#define VPSIM_UTIL_ENV_H

#define UTIL_ENV_MAX 48

typedef struct util_env_item {
    char key[48];
    char value[160];
} util_env_item;

/* Record a fact in items[0..*n): a later one with the same key replaces the earlier; past
 * UTIL_ENV_MAX new keys are dropped (the block is informational). */
void util_env_vset(util_env_item *items, int *n, const char *key, const char *fmt, __builtin_va_list ap)
    __attribute__((format(printf, 4, 0)));
/* The value recorded for key, or NULL. */
const char *util_env_get(const util_env_item *items, int n, const char *key);

#endif

/* libFuzzer harness: `--set KEY=VALUE` parsing. Each input line is one --set argument (at most
 * CFG_MAX_SETS), checked as the sweep checks keys and then applied to configs/tiny.yaml as every
 * scenario command applies them (grafted into the scenario, model or system document, then bound). */
#include "../../sim/config/cfg.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char scenario[512];
    if (!scenario[0])
        snprintf(scenario, sizeof(scenario), "%s/configs/tiny.yaml", FUZZ_ROOT);
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *sets[CFG_MAX_SETS];
    int n = 0;
    for (char *line = text, *next; line && n < CFG_MAX_SETS; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        sets[n++] = line;
    }
    cfg_error err;
    for (int i = 0; i < n; i++)
        (void)cfg_check_set_key(sets[i], &err);
    cfg_scenario sc;
    if (cfg_scenario_load(scenario, sets, n, NULL, &sc, &err) == 0)
        cfg_scenario_free(&sc);
    free(text);
    return 0;
}

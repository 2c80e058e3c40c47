/* libFuzzer harness: the YAML scenario loader (cfg_tree, schema binding, the model and system files it
 * names). The input is written where the files of configs/ sit (a temporary configs/ beside links to the
 * checkout's models/ and configs/systems/), so the relative paths of the seeds resolve. */
#include "../../sim/config/cfg.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scenario_path[512];

static void setup(void)
{
    const char *dir = fuzz_tmpdir();
    char p[512], target[512];
    snprintf(p, sizeof(p), "%s/configs", dir);
    if (mkdir(p, 0700) != 0)
        abort();
    snprintf(p, sizeof(p), "%s/models", dir);
    snprintf(target, sizeof(target), "%s/models", FUZZ_ROOT);
    if (symlink(target, p) != 0)
        abort();
    snprintf(p, sizeof(p), "%s/configs/systems", dir);
    snprintf(target, sizeof(target), "%s/configs/systems", FUZZ_ROOT);
    if (symlink(target, p) != 0)
        abort();
    snprintf(scenario_path, sizeof(scenario_path), "%s/configs/input.yaml", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!scenario_path[0])
        setup();
    fuzz_write_file(scenario_path, data, size);
    cfg_scenario sc;
    cfg_error err;
    if (cfg_scenario_load(scenario_path, NULL, 0, NULL, &sc, &err) == 0) {
        (void)cfg_expected_tokens(&sc);
        cfg_scenario_free(&sc);
    }
    return 0;
}

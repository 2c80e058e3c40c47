#include "cli.h"

#include "../config/cfg_schema.h"
#include "../exec/exec.h"
#include "../plan/plan_json.h"
#include "../util/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cli_format_names[] = {"table", "json", "csv", NULL};

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "vpsim %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'vpsim %s --help')\n", cmd);
    va_end(ap);
    return VP_EXIT_USAGE;
}

int cli_check_fault_rank(const char *cmd, const exec_fault *f, const dist_job *d)
{
    if (f->mode == EXEC_FAULT_NONE || f->rank < d->size)
        return 0;
    if (d->rank == 0)
        cli_usage_error(cmd, "--inject-fault: rank %d does not exist in a job of %d rank(s)", f->rank, d->size);
    return VP_EXIT_USAGE;
}

int cli_common_option(cli_common *c, int opt, const char *arg)
{
    switch (opt) {
    case CLI_OPT_SET: {
        if (c->n_sets >= CFG_MAX_SETS) {
            fprintf(stderr, "vpsim: too many --set options (at most %d)\n", CFG_MAX_SETS);
            return -1;
        }
        cfg_error err;
        if (cfg_check_set_key(arg, &err)) {
            fprintf(stderr, "vpsim: %s\n", err.msg);
            return -1;
        }
        c->sets[c->n_sets++] = arg;
        return 1;
    }
    case CLI_OPT_SYSTEM: c->system_path = arg; return 1;
    case CLI_OPT_PLAN: c->plan_path = arg; return 1;
    case CLI_OPT_OUT: c->out_path = arg; return 1;
    case CLI_OPT_FORMAT: {
        int f = cfg_enum_index(cli_format_names, arg);
        if (f < 0) {
            char list[64];
            fprintf(stderr, "vpsim: --format '%s': valid choices: %s\n", arg,
                    cfg_enum_list(cli_format_names, list, sizeof(list)));
            return -1;
        }
        c->format = f;
        return 1;
    }
    default: return 0;
    }
}

int cli_positional(cli_common *c, int argc, char **argv, int optind_now, const char *cmd)
{
    if (optind_now < argc)
        c->scenario_path = argv[optind_now++];
    if (optind_now < argc) {
        cli_usage_error(cmd, "unexpected argument '%s' (one scenario file at most)", argv[optind_now]);
        return -1;
    }
    return 0;
}

char *cli_install_dir(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return util_xstrdup(".");
    exe[n] = '\0';
    /* build/vpsim or build/<variant>/vpsim: walk up until configs/default.yaml appears. */
    char *dir = util_dirname(exe);
    for (int i = 0; i < 4; i++) {
        char *probe = util_xasprintf("%s/configs/default.yaml", dir);
        int found = access(probe, R_OK) == 0;
        free(probe);
        if (found)
            return dir;
        char *up = util_dirname(dir);
        free(dir);
        dir = up;
    }
    free(dir);
    return util_xstrdup(".");
}

int cli_load(const cli_common *c, cfg_scenario *sc, bool *have_scenario, plan *p)
{
    cfg_error err;
    *have_scenario = false;
    char *dflt = NULL;
    const char *path = c->scenario_path;
    if (!path && !c->plan_path) {
        char *dir = cli_install_dir();
        dflt = util_xasprintf("%s/configs/default.yaml", dir);
        free(dir);
        path = dflt;
    }
    if (path) {
        if (cfg_scenario_load(path, c->sets, c->n_sets, c->system_path, sc, &err)) {
            if (!c->quiet)
                fprintf(stderr, "%s\n", err.msg);
            free(dflt);
            return VP_EXIT_USAGE;
        }
        *have_scenario = true;
    } else if (c->n_sets || c->system_path) {
        fprintf(stderr, "vpsim: --set and --system need a scenario file (the plan from --plan is used as saved)\n");
        return VP_EXIT_USAGE;
    }
    free(dflt);
    if (c->plan_path) {
        if (plan_json_load(c->plan_path, p, &err)) {
            if (!c->quiet)
                fprintf(stderr, "%s\n", err.msg);
            if (*have_scenario)
                cfg_scenario_free(sc);
            *have_scenario = false;
            return VP_EXIT_USAGE;
        }
        if (*have_scenario && p->ranks != sc->parallel.tp) {
            fprintf(stderr, "vpsim: plan %s has %d ranks but the scenario sets parallel.tp=%d\n", c->plan_path,
                    p->ranks, sc->parallel.tp);
            plan_free(p);
            cfg_scenario_free(sc);
            *have_scenario = false;
            return VP_EXIT_USAGE;
        }
        return VP_EXIT_OK;
    }
    char why[256];
    if (plan_build(sc, p, why, sizeof(why))) {
        fprintf(stderr, "vpsim: %s\n", why);
        cfg_scenario_free(sc);
        *have_scenario = false;
        return VP_EXIT_USAGE;
    }
    return VP_EXIT_OK;
}

int cli_emit(const cli_common *c, const char *text, size_t len)
{
    if (!c->out_path) {
        fwrite(text, 1, len, stdout);
        return fflush(stdout) == 0 ? VP_EXIT_OK : VP_EXIT_FAIL;
    }
    char err[512];
    if (util_write_file_atomic(c->out_path, text, len, err, sizeof(err))) {
        fprintf(stderr, "vpsim: %s\n", err);
        return VP_EXIT_FAIL;
    }
    return VP_EXIT_OK;
}

int cli_parse_int(const char *cmd, const char *opt, const char *arg, int lo, int hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (!*arg || *end || errno || v < lo || v > hi)
        return cli_usage_error(cmd, "%s '%s': expected an integer in [%d, %d]", opt, arg, lo, hi);
    *out = (int)v;
    return VP_EXIT_OK;
}

int cli_parse_enum(const char *cmd, const char *opt, const char *arg, const char *const *choices, int *out)
{
    int v = cfg_enum_index(choices, arg);
    if (v < 0) {
        char list[256];
        return cli_usage_error(cmd, "%s '%s': valid choices: %s", opt, arg, cfg_enum_list(choices, list, sizeof(list)));
    }
    *out = v;
    return VP_EXIT_OK;
}

int cli_take_common(const char *cmd, cli_common *c, int opt, const char *arg, char **argv)
{
    if (opt == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    int r = cli_common_option(c, opt, arg);
    if (r > 0)
        return VP_EXIT_OK;
    if (r < 0)
        return VP_EXIT_USAGE;
    return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

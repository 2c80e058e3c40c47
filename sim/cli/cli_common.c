#include "cli.h"

#include "../config/cfg_schema.h"
#include "../exec/exec.h"
#include "../plan/plan_json.h"
#include "../util/util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cli_format_names[] = {"table", "json", "csv", NULL};

const char *cli_names_where(const char *const *names, int n, bool (*keep)(int), char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        if (keep(i))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", names[i]);
    return buf;
}

int cli_system_file_only(const cli_common *c, const char *cmd)
{
    if (c->format != CLI_FMT_TABLE)
        return util_usage_error(cmd, "--format: %s writes a YAML system file, no other format", cmd);
    return VP_EXIT_OK;
}

int cli_check_fault_rank(const char *cmd, const exec_fault *f, const dist_job *d)
{
    if (f->mode == EXEC_FAULT_NONE || f->rank < d->size)
        return 0;
    if (d->rank == 0)
        util_usage_error(cmd, "--inject-fault: rank %d does not exist in a job of %d rank(s)", f->rank, d->size);
    return VP_EXIT_USAGE;
}

int cli_device_ready(const char *cmd, const dist_job *d, int device)
{
    char why[512];
    if (exec_device_ready(d, device, why, sizeof(why)) == 0)
        return 0;
    if (d->rank == 0)
        fprintf(stderr, "vpsim %s: %s\n", cmd, why);
    return VP_EXIT_USAGE;
}

int cli_parse_fault(const char *cmd, const char *arg, exec_fault *f)
{
    char why[256];
    if (exec_fault_parse(arg, f, why, sizeof(why)))
        return util_usage_error(cmd, "%s", why);
    return VP_EXIT_OK;
}

int cli_set_set(void *common, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    (void)ps;
    cli_common *c = common;
    if (c->n_sets >= CFG_MAX_SETS) {
        fprintf(stderr, "%s: too many --set options (at most %d)\n", util_prog(), CFG_MAX_SETS);
        return VP_EXIT_USAGE;
    }
    cfg_error err;
    if (cfg_check_set_key(arg, &err)) {
        fprintf(stderr, "%s: %s\n", util_prog(), err.msg);
        return VP_EXIT_USAGE;
    }
    c->sets[c->n_sets++] = arg;
    return VP_EXIT_OK;
}

int cli_positional(cli_common *c, int argc, char **argv, int optind_now, const char *cmd)
{
    if (optind_now < argc)
        c->scenario_path = argv[optind_now++];
    if (optind_now < argc) {
        util_usage_error(cmd, "unexpected argument '%s' (one scenario file at most)", argv[optind_now]);
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

/* --out was checked while the options were parsed, before any input was read; once they are read it
 * must not be one of them (util_input_of), and saying so now is still before any work. */
static int cli_out_not_input(const cli_common *c)
{
    char why[512];
    char *target = c->out_path ? util_out_target(c->out_path, why, sizeof(why)) : NULL;
    if (!c->out_path || target) {
        free(target);
        return VP_EXIT_OK;
    }
    if (!c->quiet) /* one line per job: the other ranks of an MPI job load quietly */
        fprintf(stderr, "%s: --out '%s': %s\n", util_prog(), c->out_path, why);
    return VP_EXIT_USAGE;
}

/* The plan of --plan, checked against the scenario when there is one: 0, or VP_EXIT_USAGE (said). */
static int cli_load_plan(const cli_common *c, const cfg_scenario *sc, plan *p, bool *have_plan)
{
    cfg_error err;
    if (plan_json_load(c->plan_path, p, &err)) {
        if (!c->quiet)
            fprintf(stderr, "%s: %s\n", util_prog(), err.msg);
        return VP_EXIT_USAGE;
    }
    *have_plan = true;
    if (sc && p->ranks != sc->parallel.tp) {
        fprintf(stderr, "%s: plan %s has %d ranks but the scenario sets parallel.tp=%d\n", util_prog(), c->plan_path,
                p->ranks, sc->parallel.tp);
        return VP_EXIT_USAGE;
    }
    char why[320];
    if (sc && plan_json_matches(p, sc, why, sizeof(why))) {
        if (!c->quiet)
            fprintf(stderr, "%s: plan %s is not this scenario's cycle: %s; rebuild the plan from the scenario "
                            "(vpsim plan SCENARIO --format json) or give the scenario the plan's settings\n",
                    util_prog(), c->plan_path, why);
        return VP_EXIT_USAGE;
    }
    return VP_EXIT_OK;
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
        const int bad = cfg_scenario_load(path, c->sets, c->n_sets, c->system_path, sc, &err);
        free(dflt);
        if (bad) {
            if (!c->quiet)
                fprintf(stderr, "%s: %s\n", util_prog(), err.msg);
            return VP_EXIT_USAGE;
        }
        *have_scenario = true;
    } else if (c->n_sets || c->system_path) {
        fprintf(stderr, "%s: --set and --system need a scenario file (the plan from --plan is used as saved)\n",
                util_prog());
        return VP_EXIT_USAGE;
    }
    bool have_plan = false;
    int rc;
    if (c->plan_path) {
        rc = cli_load_plan(c, *have_scenario ? sc : NULL, p, &have_plan);
    } else {
        char why[256];
        rc = plan_build(sc, p, why, sizeof(why)) ? VP_EXIT_USAGE : VP_EXIT_OK;
        have_plan = rc == VP_EXIT_OK;
        if (rc)
            fprintf(stderr, "%s: %s\n", util_prog(), why);
    }
    if (rc == VP_EXIT_OK)
        rc = cli_out_not_input(c);
    if (rc) { /* the one clean-up: nothing loaded is left to the caller */
        if (have_plan)
            plan_free(p);
        if (*have_scenario)
            cfg_scenario_free(sc);
        *have_scenario = false;
    }
    return rc;
}

int cli_check_out(const char *cmd, const char *opt, const char *path)
{
    char why[512];
    char *target = util_out_target(path, why, sizeof(why));
    if (!target)
        return util_usage_error(cmd, "%s '%s': %s", opt, path, why);
    free(target);
    return VP_EXIT_OK;
}

int cli_write_stdout(const char *text, size_t len)
{
    /* main() checks stdout once more at exit; this names the failure while errno still holds it. */
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", util_prog(), strerror(errno));
        return VP_EXIT_FAIL;
    }
    return VP_EXIT_OK;
}

int cli_emit(const cli_common *c, const char *text, size_t len)
{
    if (!c->out_path)
        return cli_write_stdout(text, len);
    char err[1024];
    const int w = util_write_file_atomic(c->out_path, text, len, err, sizeof(err));
    if (w) {
        fprintf(stderr, "%s: --out: %s\n", util_prog(), err);
        return w == -2 ? VP_EXIT_USAGE : VP_EXIT_FAIL;
    }
    return VP_EXIT_OK;
}

int cli_parse_ll(const char *cmd, const char *opt, const char *arg, long long lo, long long hi, long long *out)
{
    long long v;
    if (util_parse_ll(arg, &v) || v < lo || v > hi)
        return util_usage_error(cmd, "%s '%s': expected an integer in [%lld, %lld]", opt, arg, lo, hi);
    *out = v;
    return VP_EXIT_OK;
}

int cli_parse_int(const char *cmd, const char *opt, const char *arg, int lo, int hi, int *out)
{
    long long v = 0;
    if (cli_parse_ll(cmd, opt, arg, lo, hi, &v))
        return VP_EXIT_USAGE;
    *out = (int)v;
    return VP_EXIT_OK;
}

int cli_parse_enum(const char *cmd, const char *opt, const char *arg, const char *const *choices, int *out)
{
    int v = cfg_enum_index(choices, arg);
    if (v < 0) {
        char list[256];
        return util_usage_error(cmd, "%s '%s': valid choices: %s", opt, arg, cfg_enum_list(choices, list, sizeof(list)));
    }
    *out = v;
    return VP_EXIT_OK;
}


/* The command skeleton (cli.h): parse, check, MPI, load, run, write, clean up, written once. */
#include "cli.h"

#include "../exec/exec_watch.h"
#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_ctx_load(cli_ctx *x)
{
    cli_ctx_unload(x);
    const int rc = cli_load(x->c, &x->sc, &x->have_sc, &x->p);
    x->have_plan = rc == VP_EXIT_OK;
    return rc;
}

const char *cli_ctx_scenario_path(cli_ctx *x)
{
    if (!x->c->scenario_path) {
        char *dir = cli_install_dir();
        x->c->scenario_path = x->default_path = util_xasprintf("%s/configs/default.yaml", dir);
        free(dir);
    }
    return x->c->scenario_path;
}

int cli_ctx_load_scenario(cli_ctx *x)
{
    cli_ctx_unload(x);
    cfg_error err;
    if (cfg_scenario_load(cli_ctx_scenario_path(x), x->c->sets, x->c->n_sets, x->c->system_path, &x->sc, &err)) {
        fprintf(stderr, "%s: %s\n", util_prog(), err.msg);
        return VP_EXIT_USAGE;
    }
    x->have_sc = true;
    return VP_EXIT_OK;
}

void cli_ctx_unload(cli_ctx *x)
{
    if (x->have_plan)
        plan_free(&x->p);
    if (x->have_sc)
        cfg_scenario_free(&x->sc);
    x->have_plan = x->have_sc = false;
}

int cli_write_file(const char *cmd, const char *opt, const char *path, const util_buf *b)
{
    char why[1024];
    const int w = util_write_file_atomic(path, b->s ? b->s : "", b->len, why, sizeof(why));
    if (w == 0)
        return VP_EXIT_OK;
    if (opt)
        fprintf(stderr, "vpsim %s: %s '%s': %s\n", cmd, opt, path, why);
    else
        fprintf(stderr, "vpsim %s: %s\n", cmd, why);
    return w == -2 ? VP_EXIT_USAGE : VP_EXIT_FAIL;
}

int cli_command_main(const cli_cmd *cmd, int argc, char **argv)
{
    cli_ctx x;
    memset(&x, 0, sizeof(x));
    x.cmd = cmd;
    x.args = util_xcalloc(1, cmd->args_size);
    x.c = (cli_common *)((char *)x.args + cmd->spec.common_offset);
    if (cmd->init)
        cmd->init(x.args);
    int rc = cli_parse_args(&cmd->spec, x.args, argc, argv, &x.parse);
    x.optind = optind;
    x.argc = argc;
    x.argv = argv;
    if (rc < 0) { /* --help */
        rc = VP_EXIT_OK;
        goto out;
    }
    if (rc || (cmd->check && (rc = cmd->check(&x)) != 0))
        goto out;
    if (cmd->mpi ? cmd->mpi(x.args) : (cmd->flags & CLI_MPI) != 0) {
        dist_init(&x.d, &x.argc, &x.argv);
        x.mpi = true;
        x.c->quiet = x.d.rank != 0;
    }
    if ((cmd->flags & CLI_LOAD) && (rc = cmd->load ? cmd->load(&x) : cli_ctx_load(&x)) != 0)
        goto out;
    if ((cmd->flags & CLI_LOAD_SCENARIO) && (rc = cli_ctx_load_scenario(&x)) != 0)
        goto out;
    rc = cmd->run(&x);
    if (rc == VP_EXIT_OK && x.emit && (!x.mpi || x.d.rank == 0))
        rc = cli_emit(x.c, x.out.s ? x.out.s : "", x.out.len);
out:
    cli_ctx_unload(&x);
    free(x.default_path);
    util_buf_free(&x.out);
    cli_parse_free(&x.parse);
    if (x.mpi) {
        exec_watch_step("MPI_Finalize (waiting for every rank)");
        dist_finalize(&x.d);
        exec_watch_stop();
    }
    free(x.args);
    return rc;
}

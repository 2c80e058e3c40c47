/* vpsim: speculative-decoding verify-pass simulator. Subcommand dispatch. */
#include "cli.h"

#include "../util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#ifndef VPSIM_VERSION
#define VPSIM_VERSION "0.1.0"
#endif
#ifndef VPSIM_GIT /* the Makefile passes `git describe --always --dirty` of the tree it built */
#define VPSIM_GIT "unknown"
#endif

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "replay one decode cycle per rank (mpirun -np N) and report the measured breakdown"},
    {"calibrate", cmd_calibrate, "measured tables for a system file: a run's per-op times, or --measure (a probe)"},
    {"plan", cmd_plan, "print the schedule of one decode cycle (ops and collectives per rank)"},
    {"model", cmd_model, "model cycle time and tok/s per collective backend on a described system"},
    {"compare", cmd_compare, "model named variants of a scenario and rank them by tok/s (fits, gain, engine)"},
    {"sweep", cmd_sweep, "model the cartesian product of --vary settings into a CSV"},
    {"bench-allreduce", cmd_bench_allreduce, "time and check allreduce backends over a size sweep (nccl-tests style)"},
    {"probe", cmd_probe, "measure this box (GPU pairs, host memory, launch, collective curves) into a system file"},
    {"import-trace", cmd_import_trace, "read a server's per-rank PyTorch profiler traces: breakdown, skew, a measured system file"},
    {"config-reference", cmd_config_reference, "print the configuration reference (Markdown)"},
    {"schema", cmd_schema, "print the JSON Schema of a record vpsim writes and reads (plan)"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void main_help(void)
{
    printf("vpsim %s — speculative-decoding verify-pass simulator\n\n"
           "usage: vpsim COMMAND [options]   (vpsim COMMAND --help for each command's options)\n\n"
           "commands:\n",
           VPSIM_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        printf("  %-18s %s\n", commands[i].name, commands[i].summary);
    printf("\nexamples:\n"
           "  vpsim plan configs/default.yaml\n"
           "  vpsim plan configs/default.yaml --set parallel.tp=4 --format json --out plan.json\n"
           "\nexit status: 0 success, 1 runtime failure or wrong results, 2 bad input (config, --set, options)\n");
}

/* Output that did not reach a full disk or a closed pipe must not pass for success: stdout is flushed
 * and closed here, once, for every command. A command that already failed keeps its own status (and
 * has said why, e.g. cli_emit naming the stdout error itself). */
static int main_close_stdout(int rc)
{
    int err = 0;
    if (fflush(stdout) != 0)
        err = errno ? errno : EIO;
    const bool had_error = ferror(stdout) != 0;
    if (fclose(stdout) != 0 && !err)
        err = errno ? errno : EIO;
    if (!err && !had_error)
        return rc;
    if (rc != VP_EXIT_OK)
        return rc;
    if (err)
        fprintf(stderr, "%s: cannot write to standard output: %s\n", util_prog(), strerror(err));
    else
        fprintf(stderr, "%s: cannot write to standard output: a write failed\n", util_prog());
    return VP_EXIT_FAIL;
}

static int main_dispatch(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        main_help();
        return argc < 2 ? VP_EXIT_USAGE : VP_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("vpsim %s (git %s)\n", VPSIM_VERSION, VPSIM_GIT);
        return VP_EXIT_OK;
    }
    static char prog[64];
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            snprintf(prog, sizeof(prog), "vpsim %s", commands[i].name);
            util_set_prog(prog);
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "vpsim: unknown command '%s'; commands:", argv[1]);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(stderr, " %s", commands[i].name);
    fprintf(stderr, "\n");
    return VP_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    /* A reader that goes away (`| head`) must end a command with exit 1 and a message, not with a
     * silent SIGPIPE (status 141): ignored once here, every write to a closed pipe fails with EPIPE,
     * which cli_write_stdout and main_close_stdout already turn into that message. Set before any
     * command runs (and before MPI_Init), so every command and every rank inherits it. */
    signal(SIGPIPE, SIG_IGN);
    return main_close_stdout(main_dispatch(argc, argv));
}

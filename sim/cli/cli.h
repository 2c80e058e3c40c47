/* cli: the vpsim commands (cmd_<name>.c, one cli_cmd each) and what runs them: the option table and its
 * parser (cli_opts.h), the command skeleton (cli_command.c), the options every scenario command shares
 * and their loading (cli_common.c). The services the commands use live in the rooms below. */
#ifndef VPSIM_CLI_H
#define VPSIM_CLI_H

#include "cli_opts.h"

#include "../config/cfg.h"
#include "../dist/dist.h"
#include "../plan/plan.h"
#include "../util/util.h"
#include "../util/util_env.h"

#include <stdbool.h>
#include <stdio.h>

typedef enum { CLI_FMT_TABLE, CLI_FMT_JSON, CLI_FMT_CSV } cli_format;
extern const char *const cli_format_names[];

/* Options every scenario-taking command accepts. */
typedef struct cli_common {
    const char *scenario_path; /* positional; default: configs/default.yaml of the install */
    const char *sets[CFG_MAX_SETS];
    int n_sets;
    const char *system_path; /* --system */
    const char *plan_path;   /* --plan */
    const char *out_path;    /* --out */
    int format;              /* cli_format */
    bool quiet;              /* print no load errors (MPI ranks other than 0) */
} cli_common;

/* The shared options as entries of a command's option table (cli_opts.h): T is the command's options
 * struct, whose cli_common is its member `c`; h is the command's own help line for the option. */
#define CLI_OPT_SET(T, h)                                                                                               \
    {.name = "set", .kind = CLI_CUSTOM, .offset = offsetof(T, c), .set = cli_set_set, .meta = "KEY=VALUE",           \
     .repeat = true, .help = (h)}
#define CLI_OPT_SYSTEM(T, h)                                                                                            \
    {.name = "system", .kind = CLI_STRING, .offset = offsetof(T, c.system_path), .meta = "FILE", .help = (h)}
#define CLI_OPT_PLAN(T, h)                                                                                              \
    {.name = "plan", .kind = CLI_STRING, .offset = offsetof(T, c.plan_path), .meta = "FILE", .help = (h)}
#define CLI_OPT_OUT(T, h) {.name = "out", .kind = CLI_OUT, .offset = offsetof(T, c.out_path), .meta = "FILE", .help = (h)}
#define CLI_OPT_FORMAT(T, h)                                                                                            \
    {.name = "format", .kind = CLI_ENUM, .offset = offsetof(T, c.format), .choices = cli_format_names, .meta = "FMT",  \
     .dflt = "table", .help = (h)}
/* An option the command takes only to refuse it, saying why (hidden from the help). */
#define CLI_OPT_REFUSED(nm, why) {.name = (nm), .kind = CLI_REFUSE, .refuse = (why), .meta = "X", .hidden = true}
/* The help lines most commands give the shared options. */
#define CLI_HELP_SET                                                                                                    \
    "override a field; model.*, draft.*, system.* reach into the files the scenario names, e.g. --set "             \
    "speculative.steps=3"
#define CLI_HELP_SYSTEM "use this system file instead of the scenario's"
#define CLI_HELP_OUT                                                                                                    \
    "write there (atomically) instead of stdout: a regular file or a new name in an existing directory; a "         \
    "symbolic link is followed and the file it leads to replaced; anything else is refused before any work"
/* --set KEY=VALUE into a cli_common (checked with cfg_check_set_key; at most CFG_MAX_SETS). */
int cli_set_set(void *common, const char *arg, const cli_opt *o, cli_parse *ps);

/* Take the positional scenario argument (at most one). Returns -1 after printing on extra arguments. */
int cli_positional(cli_common *c, int argc, char **argv, int optind_now, const char *cmd);

/* Load the scenario (with --set / --system) and, unless --plan is given, build its plan; or load
 * the plan from --plan. Prints errors; returns VP_EXIT_OK or VP_EXIT_USAGE. `sc` may be NULL when
 * only the plan is needed and --plan is given. */
int cli_load(const cli_common *c, cfg_scenario *sc, bool *have_scenario, plan *p);

/* Write `text` to --out atomically, or to stdout. Returns an exit status (1 with a message when the
 * file or stdout cannot be written). */
int cli_emit(const cli_common *c, const char *text, size_t len);
/* `text` to stdout, flushed: 0, or 1 after naming the error. */
int cli_write_stdout(const char *text, size_t len);
/* An output option's PATH (`opt`: "--out", "--trace") can be written (util_out_target): 0, or
 * VP_EXIT_USAGE after saying why. Called while the options are parsed, so nothing is done first. */
int cli_check_out(const char *cmd, const char *opt, const char *path);

/* names[i] for the i < n that `keep` keeps, as "a, b, c" in buf (the choices a help line lists). */
const char *cli_names_where(const char *const *names, int n, bool (*keep)(int), char *buf, size_t len);
/* A command that writes a YAML system file (calibrate, probe) takes --format only at its default: 0, or
 * VP_EXIT_USAGE after "--format: CMD writes a YAML system file, no other format". */
int cli_system_file_only(const cli_common *c, const char *cmd);

/* The repo folder this binary belongs to (for the default scenario); caller frees. */
char *cli_install_dir(void);

/* Option values for command `cmd`: a decimal integer in [lo, hi] (util_parse_ll: no blanks, '+', hex,
 * exponent or trailing text), or one of `choices`. 0, or VP_EXIT_USAGE
 * after printing what was expected (the valid choices for an enum). */
int cli_parse_int(const char *cmd, const char *opt, const char *arg, int lo, int hi, int *out);
int cli_parse_ll(const char *cmd, const char *opt, const char *arg, long long lo, long long hi, long long *out);
int cli_parse_enum(const char *cmd, const char *opt, const char *arg, const char *const *choices, int *out);

/* --backend LIST of the model-mode commands (cli_backends.c): the backends, in the order given. */
typedef struct cli_backends {
    cfg_backend v[CFG_BACKEND_COUNT];
    int n;
} cli_backends;
/* Every backend model mode takes (all but the replay-only 'model'): the default of model and sweep. */
void cli_backends_all(cli_backends *b);
/* The setter of --backend LIST (cli_opts.h): each item a backend's name, the list replacing any earlier. */
int cli_set_backends(void *dest, const char *arg, const cli_opt *o, cli_parse *ps);
/* The backends model mode takes, comma-separated (for --help). */
const char *cli_model_backend_names(void);

struct exec_fault;
/* --inject-fault MODE:RANK:CALL[:SECONDS] (exec_fault_parse, every number a plain decimal): 0, or
 * VP_EXIT_USAGE after saying why. */
int cli_parse_fault(const char *cmd, const char *arg, struct exec_fault *f);
/* --inject-fault names a rank of this job: 0, else VP_EXIT_USAGE (said by rank 0). Call on every rank. */
struct dist_job;
int cli_check_fault_rank(const char *cmd, const struct exec_fault *f, const struct dist_job *d);

/* The job's device can run on this machine (exec_device_ready): 0, or VP_EXIT_USAGE on every rank after
 * rank 0 said why, e.g. "vpsim run: no usable CUDA device here (...): use --device cpu". Collective. */
int cli_device_ready(const char *cmd, const struct dist_job *d, int device);

/* --p2p `p2p` has something to apply to (cli_p2p.c): direct always; sysmem needs the cuda device and a
 * custom backend (comm_backend_is_custom) among `backends` (n of them) or the policy's rules. 0 (and,
 * when `say`, a note naming the requested backends it does not apply to), or VP_EXIT_USAGE (said when
 * `say`). */
struct cfg_policy;
int cli_p2p_check(const char *cmd, int p2p, int device, const int *backends, int n, const struct cfg_policy *policy,
                  bool say);

/* ---------------- the command skeleton (cli_command.c) ----------------
 * Every command is the same six steps, written once in cli_command_main: parse the command line (the
 * command's option table), check what the table cannot say, start the MPI job, load the scenario and
 * its plan, run, write the output (atomically to --out, or to stdout; rank 0), clean up (plan, scenario,
 * output, MPI). A command fills in a cli_cmd; what it allocates beyond the context it frees itself. */
enum {
    CLI_MPI = 1 << 0,  /* an MPI job: dist_init after the checks, dist_finalize at the end */
    CLI_LOAD = 1 << 1, /* load the scenario and its plan (cli_load) before run */
    CLI_LOAD_SCENARIO = 1 << 2, /* load the scenario only (the default one when none is named) before run */
};

typedef struct cli_ctx cli_ctx;
typedef struct cli_cmd {
    cli_spec spec;                 /* the option table and the help */
    size_t args_size;              /* the command's options struct, zeroed, then `init`, then the table */
    unsigned flags;                /* CLI_MPI, CLI_LOAD, CLI_LOAD_SCENARIO */
    void (*init)(void *args);      /* defaults that no option's `dflt` gives (sentinels: "the scenario's") */
    int (*check)(cli_ctx *x);      /* after the parse, before MPI: what one option says about another */
    bool (*mpi)(const void *args); /* replaces CLI_MPI when set: whether this command line is an MPI job */
    int (*load)(cli_ctx *x);       /* replaces cli_ctx_load under CLI_LOAD */
    int (*run)(cli_ctx *x);        /* the work; leaves the text to write in x->out with x->emit set */
} cli_cmd;

struct cli_ctx {
    const cli_cmd *cmd;
    void *args;    /* the command's options */
    cli_common *c; /* inside args (spec.common_offset) */
    int argc;      /* the command's arguments (after MPI_Init for an MPI job) */
    char **argv;
    int optind; /* the first argument no option took */
    cli_parse parse;
    dist_job d;
    bool mpi; /* d is an MPI job this skeleton started */
    cfg_scenario sc;
    bool have_sc;
    plan p;
    bool have_plan;
    util_buf out; /* written by the skeleton when run returns 0 with emit set (rank 0) */
    bool emit;
    char *default_path; /* configs/default.yaml of the install, when c->scenario_path was filled with it */
};

/* Run `cmd` on argv (argv[0] is the command's name): the skeleton above. Returns the exit status. */
int cli_command_main(const cli_cmd *cmd, int argc, char **argv);
/* Load the scenario and plan of x->c into x (cli_load), freeing what an earlier load left: the
 * skeleton frees what this loads. VP_EXIT_OK or VP_EXIT_USAGE (said). */
int cli_ctx_load(cli_ctx *x);
/* The scenario x->c names, filling in configs/default.yaml of the install when it names none (for the
 * commands that load a scenario per variant or point, by path). */
const char *cli_ctx_scenario_path(cli_ctx *x);
/* Load the scenario alone (cli_ctx_scenario_path, --set, --system) into x->sc: VP_EXIT_OK, or
 * VP_EXIT_USAGE after "vpsim CMD: file:line:col: why". */
int cli_ctx_load_scenario(cli_ctx *x);
/* Free x's scenario and plan now (the skeleton's clean-up does the same). */
void cli_ctx_unload(cli_ctx *x);
/* A file beside the main output (--trace, --breakdown): `b` written atomically to `path`; 0, or 1 (2
 * for a path that cannot be a file) after "vpsim CMD: OPT 'PATH': why" (OPT NULL: "vpsim CMD: why"). */
int cli_write_file(const char *cmd, const char *opt, const char *path, const util_buf *b);

/* Subcommands. */
int cmd_plan(int argc, char **argv);
int cmd_config_reference(int argc, char **argv);
int cmd_schema(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
/* `vpsim calibrate --measure` (cmd_calibrate_measure.c): the compute probe; cmd_calibrate hands over. */
int cmd_calibrate_measure(int argc, char **argv);
int cmd_bench_allreduce(int argc, char **argv);
/* `vpsim probe` (cmd_probe.c): measure this box's links, launch costs and collective curves into a system file. */
int cmd_probe(int argc, char **argv);
/* `vpsim import-trace` (cmd_import_trace.c): a server's per-rank PyTorch traces as measured input. */
int cmd_import_trace(int argc, char **argv);

#endif

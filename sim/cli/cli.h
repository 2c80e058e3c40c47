/* cli: subcommands and the option handling they share. */
#ifndef VPSIM_CLI_H
#define VPSIM_CLI_H

#include "../config/cfg.h"
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

/* Handle an option shared by scenario commands; returns 1 if consumed, 0 if not ours, -1 on a bad value
 * (message printed). `opt` is the getopt_long return value. */
enum {
    CLI_OPT_SET = 1000,
    CLI_OPT_SYSTEM,
    CLI_OPT_PLAN,
    CLI_OPT_OUT,
    CLI_OPT_FORMAT,
    CLI_OPT_FIRST_PRIVATE = 1100,
};
int cli_common_option(cli_common *c, int opt, const char *arg);
/* The end of every command's getopt loop: take a shared option (checking an --out target), or report
 * what is wrong with `opt`: a missing value (the optstring starts with ':'), an unknown option or a
 * value given to a flag, naming the argument as typed (a short option inside a cluster such as -zq is
 * named with its cluster). Returns 0 when the option was taken, else VP_EXIT_USAGE. */
int cli_take_common(const char *cmd, cli_common *c, int opt, const char *arg, char **argv);
/* Common long options, to splice into a command's getopt table (terminated by a zero entry). */
#define CLI_COMMON_LONGOPTS                                                                                             \
    {"set", required_argument, NULL, CLI_OPT_SET}, {"system", required_argument, NULL, CLI_OPT_SYSTEM},                 \
        {"plan", required_argument, NULL, CLI_OPT_PLAN}, {"out", required_argument, NULL, CLI_OPT_OUT},                 \
        {"format", required_argument, NULL, CLI_OPT_FORMAT}, {"help", no_argument, NULL, 'h'}

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

/* The repo folder this binary belongs to (for the default scenario); caller frees. */
char *cli_install_dir(void);

/* Option values for command `cmd`: a decimal integer in [lo, hi] (util_parse_ll: no blanks, '+', hex,
 * exponent or trailing text), or one of `choices`. 0, or VP_EXIT_USAGE
 * after printing what was expected (the valid choices for an enum). */
int cli_parse_int(const char *cmd, const char *opt, const char *arg, int lo, int hi, int *out);
int cli_parse_ll(const char *cmd, const char *opt, const char *arg, long long lo, long long hi, long long *out);
int cli_parse_enum(const char *cmd, const char *opt, const char *arg, const char *const *choices, int *out);
/* The items of a comma-separated option value, any length and count: `*items` holds n fresh strings
 * (free with cli_list_free). Returns n, or -1 after naming an empty item (",a", "a,,b", "a,", ""). */
int cli_split_list(const char *cmd, const char *opt, const char *arg, char ***items);
void cli_list_free(char **items, int n);

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

/* --p2p direct|sysmem (cli_p2p.c; comm.h's comm_p2p). */
/* A custom backend (oneshot, twoshot, push: the ones --p2p applies to). */
bool cli_backend_is_custom(int backend);
/* --p2p `p2p` has something to apply to: direct always; sysmem needs the cuda device and a custom
 * backend among `backends` (n of them) or the policy's rules. 0 (and, when `say`, a note naming the
 * requested backends it does not apply to), or VP_EXIT_USAGE (said when `say`). */
struct cfg_policy;
int cli_p2p_check(const char *cmd, int p2p, int device, const int *backends, int n, const struct cfg_policy *policy,
                  bool say);
/* The mode a custom backend reported in its environment ("custom_p2p"), or -1 when none ran. */
int cli_p2p_of_env(const util_env_item *env, int n_env);
/* The replay's mode (-1: no custom backend ran) is not the model system's topology.p2p (cfg_p2p). */
bool cli_p2p_model_differs(int p2p, int system_p2p);
/* "WHO ran with --p2p X but the model's system has topology.p2p=Y; add --set ... to compare like with like" */
void cli_p2p_model_hint(char *buf, size_t len, const char *who, int p2p, int system_p2p);

/* Print "vpsim CMD: message" plus a hint to use --help, return VP_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* run_report.c: what `vpsim run` reports. */
struct exec_result;
struct results_cycle;
struct report_results_meta;
struct util_json;
int cli_model_collective_us(const cli_common *c, const cfg_scenario *sc, const plan *p, const char *target,
                            int model_backend, double **out);
void cli_fill_measured(struct results_cycle *r, const plan *p, const struct exec_result *res, const char *backend);
struct report_results_meta cli_results_meta(const cli_common *c, const cfg_scenario *sc, const plan *p,
                                            const char *mode, bool graph);
void cli_run_summary(util_buf *out, const plan *p, const struct exec_result *res, const struct results_cycle *r);
/* --check's verdict in one line: passed (with the collectives checked), failed, or not run. */
void cli_run_check_verdict(util_buf *out, const plan *p, const struct exec_result *res);
/* Model (compute only, on the scenario's system) against the measured per-op times, per op class. */
typedef struct cli_compare {
    bool have;
    char system[64];
    char note[320];
    double measured_ms[PLAN_CLASS_COUNT + 1], modelled_ms[PLAN_CLASS_COUNT + 1]; /* verify; [COUNT] = total */
    double measured_cycle_ms[PLAN_CLASS_COUNT + 1], modelled_cycle_ms[PLAN_CLASS_COUNT + 1];
    /* The whole cycle with the run's backend, as the replay runs it (graph or eager; the model's
     * host.cycle_overhead_us, which a replay has no serving stack to pay, left out). */
    bool have_cycle;
    char backend[64];
    bool graph;
    double cycle_measured_ms, cycle_modelled_ms, host_excluded_ms;
    double allreduce_measured_us, allreduce_modelled_us; /* mean per verify allreduce */
    char allreduce_method[96];
    /* What both sides were taken under (the model uses the run's plan, so TP, batch, context and launch
     * mode agree by construction; the device may not), and the caveats when they do not agree. */
    int tp, batch, context;
    bool model_graph;
    char run_gpu[160];
    char model_gpu[96];
    int n_warnings;
    char warnings[2][320];
} cli_compare;
/* `backend`: the run's cfg_backend, or -1 (a per-size policy: no whole-cycle comparison). */
int cli_run_compare(cli_compare *cmp, const cfg_scenario *sc, const plan *p, const struct exec_result *res,
                    int backend, const struct results_cycle *measured);
void cli_run_compare_table(util_buf *out, const cli_compare *cmp);
void cli_run_json(struct util_json *j, const struct report_results_meta *m, const struct results_cycle *r,
                  const plan *p, const struct exec_result *res, const cli_compare *cmp, int argc, char **argv);

#endif

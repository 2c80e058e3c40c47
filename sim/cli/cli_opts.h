/* cli_opts: one declarative option table per command. The table drives the parser (getopt_long built
 * from it, cli_opts.c), the help text (generated from it) and the defaults, so an option is written
 * once: its spelling, its value's kind and range, where the value goes, its default and its help line. */
#ifndef VPSIM_CLI_OPTS_H
#define VPSIM_CLI_OPTS_H

#include "../util/util.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum cli_kind {
    CLI_FLAG,   /* no value: the bool at `offset` becomes true */
    CLI_SETINT, /* no value: the int at `offset` becomes `ival` (--eager / --graph share one int) */
    CLI_INT,    /* int in [lo, hi], a plain decimal (util_parse_ll) */
    CLI_LL,     /* long long in [lo, hi], a plain decimal */
    CLI_DOUBLE, /* finite double in [dlo, dhi] (cfg_parse_double: no blanks or trailing text) */
    CLI_BYTES,  /* long long >= lo, in bytes with an optional K/M/G suffix (cfg_parse_bytes) */
    CLI_STRING, /* const char * (argv's own storage) */
    CLI_OUT,    /* const char *, an output path checked (util_out_target) before any work */
    CLI_ENUM,   /* int: the index of the value in `choices` */
    CLI_REFUSE, /* taken by the parser and refused with `refuse` (an option of a sibling command) */
    CLI_CUSTOM, /* `set` takes the value (lists, repeatable options, values with their own grammar) */
} cli_kind;

struct cli_parse;
struct cli_opt;
/* A CLI_CUSTOM setter: `dest` is the command's options at `offset`, `arg` the value (NULL for a flag or
 * a missing optional value). 0, or VP_EXIT_USAGE after saying why (util_usage_error). */
typedef int (*cli_setter)(void *dest, const char *arg, const struct cli_opt *o, struct cli_parse *ps);

typedef struct cli_opt {
    const char *name; /* long name without "--" */
    int short_name;   /* 0: none */
    cli_kind kind;
    size_t offset;    /* where the value goes in the command's options struct */
    long long lo, hi; /* CLI_INT, CLI_LL; CLI_BYTES: lo */
    double dlo, dhi;  /* CLI_DOUBLE */
    int ival;         /* CLI_SETINT */
    const char *const *choices;     /* CLI_ENUM: NULL-terminated */
    const char *const *choice_help; /* CLI_ENUM: a help line per choice (help lists them), or NULL */
    cli_setter set;                 /* CLI_CUSTOM: takes a value when `meta` names one */
    const char *refuse;             /* CLI_REFUSE: the whole message */
    const char *dflt;               /* applied before the command line, through the kind's own parse, and
                                       shown in the help as "(default: ...)" */
    const char *dflt_text;          /* the default in words where no value stands for it ("the scenario's
                                       run.iters"; its sentinel is set by the command's init) */
    const char *meta;               /* the value's name in the help ("N", "FILE"); ENUM: its choices */
    const char *help;               /* wrapped by the help; "\n" breaks a line */
    const char *(*help_tail)(void); /* appended to `help` (lists built from cfg_lists.h) */
    const char *label;              /* how messages name it; default "-s/--name" or "--name" */
    bool optional;                  /* the long form's value is optional (--check[=0|1]); the short one's not */
    bool repeat;                    /* may be given again (its setter gathers the values) */
    bool hidden;                    /* not in the help (refusals, nccl-tests' alternative spellings) */
    const char *required;           /* when set: the message if the option is missing */
    unsigned group;                 /* bits a command tests with cli_first_given */
} cli_opt;

/* What a parse knows while it runs (for setters) and leaves behind (for the command's checks). */
typedef struct cli_parse {
    const char *cmd; /* "plan": messages read "vpsim plan: ..." */
    int argc;
    char **argv;
    void *args;                   /* the command's options */
    const cli_opt *opts;
    int n_opts;
    int *seen;                    /* per option: 0, or 1 + the order of its first appearance */
    int n_seen;
} cli_parse;

/* How many positional arguments a command takes. */
typedef enum cli_pos {
    CLI_POS_NONE,     /* none: an extra argument is an error */
    CLI_POS_SCENARIO, /* at most one, into cli_common.scenario_path */
    CLI_POS_ANY,      /* the command's check reads argv[optind..] itself */
} cli_pos;

/* What a command's help and parse are made of: one of these per command (the skeleton's cli_cmd holds
 * one). */
typedef struct cli_spec {
    const char *name;        /* as messages name the command: "calibrate" */
    const char *synopsis;    /* the command as the usage line writes it: "mpirun -np N vpsim run" */
    const char *pos_usage;   /* the positional part of the usage: "[SCENARIO]", "TRACE..." */
    const char *usage_more;  /* further usage lines, printed as they are */
    cli_pos pos;
    size_t common_offset;    /* where the cli_common sits in the options struct (CLI_POS_SCENARIO) */
    const char *about;       /* the description, as printed */
    void (*about_fn)(util_buf *out); /* or built at run time (figures from the code) */
    const char *options_title;       /* default "options:" */
    const cli_opt *opts;
    int n_opts;
    const char *after;    /* a paragraph after the options (environment, duration, bad input) */
    const char *examples; /* the examples, each line as printed without its indentation */
} cli_spec;

#define CLI_N(a) ((int)(sizeof(a) / sizeof((a)[0])))
/* A numeric macro as the string a default is written in: .dflt = CLI_STR(EXEC_MAX_HOST_GIB_DEFAULT). */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

/* Apply the defaults, then parse argv into `args` (positional arguments included, as spec->pos says),
 * then check the required options. 0; -1 after printing the help (--help); or VP_EXIT_USAGE after
 * saying what is wrong. On return ps->seen (free with cli_parse_free) says which options were given
 * and optind is the first argument no option took. */
int cli_parse_args(const cli_spec *spec, void *args, int argc, char **argv, cli_parse *ps);
void cli_parse_free(cli_parse *ps);
/* The option of `group` given first on the command line, or NULL when none was. */
const cli_opt *cli_first_given(const cli_parse *ps, unsigned group);
/* Whether the option `name` was given. */
bool cli_given(const cli_parse *ps, const char *name);
/* The name messages give an option: its label, else "-s/--name" or "--name". */
const char *cli_opt_label(const cli_opt *o, char *buf, size_t len);

/* The help text of a command, generated from its spec. */
void cli_help_text(const cli_spec *spec, util_buf *out);

#endif

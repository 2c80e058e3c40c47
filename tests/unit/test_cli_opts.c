/* The one option parser and its generated help (sim/cli/cli_opts.c): a table of every kind, parsed and
 * refused, the defaults applied through the same parse, the help made from the same table; and every
 * command's --help, whose tables' defaults must parse (a bad one aborts). */
#include "../../sim/cli/cli.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

typedef struct t_args {
    cli_common c;
    bool flag;
    int mode, n, pick;
    long long big, bytes;
    double x;
    const char *name, *out;
    int n_custom;
} t_args;

static const char *const t_choices[] = {"red", "green", "blue", NULL};
static const char *const t_choice_help[] = {"the first", "the second", "the third", NULL};

static int t_count(void *dest, const char *arg, const cli_opt *o, cli_parse *ps)
{
    (void)o;
    (void)ps;
    (void)arg;
    ++*(int *)dest;
    return VP_EXIT_OK;
}

static const cli_opt t_opts[] = {
    {.name = "flag", .kind = CLI_FLAG, .offset = offsetof(t_args, flag), .help = "a flag"},
    {.name = "eager", .kind = CLI_SETINT, .offset = offsetof(t_args, mode), .ival = 7, .help = "mode 7"},
    {.name = "num", .short_name = 'n', .kind = CLI_INT, .offset = offsetof(t_args, n), .lo = 1, .hi = 9, .dflt = "3",
     .meta = "N", .help = "a small number", .group = 1},
    {.name = "big", .kind = CLI_LL, .offset = offsetof(t_args, big), .lo = 0, .hi = 1LL << 40, .meta = "B",
     .help = "a large number", .group = 1},
    {.name = "bytes", .kind = CLI_BYTES, .offset = offsetof(t_args, bytes), .lo = 1, .dflt = "8M", .meta = "S",
     .help = "a size"},
    {.name = "x", .kind = CLI_DOUBLE, .offset = offsetof(t_args, x), .dlo = 0.0, .dhi = 1.0, .meta = "X",
     .help = "a fraction"},
    {.name = "name", .kind = CLI_STRING, .offset = offsetof(t_args, name), .meta = "S", .help = "a name",
     .required = "--name S is required"},
    {.name = "pick", .kind = CLI_ENUM, .offset = offsetof(t_args, pick), .choices = t_choices,
     .choice_help = t_choice_help, .dflt = "green", .meta = "C", .help = "a colour"},
    {.name = "count", .kind = CLI_CUSTOM, .offset = offsetof(t_args, n_custom), .set = t_count, .meta = "V",
     .repeat = true, .help = "counted"},
    {.name = "old", .kind = CLI_REFUSE, .refuse = "--old: gone, use --name", .meta = "X", .hidden = true},
    CLI_OPT_SET(t_args, CLI_HELP_SET),
};

static const cli_spec t_spec = {.name = "t", .synopsis = "vpsim t", .pos_usage = "[SCENARIO]",
                                .pos = CLI_POS_SCENARIO, .common_offset = offsetof(t_args, c), .opts = t_opts,
                                .n_opts = CLI_N(t_opts), .about = "A test command.\n",
                                .examples = "vpsim t --name a\n"};

/* Parse a command line given as words (argv[0] "t"); returns the status, args and parse filled. */
static int t_parse(t_args *a, cli_parse *ps, int n, const char **words)
{
    char *argv[32];
    argv[0] = (char *)"t";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)words[i];
    argv[n + 1] = NULL;
    memset(a, 0, sizeof(*a));
    return cli_parse_args(&t_spec, a, n + 1, argv, ps);
}

Test(cli_opts, every_kind_parses_into_its_field_and_defaults_apply)
{
    t_args a;
    cli_parse ps;
    const char *w[] = {"--name", "bob", "--flag", "--eager", "-n5", "--big", "1099511627776", "--x", "0.25",
                       "--pick", "blue", "--count", "a", "--count", "b", "--set", "workload.batch=2", "sc.yaml"};
    cr_assert_eq(t_parse(&a, &ps, CLI_N(w), w), 0);
    cr_assert(a.flag);
    cr_assert_eq(a.mode, 7);
    cr_assert_eq(a.n, 5);
    cr_assert_eq(a.big, 1LL << 40);
    cr_assert_eq(a.bytes, 8LL << 20, "the default 8M applies: %lld", a.bytes);
    cr_assert_float_eq(a.x, 0.25, 1e-12);
    cr_assert_str_eq(a.name, "bob");
    cr_assert_eq(a.pick, 2);
    cr_assert_eq(a.n_custom, 2);
    cr_assert_eq(a.c.n_sets, 1);
    cr_assert_str_eq(a.c.scenario_path, "sc.yaml");
    cr_assert(cli_given(&ps, "num") && !cli_given(&ps, "bytes"));
    /* --num came before --big: the first of group 1 given. */
    cr_assert_str_eq(cli_first_given(&ps, 1)->name, "num");
    cli_parse_free(&ps);

    const char *w2[] = {"--name", "x"};
    cr_assert_eq(t_parse(&a, &ps, CLI_N(w2), w2), 0);
    cr_assert_eq(a.n, 3, "default");
    cr_assert_eq(a.pick, 1, "default green");
    cr_assert_null(cli_first_given(&ps, 1));
    cli_parse_free(&ps);
}

Test(cli_opts, bad_values_are_refused_naming_the_option, .init = cr_redirect_stderr)
{
    static const struct {
        const char *a, *b;
    } bad[] = {{"-n", "10"},         {"--num", "0x3"},  {"--big", "-1"},   {"--bytes", "0"}, {"--bytes", "4Q"},
               {"--x", "1.5"},       {"--x", "nan"},    {"--pick", "pink"}, {"--old", "1"},   {"--set", "nokey"},
               {"--set", "a.b=1"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        t_args a;
        cli_parse ps;
        const char *w[] = {"--name", "x", bad[i].a, bad[i].b};
        cr_assert_eq(t_parse(&a, &ps, 4, w), VP_EXIT_USAGE, "%s %s was taken", bad[i].a, bad[i].b);
        cli_parse_free(&ps);
    }
    t_args a;
    cli_parse ps;
    const char *none[] = {"--flag"};
    cr_assert_eq(t_parse(&a, &ps, 1, none), VP_EXIT_USAGE, "--name is required");
    cli_parse_free(&ps);
    const char *two[] = {"--name", "x", "a.yaml", "b.yaml"};
    cr_assert_eq(t_parse(&a, &ps, 4, two), VP_EXIT_USAGE, "one scenario at most");
    cli_parse_free(&ps);
}

Test(cli_opts, the_help_comes_from_the_table)
{
    util_buf b = {0};
    cli_help_text(&t_spec, &b);
    const char *want[] = {"usage: vpsim t [SCENARIO]", "--name S", "[--flag]", "[--count V]...", "-n, --num N",
                          "(N in [1, 9]; default: 3)", "(default: 8M)", "a colour:",
                          "blue       the third", "green      the second (default)", "counted (repeatable)",
                          "A test command.", "examples:\n  vpsim t --name a\n", "-h, --help"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_assert_not_null(strstr(b.s, want[i]), "the help lacks '%s':\n%s", want[i], b.s);
    cr_assert_null(strstr(b.s, "--old"), "a hidden option is in the help:\n%s", b.s);
    for (const char *p = b.s; *p;) {
        const size_t len = strcspn(p, "\n");
        cr_assert_leq(len, 108, "a help line of %zu characters:\n%.*s", len, (int)len, p);
        p += len + (p[len] == '\n');
    }
    util_buf_free(&b);
}

/* Every command's table: its defaults parse (else the parse aborts) and its help is generated. */
Test(cli_opts, every_command_has_a_generated_help)
{
    const char *cmds[] = {"run", "calibrate", "calibrate --measure", "plan", "model", "compare", "sweep",
                          "bench-allreduce", "probe", "import-trace", "config-reference", "schema"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        th_result r = th_run("%s --help", cmds[i]);
        cr_assert_eq(r.status, 0, "%s --help: exit %d: %s", cmds[i], r.status, r.err);
        cr_assert_not_null(strstr(r.out, "usage: "), "%s", r.out);
        cr_assert_not_null(strstr(r.out, "options:") ? r.out : strstr(r.out, "options ("), "%s", r.out);
        cr_assert_not_null(strstr(r.out, "-h, --help"), "%s", r.out);
        th_free(&r);
    }
}

/* cli_opts: the one option parser and the help generator (cli_opts.h). */
#include "cli_opts.h"
#include "cli.h"

#include "../config/cfg_policy.h"
#include "../config/cfg_schema.h"
#include "../util/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long's value for an option without a short name: past every character. */
#define CLI_LONG_BASE 256

const char *cli_opt_label(const cli_opt *o, char *buf, size_t len)
{
    if (o->label)
        return o->label;
    if (o->short_name)
        snprintf(buf, len, "-%c/--%s", o->short_name, o->name);
    else
        snprintf(buf, len, "--%s", o->name);
    return buf;
}

static bool cli_is_short_cluster(const char *s)
{
    return s && s[0] == '-' && s[1] && s[1] != '-';
}

/* getopt stopped at a bad option; say which, naming the argument the user typed. getopt moves optind
 * past an element as it starts on the element's last character, so a short option inside a cluster
 * (-zq at 'z') is in argv[optind] and every other bad option in argv[optind - 1]. optopt is the short
 * option's character, the long option's value, or 0 for an unknown long option. */
static int cli_bad_option(const char *cmd, int opt, char **argv)
{
    const char *prev = argv[optind - 1], *cur = argv[optind];
    const char *hit = optopt > 0 && optopt < 256 && cli_is_short_cluster(cur) ? strchr(cur + 1, optopt) : NULL;
    const bool prev_ends_in_it = cli_is_short_cluster(prev) && prev[strlen(prev) - 1] == optopt;
    const char *tok = hit && hit[1] && !prev_ends_in_it ? cur : prev;
    if (tok[0] == '-' && tok[1] == '-') {
        const int name_len = (int)strcspn(tok, "=");
        if (opt == ':')
            return util_usage_error(cmd, "option '%.*s' needs a value", name_len, tok);
        if (optopt != 0 && tok[name_len] == '=')
            return util_usage_error(cmd, "option '%.*s' takes no value (got '%s')", name_len, tok, tok);
        return util_usage_error(cmd, "unknown option '%.*s'", name_len, tok);
    }
    char in[64] = "";
    if (strlen(tok) > 2)
        snprintf(in, sizeof(in), " (in '%.40s%s')", tok, strlen(tok) > 40 ? "..." : "");
    if (opt == ':')
        return util_usage_error(cmd, "option '-%c' needs a value%s", optopt, in);
    return util_usage_error(cmd, "unknown option '-%c'%s", optopt, in);
}

/* Flags take none; a setter or a refusal takes one when the table names it (meta). */
static bool takes_value(const cli_opt *o)
{
    if (o->kind == CLI_FLAG || o->kind == CLI_SETINT)
        return false;
    if (o->kind == CLI_CUSTOM || o->kind == CLI_REFUSE)
        return o->meta != NULL || o->optional;
    return true;
}

/* One value of option `o` into args: 0, or VP_EXIT_USAGE after saying why. */
static int take(const cli_opt *o, const char *arg, cli_parse *ps)
{
    void *dest = (char *)ps->args + o->offset;
    char lb[64];
    const char *label = cli_opt_label(o, lb, sizeof(lb));
    switch (o->kind) {
    case CLI_FLAG: *(bool *)dest = true; return 0;
    case CLI_SETINT: *(int *)dest = o->ival; return 0;
    case CLI_INT: return cli_parse_int(ps->cmd, label, arg, (int)o->lo, (int)o->hi, dest);
    case CLI_LL: return cli_parse_ll(ps->cmd, label, arg, o->lo, o->hi, dest);
    case CLI_DOUBLE: {
        double v;
        if (!cfg_parse_double(arg, &v) || !(v >= o->dlo && v <= o->dhi))
            return util_usage_error(ps->cmd, "%s '%s': expected a number in [%g, %g]", label, arg, o->dlo, o->dhi);
        *(double *)dest = v;
        return 0;
    }
    case CLI_BYTES: {
        long long v;
        if (cfg_parse_bytes(arg, &v) || v < o->lo)
            return util_usage_error(ps->cmd, "%s '%s': expected a size in bytes, optionally with K, M or G", label,
                                   arg);
        *(long long *)dest = v;
        return 0;
    }
    case CLI_OUT:
        if (cli_check_out(ps->cmd, label, arg))
            return VP_EXIT_USAGE;
        *(const char **)dest = arg;
        return 0;
    case CLI_STRING: *(const char **)dest = arg; return 0;
    case CLI_ENUM: return cli_parse_enum(ps->cmd, label, arg, o->choices, dest);
    case CLI_REFUSE: return util_usage_error(ps->cmd, "%s", o->refuse);
    case CLI_CUSTOM: return o->set(dest, arg, o, ps);
    }
    return VP_EXIT_USAGE;
}

/* A table's defaults go through the same parse as the command line's values, so a default the parse
 * would refuse is a bug in the table: said at once, whatever the command line. */
static void apply_defaults(cli_parse *ps)
{
    for (int i = 0; i < ps->n_opts; i++) {
        const cli_opt *o = &ps->opts[i];
        if (o->dflt && take(o, o->dflt, ps) != 0) {
            fprintf(stderr, "vpsim %s: internal: the default '%s' of --%s does not parse\n", ps->cmd, o->dflt,
                    o->name);
            abort();
        }
    }
}

static int opt_index(const cli_parse *ps, int val)
{
    if (val >= CLI_LONG_BASE && val < CLI_LONG_BASE + ps->n_opts)
        return val - CLI_LONG_BASE;
    for (int i = 0; i < ps->n_opts; i++)
        if (ps->opts[i].short_name == val)
            return i;
    return -1;
}

static int take_positional(const cli_spec *spec, cli_parse *ps)
{
    if (spec->pos == CLI_POS_ANY)
        return 0;
    int i = optind;
    if (spec->pos == CLI_POS_SCENARIO) {
        cli_common *c = (cli_common *)((char *)ps->args + spec->common_offset);
        if (cli_positional(c, ps->argc, ps->argv, optind, spec->name))
            return VP_EXIT_USAGE;
        return 0;
    }
    if (i < ps->argc)
        return util_usage_error(spec->name, "unexpected argument '%s'", ps->argv[i]);
    return 0;
}

int cli_parse_args(const cli_spec *spec, void *args, int argc, char **argv, cli_parse *ps)
{
    memset(ps, 0, sizeof(*ps));
    ps->cmd = spec->name;
    ps->argc = argc;
    ps->argv = argv;
    ps->args = args;
    ps->opts = spec->opts;
    ps->n_opts = spec->n_opts;
    ps->seen = util_xcalloc((size_t)spec->n_opts + 1, sizeof(int));
    apply_defaults(ps);
    struct option *longopts = util_xcalloc((size_t)spec->n_opts + 2, sizeof(struct option));
    /* The leading ':' makes a missing value ':' rather than '?' (cli_bad_option tells them apart). */
    char *shorts = util_xcalloc((size_t)spec->n_opts * 2 + 4, 1);
    size_t ns = 0;
    shorts[ns++] = ':';
    shorts[ns++] = 'h';
    for (int i = 0; i < spec->n_opts; i++) {
        const cli_opt *o = &spec->opts[i];
        const bool value = takes_value(o);
        longopts[i] = (struct option){o->name, o->optional ? optional_argument : value ? required_argument : no_argument,
                                      NULL, o->short_name ? o->short_name : CLI_LONG_BASE + i};
        if (o->short_name) {
            shorts[ns++] = (char)o->short_name;
            if (value)
                shorts[ns++] = ':';
        }
    }
    longopts[spec->n_opts] = (struct option){"help", no_argument, NULL, 'h'};
    optind = 1;
    opterr = 0;
    int opt, rc = 0;
    while (rc == 0 && (opt = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        if (opt == 'h') {
            util_buf help = {0};
            cli_help_text(spec, &help);
            fputs(help.s, stdout);
            util_buf_free(&help);
            rc = -1;
            break;
        }
        const int k = opt == ':' || opt == '?' ? -1 : opt_index(ps, opt);
        if (k < 0) {
            rc = cli_bad_option(spec->name, opt, argv);
            break;
        }
        if (!ps->seen[k])
            ps->seen[k] = ++ps->n_seen;
        rc = take(&spec->opts[k], optarg, ps);
    }
    free(longopts);
    free(shorts);
    if (rc == 0)
        rc = take_positional(spec, ps);
    for (int i = 0; rc == 0 && i < spec->n_opts; i++)
        if (spec->opts[i].required && !ps->seen[i])
            rc = util_usage_error(spec->name, "%s", spec->opts[i].required);
    return rc;
}

void cli_parse_free(cli_parse *ps)
{
    free(ps->seen);
    ps->seen = NULL;
}

const cli_opt *cli_first_given(const cli_parse *ps, unsigned group)
{
    const cli_opt *first = NULL;
    int when = 0;
    for (int i = 0; i < ps->n_opts; i++)
        if ((ps->opts[i].group & group) && ps->seen[i] && (!first || ps->seen[i] < when)) {
            first = &ps->opts[i];
            when = ps->seen[i];
        }
    return first;
}

bool cli_given(const cli_parse *ps, const char *name)
{
    for (int i = 0; i < ps->n_opts; i++)
        if (ps->seen[i] && !strcmp(ps->opts[i].name, name))
            return true;
    return false;
}

/* ---------------- the help ---------------- */

#define HELP_WIDTH 108 /* the longest line the help writes, as the source's other text */
#define HELP_COL 24    /* where an option's help starts (a longer head puts it on the next line) */
#define NBSP "\x1f"    /* a space the wrap does not break at ("N in [1, 1000000]" stays on one line) */

/* `text` word-wrapped into lines of at most HELP_WIDTH, the first continuing at column `at` of the line
 * already written, the others indented by `indent`; "\n" in the text breaks a line. */
static void wrap(util_buf *out, const char *text, int at, int indent)
{
    int col = at;
    bool line_empty = true;
    for (const char *p = text; *p;) {
        if (*p == '\n') {
            util_buf_printf(out, "\n%*s", indent, "");
            col = indent;
            line_empty = true;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        const int len = (int)strcspn(p, " \n");
        if (!line_empty && col + 1 + len > HELP_WIDTH) {
            util_buf_printf(out, "\n%*s", indent, "");
            col = indent;
            line_empty = true;
        }
        util_buf_printf(out, "%s", line_empty ? "" : " ");
        for (int i = 0; i < len; i++)
            util_buf_printf(out, "%c", p[i] == NBSP[0] ? ' ' : p[i]);
        col += (line_empty ? 0 : 1) + len;
        line_empty = false;
        p += len;
    }
    util_buf_printf(out, "\n");
}

static void choices_joined(const char *const *choices, const char *sep, util_buf *out)
{
    for (int i = 0; choices[i]; i++)
        util_buf_printf(out, "%s%s", i ? sep : "", choices[i]);
}

/* "--name META" (or "-s, --name META"), as the option list and the usage line write an option. */
/* The usage line spells an enum's short list of choices out ("--format table|json|csv"). */
static bool choices_fit(const cli_opt *o)
{
    util_buf b = {0};
    choices_joined(o->choices, "|", &b);
    const bool fit = b.len <= 20;
    util_buf_free(&b);
    return fit;
}

static void opt_head(const cli_opt *o, bool usage, util_buf *out)
{
    if (!usage && o->short_name)
        util_buf_printf(out, "-%c, ", o->short_name);
    util_buf_printf(out, "--%s", o->name);
    if (o->kind == CLI_ENUM && (!o->meta || (usage && choices_fit(o)))) {
        util_buf_printf(out, " ");
        choices_joined(o->choices, "|", out);
    } else if (o->meta && takes_value(o))
        util_buf_printf(out, o->optional ? "[=%s]" : " %s", o->meta);
}

static void usage_line(const cli_spec *spec, util_buf *out)
{
    util_buf head = {0};
    util_buf_printf(&head, "usage: %s%s%s", spec->synopsis, spec->pos_usage ? " " : "",
                    spec->pos_usage ? spec->pos_usage : "");
    util_buf_printf(out, "%s", head.s);
    const int indent = (int)strlen("usage: ") + (int)strlen(spec->synopsis) + 1;
    int col = (int)head.len;
    util_buf_free(&head);
    for (int i = 0; i < spec->n_opts; i++) {
        const cli_opt *o = &spec->opts[i];
        if (o->hidden)
            continue;
        util_buf item = {0};
        util_buf_printf(&item, "%s", o->required ? "" : "[");
        opt_head(o, true, &item);
        util_buf_printf(&item, "%s%s", o->required ? "" : "]", o->repeat ? "..." : "");
        if (col + 1 + (int)item.len > HELP_WIDTH) {
            util_buf_printf(out, "\n%*s", indent - 1, "");
            col = indent - 1;
        }
        util_buf_printf(out, " %s", item.s);
        col += 1 + (int)item.len;
        util_buf_free(&item);
    }
    util_buf_printf(out, "\n");
    if (spec->usage_more)
        util_buf_printf(out, "%s", spec->usage_more);
}

static void option_lines(const cli_opt *o, util_buf *out)
{
    util_buf head = {0}, text = {0};
    util_buf_printf(&head, "  ");
    opt_head(o, false, &head);
    util_buf_printf(out, "%s", head.s);
    int at = (int)head.len;
    if (at + 2 > HELP_COL) {
        util_buf_printf(out, "\n%*s", HELP_COL, "");
        at = HELP_COL;
    } else {
        util_buf_printf(out, "%*s", HELP_COL - at, "");
        at = HELP_COL;
    }
    util_buf_printf(&text, "%s", o->help ? o->help : "");
    if (o->help_tail)
        util_buf_printf(&text, "%s", o->help_tail());
    /* What the table knows besides the help line, in one parenthesis: the range, the choices, the
     * default, whether it repeats. */
    util_buf more = {0};
    if (o->kind == CLI_INT || o->kind == CLI_LL)
        util_buf_printf(&more, "%s" NBSP "in" NBSP "[%lld," NBSP "%lld]", o->meta ? o->meta : "N", o->lo, o->hi);
    if (o->kind == CLI_ENUM && !o->choice_help) {
        util_buf_printf(&more, "%sone of: ", more.len ? "; " : "");
        choices_joined(o->choices, ", ", &more);
    }
    if (o->dflt_text || (o->dflt && !(o->kind == CLI_ENUM && o->choice_help)))
        util_buf_printf(&more, "%sdefault: %s", more.len ? "; " : "", o->dflt_text ? o->dflt_text : o->dflt);
    if (o->repeat)
        util_buf_printf(&more, "%srepeatable", more.len ? "; " : "");
    if (more.len)
        util_buf_printf(&text, " (%s)", more.s);
    if (o->kind == CLI_ENUM && o->choice_help)
        util_buf_printf(&text, ":"); /* the choices follow, a line each */
    util_buf_free(&more);
    wrap(out, text.s, at, HELP_COL);
    for (int i = 0; o->kind == CLI_ENUM && o->choice_help && o->choices[i]; i++) {
        /* One line each, unwrapped: the lists' help lines (cfg_lists.h) are written to fit. */
        const bool is_default = o->dflt && !strcmp(o->dflt, o->choices[i]);
        util_buf_printf(out, "%*s%-10s %s%s\n", HELP_COL + 2, "", o->choices[i], o->choice_help[i],
                        is_default ? " (default)" : "");
    }
    util_buf_free(&head);
    util_buf_free(&text);
}

void cli_help_text(const cli_spec *spec, util_buf *out)
{
    usage_line(spec, out);
    util_buf_printf(out, "\n");
    if (spec->about_fn)
        spec->about_fn(out);
    else if (spec->about)
        util_buf_printf(out, "%s", spec->about);
    util_buf_printf(out, "\n%s\n", spec->options_title ? spec->options_title : "options:");
    for (int i = 0; i < spec->n_opts; i++)
        if (!spec->opts[i].hidden)
            option_lines(&spec->opts[i], out);
    util_buf_printf(out, "  -h, --help%*sthis text\n", HELP_COL - 12, "");
    if (spec->after)
        util_buf_printf(out, "\n%s", spec->after);
    if (spec->examples) {
        util_buf_printf(out, "\nexamples:\n");
        for (const char *p = spec->examples; *p;) {
            const size_t len = strcspn(p, "\n");
            util_buf_printf(out, "  %.*s\n", (int)len, p);
            p += len + (p[len] == '\n');
        }
    }
}

/* cfg_tree and cfg_schema: the strict YAML tree (positions, what it rejects, limits) and the schema
 * binder's scalar parsing, lookups and documentation. */
#include "../../sim/config/cfg.h"
#include "../../sim/util/util.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Load a repo scenario with --set strings; asserts success. */
/* ---------------- the strict YAML tree ---------------- */

static void tree_fails(const char *text, size_t len, const char *want_prefix, const char *want_part)
{
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text(text, len, "t.yaml", false, &err);
    cr_assert_null(doc, "'%s' should be rejected", text);
    cr_assert(strncmp(err.msg, want_prefix, strlen(want_prefix)) == 0, "got: %s\nwant prefix: %s", err.msg,
              want_prefix);
    cr_assert_not_null(strstr(err.msg, want_part), "got: %s\nwant: %s", err.msg, want_part);
}

Test(cfg_tree, positions_of_nodes)
{
    const char text[] = "a: 1\nb:\n  c: [x, 'y']\n";
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text(text, strlen(text), "t.yaml", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    cfg_node *root = cfg_doc_root(doc);
    cr_assert_eq(root->kind, CFG_NODE_MAP);
    cfg_node *c = cfg_node_at(root, "b.c");
    cr_assert_not_null(c);
    cr_assert_eq(c->kind, CFG_NODE_SEQ);
    cr_assert_eq(c->n, 2);
    cr_assert_eq(c->line, 3);
    cr_assert_eq(c->col, 6);
    cr_assert_eq(c->items[1]->line, 3);
    cr_assert_eq(c->items[1]->col, 10);
    cr_assert_eq(c->items[1]->quoted, true);
    cr_assert_eq(c->items[0]->quoted, false);
    cr_assert_str_eq(cfg_map_get(root, "a")->scalar, "1");
    cr_assert_null(cfg_map_get(root, "zz"));
    cr_assert_null(cfg_node_at(root, "a.b"));
    cfg_doc_free(doc);
}

Test(cfg_tree, rejects_what_a_strict_loader_must)
{
    tree_fails("a: 1\na: 2\n", 10, "t.yaml:2:1: ", "duplicate key 'a' (first at line 1)");
    tree_fails("a: &x 1\n", 8, "t.yaml:1:4: ", "anchors are not supported");
    tree_fails("a: *x\n", 6, "t.yaml:1:4: ", "aliases are not supported");
    tree_fails("a: [1, 2\n", 9, "t.yaml:2:1: ", "YAML syntax error");
    tree_fails("", 0, "t.yaml:1:1: ", "empty");
    tree_fails("# nothing\n", 10, "t.yaml:1:1: ", "empty");
    tree_fails("a: 1\n---\nb: 2\n", 14, "t.yaml:2:1: ", "more than one YAML document");
    tree_fails("? [k]\n: v\n", 10, "t.yaml:1:3: ", "mapping keys must be plain strings");
    tree_fails("a: 1\nb: \"x\\0y\"\n", 15, "t.yaml:2:4: ", "NUL"); /* an escaped NUL in a string */
}

Test(cfg_tree, binary_input_points_at_the_first_bad_byte)
{
    const char nul[] = "a: 1\nbb: x\0y\n";
    tree_fails(nul, sizeof(nul) - 1, "t.yaml:2:6: ", "NUL");
    const char bad_utf8[] = "a: 1\nb: \x80\x81\n";
    tree_fails(bad_utf8, sizeof(bad_utf8) - 1, "t.yaml:2:4: ", "UTF-8");
    /* Columns count characters, not bytes: "é" is one column. */
    const char after_utf8[] = "\xc3\xa9: \xff\n";
    tree_fails(after_utf8, sizeof(after_utf8) - 1, "t.yaml:1:4: ", "UTF-8");
}

Test(cfg_tree, nesting_is_bounded)
{
    util_buf b = {0};
    util_buf_printf(&b, "a: ");
    for (int i = 0; i < 5000; i++)
        util_buf_printf(&b, "[");
    for (int i = 0; i < 5000; i++)
        util_buf_printf(&b, "]");
    char want[64];
    /* The root mapping is level 1; the 64th '[' (column 3 + 64) opens level 65. */
    snprintf(want, sizeof(want), "t.yaml:1:%d: ", 3 + CFG_MAX_DEPTH);
    tree_fails(b.s, b.len, want, "nesting deeper than 64 levels");
    util_buf_free(&b);

    /* 63 levels inside the root mapping are fine. */
    util_buf ok = {0};
    util_buf_printf(&ok, "a: ");
    for (int i = 0; i < CFG_MAX_DEPTH - 1; i++)
        util_buf_printf(&ok, "[");
    for (int i = 0; i < CFG_MAX_DEPTH - 1; i++)
        util_buf_printf(&ok, "]");
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text(ok.s, ok.len, "t.yaml", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    cfg_doc_free(doc);
    util_buf_free(&ok);
}

Test(cfg_tree, oversized_file_is_refused_before_reading)
{
    char path[] = "/tmp/vpsim-test-big-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)CFG_MAX_FILE_BYTES + 1), 0); /* sparse: instant */
    close(fd);
    cfg_error err = {{0}};
    cr_assert_null(cfg_doc_load_file(path, &err));
    unlink(path);
    cr_assert_not_null(strstr(err.msg, "the limit is 67108864 bytes"), "%s", err.msg);
    cr_assert(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
}

Test(cfg_tree, set_values_have_no_position)
{
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text("[1, ", 4, "--set 'k=[1, '", true, &err);
    cr_assert_null(doc);
    cr_assert(strncmp(err.msg, "--set 'k=[1, ': ", 16) == 0, "%s", err.msg);
    /* An empty --set value is an empty string, not an error. */
    doc = cfg_doc_load_text("", 0, "--set 'k='", true, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    cr_assert_eq(cfg_doc_root(doc)->kind, CFG_NODE_SCALAR);
    cr_assert_str_eq(cfg_doc_root(doc)->scalar, "");
    cfg_doc_free(doc);
}

Test(cfg_tree, json_is_yaml)
{
    const char text[] = "{\"a\": [1, 2.5, \"x\"], \"b\": {\"c\": true}}";
    cfg_error err = {{0}};
    cfg_doc *doc = cfg_doc_load_text(text, strlen(text), "t.json", false, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    cfg_node *a = cfg_node_at(cfg_doc_root(doc), "a");
    cr_assert_eq(a->n, 3);
    cr_assert_str_eq(a->items[1]->scalar, "2.5");
    cr_assert_eq(a->items[2]->quoted, true);
    cr_assert_str_eq(cfg_node_at(cfg_doc_root(doc), "b.c")->scalar, "true");
    cfg_doc_free(doc);
}

/* ---------------- the schema binder ---------------- */

Test(cfg_schema, scalar_parsing_is_strict)
{
    long long i;
    double d;
    cr_assert(cfg_parse_int("42", &i) && i == 42);
    cr_assert(cfg_parse_int("-7", &i) && i == -7);
    cr_assert_not(cfg_parse_int("4.0", &i));
    cr_assert_not(cfg_parse_int("4x", &i));
    cr_assert_not(cfg_parse_int("", &i));
    cr_assert_not(cfg_parse_int("99999999999999999999", &i));
    cr_assert(cfg_parse_double("0.25", &d) && d == 0.25);
    cr_assert(cfg_parse_double("1e3", &d) && d == 1000.0);
    cr_assert_not(cfg_parse_double("nan", &d));
    cr_assert_not(cfg_parse_double("inf", &d));
    cr_assert_not(cfg_parse_double("0.5.", &d));
}

Test(cfg_schema, find_and_enum_helpers)
{
    const cfg_field *f = cfg_schema_find(cfg_scenario_fields, "speculative.num_draft_tokens");
    cr_assert_not_null(f);
    cr_assert_eq(f->type, CFG_T_INT);
    cr_assert_null(cfg_schema_find(cfg_scenario_fields, "speculative.nope"));
    cr_assert_null(cfg_schema_find(cfg_scenario_fields, "name.x"));
    cr_assert_not_null(cfg_schema_find(cfg_model_fields, "weights.routed_experts.group"));
    cr_assert_eq(cfg_enum_index(cfg_backend_names, "twoshot"), CFG_BACKEND_TWOSHOT);
    cr_assert_eq(cfg_enum_index(cfg_backend_names, "gloo"), -1);
    char buf[128];
    cr_assert_str_eq(cfg_enum_list(cfg_device_names, buf, sizeof(buf)), "cuda, cpu");
}

Test(cfg_schema, every_table_entry_is_documented)
{
    const cfg_field *tables[] = {cfg_scenario_fields, cfg_model_fields};
    for (size_t t = 0; t < 2; t++)
        for (const cfg_field *f = tables[t]; f->key; f++)
            cr_assert(f->doc && f->doc[0], "key '%s' has no documentation", f->key);
}

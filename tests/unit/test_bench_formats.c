/* bench-allreduce the nccl-tests way: nccl-tests' option spellings (-c, -G, -d and
 * their long forms) mean what vpsim's own options mean, and --format csv is one header plus one line
 * per size with the same fields on every line (the verify-pass mark a column, not trailing text). */
#include "../../sim/config/cfg_tree.h"
#include "../../sim/exec/exec_bench.h"
#include "test_helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fields of one CSV line (RFC 4180 quotes, no embedded quotes here); -1 on an unterminated quote. */
static int csv_fields(const char *line, size_t len, char fields[][64], int max)
{
    int n = 0;
    size_t i = 0;
    while (n < max) {
        size_t k = 0;
        bool quoted = i < len && line[i] == '"';
        if (quoted)
            i++;
        while (i < len && (quoted ? line[i] != '"' : line[i] != ',')) {
            if (k + 1 < 64)
                fields[n][k++] = line[i];
            i++;
        }
        if (quoted) {
            if (i >= len)
                return -1;
            i++; /* the closing quote */
        }
        fields[n++][k] = '\0';
        if (i >= len)
            return n;
        i++; /* the comma */
    }
    return n;
}

typedef struct csv_doc {
    int n_lines, n_cols;
    char cells[16][20][64];
} csv_doc;

/* Parse `text` into d; every line must have as many fields as the header. */
static void csv_parse(const char *text, csv_doc *d)
{
    memset(d, 0, sizeof(*d));
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "the last line lacks its newline:\n%s", text);
        cr_assert_lt(d->n_lines, 16);
        int n = csv_fields(p, (size_t)(nl - p), d->cells[d->n_lines], 20);
        if (d->n_lines == 0)
            d->n_cols = n;
        cr_assert_eq(n, d->n_cols, "line %d has %d fields, the header %d:\n%s", d->n_lines + 1, n, d->n_cols, text);
        d->n_lines++;
        p = nl + 1;
    }
}

static int csv_col(const csv_doc *d, const char *name)
{
    for (int c = 0; c < d->n_cols; c++)
        if (!strcmp(d->cells[0][c], name))
            return c;
    cr_assert_fail("no column %s", name);
    return -1;
}

static double num(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    cr_assert(end != s && *end == '\0', "'%s' is not a number", s);
    return v;
}

Test(bench_formats, csv_has_one_line_per_row_and_the_mark_as_a_column)
{
    exec_bench_result r;
    memset(&r, 0, sizeof(r));
    r.ranks = 4;
    snprintf(r.device, sizeof(r.device), "cpu");
    snprintf(r.type, sizeof(r.type), "float");
    r.n_backends = 2;
    r.backends = calloc(2, sizeof(*r.backends));
    exec_bench_backend *b = &r.backends[0];
    b->ran = true;
    snprintf(b->name, sizeof(b->name), "policy(mpi<=1K,mpi)"); /* a comma inside a name */
    b->n_rows = 2;
    /* 1024 B in 2 us: algbw 0.512 GB/s, busbw x 2(3)/4 = 0.768. */
    b->rows[0] = (exec_bench_row){.bytes = 1024, .count = 256, .time_us = 2.0, .algbw = 0.512, .busbw = 0.768,
                                  .wrong = -1};
    b->rows[1] = (exec_bench_row){.bytes = 4096, .count = 1024, .time_us = 4.0, .wrong = 2, .verify_size = true};
    snprintf(r.backends[1].name, sizeof(r.backends[1].name), "nccl");
    snprintf(r.backends[1].why, sizeof(r.backends[1].why), "needs the cuda device");
    util_buf o = {0};
    exec_bench_csv(&o, &r);
    csv_doc d;
    csv_parse(o.s, &d);
    cr_assert_eq(d.n_lines, 3, "a header and the two rows that ran:\n%s", o.s);
    cr_assert_str_eq(d.cells[1][csv_col(&d, "backend")], "policy(mpi<=1K,mpi)");
    cr_assert_float_eq(num(d.cells[1][csv_col(&d, "busbw_gbps")]), 0.768, 1e-9);
    cr_assert_str_eq(d.cells[1][csv_col(&d, "wrong")], "", "not checked: empty, not a number");
    cr_assert_str_eq(d.cells[2][csv_col(&d, "wrong")], "2");
    cr_assert_str_eq(d.cells[1][csv_col(&d, "verify_pass")], "false");
    cr_assert_str_eq(d.cells[2][csv_col(&d, "verify_pass")], "true");
    cr_assert(strstr(o.s, "<-") == NULL && strstr(o.s, "#") == NULL, "%s", o.s);
    util_buf_free(&o);
    free(r.backends);
}

static th_result bench(const char *args)
{
    return th_mpirun(2, "bench-allreduce --device cpu -n 2 -w 0 %s", args);
}

Test(bench_formats, csv_under_mpirun_marks_the_verify_payload_in_its_column, .timeout = 150)
{
    th_need_mpirun();
    /* configs/tiny.yaml verifies 3 draft tokens of hidden size 256 (batch 1): 768 floats, 3072 B per allreduce. */
    th_result r = bench("configs/tiny.yaml -b 1K -e 4K --format csv");
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    csv_doc d;
    csv_parse(r.out, &d);
    cr_assert_eq(d.n_lines, 5, "header + 1K, 2K, 3K (verify), 4K:\n%s", r.out);
    const int bytes = csv_col(&d, "bytes"), vp = csv_col(&d, "verify_pass"), t = csv_col(&d, "time_us");
    for (int i = 1; i < d.n_lines; i++) {
        cr_assert_str_eq(d.cells[i][vp], num(d.cells[i][bytes]) == 3072 ? "true" : "false", "%s", r.out);
        cr_assert_gt(num(d.cells[i][t]), 0.0, "%s", r.out);
    }
    th_free(&r);
}

/* The JSON of a short cpu run, parsed. One rank without mpirun: what is compared is the settings the
 * run records, which the rank count does not touch (the runs under mpirun are the other tests'). */
static cfg_doc *bench_json(const char *args)
{
    th_result r = th_run("bench-allreduce --device cpu -n 2 -w 0 %s", args);
    cr_assert_eq(r.status, 0, "%s: exit %d\n%s\n%s", args, r.status, r.out, r.err);
    cfg_error err;
    cfg_doc *d = cfg_doc_load_text(r.out, strlen(r.out), "bench json", false, &err);
    cr_assert_not_null(d, "%s", err.msg);
    th_free(&r);
    return d;
}

static const char *field(cfg_doc *d, const char *key)
{
    cfg_node *n = cfg_map_get(cfg_doc_root(d), key);
    cr_assert(n && n->kind == CFG_NODE_SCALAR, "no %s", key);
    return n->scalar;
}

Test(bench_formats, nccl_tests_spellings_mean_the_same_options, .timeout = 150)
{
    th_need_mpirun();
    /* Each pair: nccl-tests' spelling, vpsim's. The recorded settings must agree. */
    static const char *const pairs[][2] = {
        {"-c 1 -b 1K -e 1K --format json", "--check -b 1K -e 1K --format json"},
        {"--check 1 -b 1K -e 1K --format json", "--check=1 -b 1K -e 1K --format json"},
        {"-G 5 -c 0 -b 1K -e 1K --format json", "--graph -b 1K -e 1K --format json"},
        {"--cudagraph 0 -d float --datatype float32 -b 1K -e 1K --format json", "-b 1K -e 1K --format json"},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        cfg_doc *a = bench_json(pairs[i][0]), *b = bench_json(pairs[i][1]);
        const char *keys[] = {"check", "graph_requested", "type", "iters", "warmup"};
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            cr_assert_str_eq(field(a, keys[k]), field(b, keys[k]), "'%s' vs '%s': %s differs", pairs[i][0],
                             pairs[i][1], keys[k]);
        cfg_doc_free(a);
        cfg_doc_free(b);
    }
    /* And the settings are the ones asked for, not just equal. */
    cfg_doc *c = bench_json("-c 1 -G 5 -b 1K -e 1K --format json");
    cr_assert_str_eq(field(c, "check"), "true");
    cr_assert_str_eq(field(c, "graph_requested"), "true");
    cfg_doc_free(c);
    c = bench_json("-c 0 -G 0 -b 1K -e 1K --format json");
    cr_assert_str_eq(field(c, "check"), "false");
    cr_assert_str_eq(field(c, "graph_requested"), "false");
    cfg_doc_free(c);
}

Test(bench_formats, bfloat16_is_the_cuda_type, .timeout = 60)
{
    /* Accepted for the cuda device: the command goes on to the device (which this machine may lack). */
    th_result r = th_run("bench-allreduce --device cuda -d bfloat16 -b 1K -e 1K -n 1 -w 0 --backend nccl");
    cr_assert_null(strstr(r.err, "-d/--datatype"), "%s", r.err);
    th_free(&r);
}

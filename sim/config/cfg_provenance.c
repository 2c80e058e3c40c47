/* Provenance tags from the comments beside a system file's values (see cfg_provenance.h). */
#include "cfg_provenance.h"

#include "cfg_schema.h"
#include "cfg_tree.h"

#include "../util/util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cfg_prov {
    char *path;
    cfg_doc *doc;
    char comment[512]; /* cfg_prov_node_comment's answer */
    util_buf more;
    char **lines; /* the file's lines, for the comments libyaml drops */
    int n_lines;
};

/* "self-test": a value a self-test of calibrate --measure or probe wrote (the CPU device, virtual ranks),
 * not a measurement of any GPU. */
static const char *const known_tags[] = {"spec", "measured", "assumed", "calibrated", "nccl", "unused", "self-test",
                                         NULL};

cfg_prov *cfg_prov_open(const char *path)
{
    cfg_error err;
    cfg_doc *doc = path ? cfg_doc_load_file(path, &err) : NULL;
    if (!doc)
        return NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        cfg_doc_free(doc);
        return NULL;
    }
    cfg_prov *p = util_xcalloc(1, sizeof(*p));
    p->path = util_xstrdup(path);
    p->doc = doc;
    char *line = NULL;
    size_t cap = 0;
    int cap_lines = 0;
    while (getline(&line, &cap, f) >= 0) {
        if (p->n_lines == cap_lines) {
            cap_lines = cap_lines ? 2 * cap_lines : 128;
            p->lines = util_xrealloc(p->lines, (size_t)cap_lines * sizeof(char *));
        }
        p->lines[p->n_lines++] = util_xstrdup(line);
    }
    free(line);
    fclose(f);
    return p;
}

void cfg_prov_close(cfg_prov *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_lines; i++)
        free(p->lines[i]);
    free(p->lines);
    free(p->path);
    util_buf_free(&p->more);
    cfg_doc_free(p->doc);
    free(p);
}

/* The comment on `line` after column `col` (1-based): values here are numbers or flow lists of numbers,
 * so the first '#' after the value starts the comment. */
static const char *comment_after(const char *line, int col)
{
    size_t len = strlen(line);
    const char *c = (size_t)col <= len ? strchr(line + col - 1, '#') : NULL;
    if (!c)
        return NULL;
    c++;
    while (*c == ' ' || *c == '\t')
        c++;
    return c;
}

/* The node's value as a number: a scalar, or a list's first item (duration lists are scaled as a whole). */
/* A scalar's number; a list stands for its first non-zero item (a matrix of GPU pairs starts with its
 * empty diagonal), as the sensitivity list shows it. */
static bool node_number(const cfg_node *n, double *out)
{
    if (n->kind == CFG_NODE_SEQ) {
        bool any = false;
        for (size_t i = 0; i < n->n; i++) {
            double v;
            if (n->items[i]->kind != CFG_NODE_SCALAR || !cfg_parse_double(n->items[i]->scalar, &v))
                return false;
            if (!any || (*out == 0.0 && v != 0.0)) {
                *out = v;
                any = true;
            }
        }
        return any;
    }
    return n->kind == CFG_NODE_SCALAR && cfg_parse_double(n->scalar, out);
}

const char *cfg_prov_lookup(const cfg_prov *p, const char *dotted, double loaded, char *tag, size_t tag_len,
                            char *note, size_t note_len)
{
    if (note && note_len)
        note[0] = '\0';
    const cfg_node *n = p ? cfg_node_at(cfg_doc_root(p->doc), dotted) : NULL;
    if (!p) {
        snprintf(tag, tag_len, "unknown");
        return tag;
    }
    if (!n) {
        snprintf(tag, tag_len, "default");
        return tag;
    }
    double in_file;
    if (node_number(n, &in_file) && fabs(in_file - loaded) > 1e-12 * fmax(1.0, fabs(loaded))) {
        snprintf(tag, tag_len, "--set");
        return tag;
    }
    const char *c = n->line >= 1 && n->line <= p->n_lines ? comment_after(p->lines[n->line - 1], n->col) : NULL;
    if (!c || !*c || *c == '\n') {
        snprintf(tag, tag_len, "untagged");
        return tag;
    }
    if (note && note_len) {
        snprintf(note, note_len, "%s", c);
        note[strcspn(note, "\r\n")] = '\0';
    }
    char word[24];
    size_t w = 0;
    while (c[w] && w + 1 < sizeof(word) && (isalpha((unsigned char)c[w]) || (w > 0 && c[w] == '-'))) {
        word[w] = (char)tolower((unsigned char)c[w]);
        w++;
    }
    word[w] = '\0';
    snprintf(tag, tag_len, "%s", cfg_enum_index(known_tags, word) >= 0 ? word : "noted");
    return tag;
}

static bool comment_only(const char *line, size_t *hash_at)
{
    size_t i = strspn(line, " \t");
    *hash_at = i;
    return line[i] == '#';
}

const char *cfg_prov_node_comment(const cfg_node *n, const char **more, void *ctx)
{
    cfg_prov *p = ctx;
    if (more)
        *more = NULL;
    if (!p || !n || n->from_set || !n->src || strcmp(n->src, p->path) != 0 || n->line < 1 || n->line > p->n_lines)
        return NULL;
    const char *c = comment_after(p->lines[n->line - 1], n->col);
    if (!c)
        return NULL;
    snprintf(p->comment, sizeof(p->comment), "%s", c);
    p->comment[strcspn(p->comment, "\r\n")] = '\0';
    /* Comment-only lines indented past the value's line continue its comment. */
    const size_t indent = strspn(p->lines[n->line - 1], " ");
    p->more.len = 0;
    if (p->more.s)
        p->more.s[0] = '\0';
    size_t at;
    for (int l = n->line; l < p->n_lines && comment_only(p->lines[l], &at) && at > indent; l++)
        util_buf_printf(&p->more, "%s", p->lines[l]);
    if (more)
        *more = p->more.s;
    return p->comment;
}

void cfg_prov_header(const cfg_prov *p, util_buf *out)
{
    size_t at;
    for (int l = 0; p && l < p->n_lines && comment_only(p->lines[l], &at); l++)
        util_buf_printf(out, "%s", p->lines[l]);
}

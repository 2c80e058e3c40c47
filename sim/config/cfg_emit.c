#include "cfg_emit.h"

#include <stdbool.h>
#include <string.h>

/* Plain only when YAML reads the text back as the same plain scalar, in block and in flow context:
 * no indicator first, no ": " or " #", no flow punctuation, no blanks at the ends, no control bytes. */
static bool plain_safe(const char *s)
{
    const size_t n = strlen(s);
    if (n == 0 || s[0] == ' ' || s[n - 1] == ' ' || s[n - 1] == ':')
        return false;
    if (strchr("?:,[]{}#&*!|>'\"%@`", s[0]) || (s[0] == '-' && (n == 1 || s[1] == ' ')))
        return false;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || strchr(",[]{}", c) || (c == ':' && s[i + 1] == ' ') ||
            (c == '#' && i > 0 && s[i - 1] == ' '))
            return false;
    }
    return true;
}

static void emit_scalar(util_buf *o, const cfg_node *n)
{
    if (!n->quoted && plain_safe(n->scalar)) {
        util_buf_printf(o, "%s", n->scalar);
        return;
    }
    util_buf_printf(o, "\"");
    for (const unsigned char *p = (const unsigned char *)n->scalar; *p; p++) {
        if (*p == '"' || *p == '\\')
            util_buf_printf(o, "\\%c", *p);
        else if (*p == '\n')
            util_buf_printf(o, "\\n");
        else if (*p == '\t')
            util_buf_printf(o, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            util_buf_printf(o, "\\x%02x", *p);
        else
            util_buf_printf(o, "%c", *p);
    }
    util_buf_printf(o, "\"");
}

/* A sequence fits on one line when every item is a non-empty scalar. */
static bool flow_seq(const cfg_node *n)
{
    for (size_t i = 0; i < n->n; i++)
        if (n->items[i]->kind != CFG_NODE_SCALAR || (!n->items[i]->quoted && !n->items[i]->scalar[0]))
            return false;
    return true;
}

typedef struct emit_ctx {
    cfg_emit_comment_fn comment;
    void *ctx;
} emit_ctx;

/* End the line of `n`'s value: its comment when there is one, then the continuation lines. */
static void end_line(util_buf *o, const cfg_node *n, const emit_ctx *e)
{
    const char *more = NULL;
    const char *c = e->comment ? e->comment(n, &more, e->ctx) : NULL;
    if (c && *c)
        util_buf_printf(o, "  # %s", c);
    util_buf_printf(o, "\n");
    if (more && *more)
        util_buf_printf(o, "%s", more);
}

static void emit_block(util_buf *o, const cfg_node *n, int indent, const emit_ctx *e);

/* What follows "key:" or "-": the rest of the line, and the nested block when there is one. */
static void emit_value(util_buf *o, const cfg_node *key, const cfg_node *v, int indent, const emit_ctx *e)
{
    if (v->kind == CFG_NODE_SCALAR) {
        if (v->quoted || v->scalar[0])
            util_buf_printf(o, " ");
        emit_scalar(o, v);
        end_line(o, v, e);
    } else if (v->n == 0) {
        util_buf_printf(o, v->kind == CFG_NODE_MAP ? " {}" : " []");
        end_line(o, v, e);
    } else if (v->kind == CFG_NODE_SEQ && flow_seq(v)) {
        util_buf_printf(o, " [");
        for (size_t i = 0; i < v->n; i++) {
            util_buf_printf(o, "%s", i ? ", " : "");
            emit_scalar(o, v->items[i]);
        }
        util_buf_printf(o, "]");
        end_line(o, v, e);
    } else {
        /* A block opens after "key:": a comment there sits on the key's line. */
        if (key)
            end_line(o, key, e);
        else
            util_buf_printf(o, "\n");
        emit_block(o, v, indent + 2, e);
    }
}

static void emit_block(util_buf *o, const cfg_node *n, int indent, const emit_ctx *e)
{
    for (size_t i = 0; i < n->n; i++) {
        util_buf_printf(o, "%*s", indent, "");
        if (n->kind == CFG_NODE_MAP) {
            emit_scalar(o, n->keys[i]);
            util_buf_printf(o, ":");
        } else {
            util_buf_printf(o, "-");
        }
        emit_value(o, n->kind == CFG_NODE_MAP ? n->keys[i] : NULL, n->items[i], indent, e);
    }
}

void cfg_emit_yaml_commented(util_buf *out, const cfg_node *root, cfg_emit_comment_fn comment, void *ctx)
{
    const emit_ctx e = {comment, ctx};
    if (root->kind == CFG_NODE_SCALAR) {
        emit_scalar(out, root);
        util_buf_printf(out, "\n");
    } else if (root->n == 0) {
        util_buf_printf(out, root->kind == CFG_NODE_MAP ? "{}\n" : "[]\n");
    } else {
        emit_block(out, root, 0, &e);
    }
}

void cfg_emit_yaml(util_buf *out, const cfg_node *root) { cfg_emit_yaml_commented(out, root, NULL, NULL); }

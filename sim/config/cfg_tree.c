#include "cfg_tree.h"

#include "../util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

struct cfg_doc {
    char *path;
    cfg_node *root;
    util_vec nodes;   /* cfg_node* owned */
    util_vec strings; /* char* owned (source names) */
    util_vec adopted; /* cfg_doc* owned */
    size_t node_count;
};

static cfg_node *doc_new_node(cfg_doc *doc, cfg_node_kind kind, const char *src, bool from_set, int line, int col)
{
    cfg_node *n = util_xcalloc(1, sizeof(*n));
    n->kind = kind;
    n->src = src;
    n->from_set = from_set;
    n->line = line;
    n->col = col;
    *(cfg_node **)util_vec_push(&doc->nodes) = n;
    doc->node_count++;
    return n;
}

static const char *doc_intern(cfg_doc *doc, const char *s)
{
    char *copy = util_xstrdup(s);
    *(char **)util_vec_push(&doc->strings) = copy;
    return copy;
}

static cfg_doc *doc_new(void)
{
    cfg_doc *doc = util_xcalloc(1, sizeof(*doc));
    util_vec_init(&doc->nodes, sizeof(cfg_node *));
    util_vec_init(&doc->strings, sizeof(char *));
    util_vec_init(&doc->adopted, sizeof(cfg_doc *));
    return doc;
}

void cfg_doc_free(cfg_doc *doc)
{
    if (!doc)
        return;
    cfg_node **nodes = doc->nodes.data;
    for (size_t i = 0; i < doc->nodes.count; i++) {
        free(nodes[i]->scalar);
        free(nodes[i]->items);
        free(nodes[i]->keys);
        free(nodes[i]);
    }
    char **strs = doc->strings.data;
    for (size_t i = 0; i < doc->strings.count; i++)
        free(strs[i]);
    cfg_doc **ad = doc->adopted.data;
    for (size_t i = 0; i < doc->adopted.count; i++)
        cfg_doc_free(ad[i]);
    util_vec_free(&doc->nodes);
    util_vec_free(&doc->strings);
    util_vec_free(&doc->adopted);
    free(doc->path);
    free(doc);
}

cfg_node *cfg_doc_root(cfg_doc *doc) { return doc->root; }

void cfg_doc_adopt(cfg_doc *doc, cfg_doc *other)
{
    *(cfg_doc **)util_vec_push(&doc->adopted) = other;
}

/* ---------------- errors ---------------- */

static void error_at(cfg_error *err, const char *src, bool from_set, int line, int col, const char *fmt, va_list ap)
{
    char body[768];
    vsnprintf(body, sizeof(body), fmt, ap);
    if (from_set)
        snprintf(err->msg, sizeof(err->msg), "%s: %s", src, body);
    else
        snprintf(err->msg, sizeof(err->msg), "%s:%d:%d: %s", src, line, col, body);
}

void cfg_errorf(cfg_error *err, const cfg_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (at)
        error_at(err, at->src, at->from_set, at->line, at->col, fmt, ap);
    else
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}

void cfg_error_plain(cfg_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}

static void error_at_f(cfg_error *err, const char *src, bool from_set, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void error_at_f(cfg_error *err, const char *src, bool from_set, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_at(err, src, from_set, line, col, fmt, ap);
    va_end(ap);
}

static void error_mark(cfg_error *err, const char *src, bool from_set, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void error_mark(cfg_error *err, const char *src, bool from_set, yaml_mark_t m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_at(err, src, from_set, (int)m.line + 1, (int)m.column + 1, fmt, ap);
    va_end(ap);
}

/* 1-based line and column (in characters, as libyaml counts them) of byte `offset` of UTF-8 text. */
static void text_position(const unsigned char *text, size_t len, size_t offset, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else if ((text[i] & 0xC0) != 0x80) {
            ++*col;
        }
    }
}

/* ---------------- map helpers ---------------- */

static void node_append(cfg_node *parent, cfg_node *key, cfg_node *value)
{
    if (parent->n == parent->cap) {
        parent->cap = parent->cap ? parent->cap * 2 : 8;
        parent->items = util_xrealloc(parent->items, parent->cap * sizeof(cfg_node *));
        if (parent->kind == CFG_NODE_MAP)
            parent->keys = util_xrealloc(parent->keys, parent->cap * sizeof(cfg_node *));
    }
    if (parent->kind == CFG_NODE_MAP)
        parent->keys[parent->n] = key;
    parent->items[parent->n++] = value;
}

cfg_node *cfg_map_get(const cfg_node *map, const char *key)
{
    if (!map || map->kind != CFG_NODE_MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->keys[i]->scalar, key) == 0)
            return map->items[i];
    return NULL;
}

cfg_node *cfg_node_at(const cfg_node *root, const char *dotted)
{
    char *copy = util_xstrdup(dotted);
    const cfg_node *cur = root;
    char *save = NULL;
    for (char *part = strtok_r(copy, ".", &save); part && cur; part = strtok_r(NULL, ".", &save))
        cur = cfg_map_get(cur, part);
    free(copy);
    return (cfg_node *)cur;
}

void cfg_map_put(cfg_doc *doc, cfg_node *map, const char *key, cfg_node *value)
{
    for (size_t i = 0; i < map->n; i++) {
        if (strcmp(map->keys[i]->scalar, key) == 0) {
            map->items[i] = value;
            return;
        }
    }
    cfg_node *k = doc_new_node(doc, CFG_NODE_SCALAR, value->src, value->from_set, value->line, value->col);
    k->scalar = util_xstrdup(key);
    node_append(map, k, value);
}

cfg_node *cfg_node_new_map(cfg_doc *doc, const cfg_node *where)
{
    return doc_new_node(doc, CFG_NODE_MAP, where->src, where->from_set, where->line, where->col);
}

/* ---------------- loading ---------------- */

typedef struct build_frame {
    cfg_node *node;
    cfg_node *pending_key; /* MAP: key waiting for its value */
} build_frame;

/* The tree under construction from libyaml's events. */
typedef struct builder {
    cfg_doc *doc;
    const unsigned char *text;
    size_t len;
    const char *src;
    bool from_set;
    cfg_error *err;
    build_frame stack[CFG_MAX_DEPTH + 1];
    int depth, documents;
} builder;

/* A parser failure: reader (encoding) errors carry a byte offset, syntax errors a mark. */
static void report_parser_error(builder *b, const yaml_parser_t *parser)
{
    if (parser->error != YAML_READER_ERROR) {
        error_mark(b->err, b->src, b->from_set, parser->problem_mark, "YAML syntax error: %s%s%s",
                   parser->problem ? parser->problem : "invalid input", parser->context ? " " : "",
                   parser->context ? parser->context : "");
        return;
    }
    size_t off = parser->problem_offset;
    int value = parser->problem_value;
    if (parser->problem && strstr(parser->problem, "trailing")) {
        /* libyaml points at the byte that fails to continue a sequence: show its start. */
        size_t s = off;
        while (s > 0 && s < b->len && off - s < 4 && (b->text[s - 1] & 0xC0) == 0x80)
            s--;
        if (s > 0 && s <= b->len && (b->text[s - 1] & 0xC0) == 0xC0) {
            off = s - 1;
            value = b->text[off];
        }
    }
    int line, col;
    text_position(b->text, b->len, off, &line, &col);
    char what[32] = "";
    if (value >= 0)
        snprintf(what, sizeof(what), " (byte 0x%02x)", (unsigned)value & 0xFFu);
    error_at_f(b->err, b->src, b->from_set, line, col, "not valid UTF-8 text: %s%s; is this a binary file?",
               parser->problem ? parser->problem : "invalid input", what);
}

/* Hang a new node under the open collection (or make it the root); a key waits for its value. */
static int attach(builder *b, cfg_node *node, yaml_mark_t m)
{
    if (b->depth == 0) {
        b->doc->root = node;
        return 0;
    }
    build_frame *top = &b->stack[b->depth - 1];
    if (top->node->kind == CFG_NODE_SEQ) {
        node_append(top->node, NULL, node);
    } else if (top->pending_key) {
        node_append(top->node, top->pending_key, node);
        top->pending_key = NULL;
    } else {
        if (node->kind != CFG_NODE_SCALAR) {
            error_mark(b->err, b->src, b->from_set, m, "mapping keys must be plain strings");
            return -1;
        }
        for (size_t i = 0; i < top->node->n; i++)
            if (strcmp(top->node->keys[i]->scalar, node->scalar) == 0) {
                error_mark(b->err, b->src, b->from_set, m, "duplicate key '%s' (first at line %d)", node->scalar,
                           top->node->keys[i]->line);
                return -1;
            }
        top->pending_key = node;
    }
    return 0;
}

/* A scalar, or the start of a sequence or mapping. */
static int open_node(builder *b, const yaml_event_t *ev)
{
    const yaml_mark_t m = ev->start_mark;
    const yaml_char_t *anchor = ev->type == YAML_SCALAR_EVENT           ? ev->data.scalar.anchor
                                : ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor
                                                                        : ev->data.mapping_start.anchor;
    if (anchor) {
        error_mark(b->err, b->src, b->from_set, m, "YAML anchors are not supported (anchor '&%s')", (const char *)anchor);
        return -1;
    }
    if (b->doc->node_count >= CFG_MAX_NODES) {
        error_mark(b->err, b->src, b->from_set, m, "document has more than %d nodes", CFG_MAX_NODES);
        return -1;
    }
    cfg_node_kind kind = ev->type == YAML_SCALAR_EVENT           ? CFG_NODE_SCALAR
                         : ev->type == YAML_SEQUENCE_START_EVENT ? CFG_NODE_SEQ
                                                                 : CFG_NODE_MAP;
    cfg_node *node = doc_new_node(b->doc, kind, b->src, b->from_set, (int)m.line + 1, (int)m.column + 1);
    if (kind == CFG_NODE_SCALAR) {
        const yaml_scalar_style_t st = ev->data.scalar.style;
        node->scalar = util_xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        node->quoted = st == YAML_SINGLE_QUOTED_SCALAR_STYLE || st == YAML_DOUBLE_QUOTED_SCALAR_STYLE ||
                       st == YAML_LITERAL_SCALAR_STYLE || st == YAML_FOLDED_SCALAR_STYLE;
        if (strlen(node->scalar) != ev->data.scalar.length) {
            error_mark(b->err, b->src, b->from_set, m, "string contains a NUL character");
            return -1;
        }
    }
    if (attach(b, node, m))
        return -1;
    if (kind == CFG_NODE_SCALAR)
        return 0;
    if (b->depth >= CFG_MAX_DEPTH) {
        error_mark(b->err, b->src, b->from_set, m, "nesting deeper than %d levels", CFG_MAX_DEPTH);
        return -1;
    }
    b->stack[b->depth++] = (build_frame){.node = node};
    return 0;
}

/* 1 at the end of the stream, 0 to go on, -1 on an error (in b->err). */
static int on_event(builder *b, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_STREAM_END_EVENT: return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (++b->documents > 1) {
            error_mark(b->err, b->src, b->from_set, ev->start_mark, "more than one YAML document in one file");
            return -1;
        }
        return 0;
    case YAML_ALIAS_EVENT:
        error_mark(b->err, b->src, b->from_set, ev->start_mark, "YAML aliases are not supported (write the value out)");
        return -1;
    case YAML_SCALAR_EVENT:
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: return open_node(b, ev);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: b->depth--; return 0;
    default: return 0;
    }
}

/* An empty document is an error in a file and an empty string in "--set key=". */
static int finish_root(builder *b)
{
    cfg_doc *doc = b->doc;
    if (doc->root && !(doc->root->kind == CFG_NODE_SCALAR && doc->root->scalar[0] == '\0' && !doc->root->quoted))
        return 0;
    if (!b->from_set) {
        cfg_error_plain(b->err, "%s:1:1: file is empty (expected a YAML mapping)", b->src);
        return -1;
    }
    if (!doc->root) {
        doc->root = doc_new_node(doc, CFG_NODE_SCALAR, b->src, b->from_set, 1, 1);
        doc->root->scalar = util_xstrdup("");
    }
    return 0;
}

static cfg_doc *doc_parse(cfg_doc *doc, const unsigned char *text, size_t len, const char *src, bool from_set,
                          cfg_error *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        cfg_error_plain(err, "%s: cannot initialise the YAML parser", src);
        cfg_doc_free(doc);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, text, len);
    builder *b = util_xcalloc(1, sizeof(*b));
    *b = (builder){.doc = doc, .text = text, .len = len, .src = src, .from_set = from_set, .err = err};
    int rc = 0;
    while (rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            report_parser_error(b, &parser);
            rc = -1;
            break;
        }
        rc = on_event(b, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (rc > 0)
        rc = finish_root(b);
    free(b);
    if (rc < 0) {
        cfg_doc_free(doc);
        return NULL;
    }
    return doc;
}

cfg_doc *cfg_doc_load_text(const char *text, size_t len, const char *src, bool from_set, cfg_error *err)
{
    cfg_doc *doc = doc_new();
    const char *name = doc_intern(doc, src);
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line, col;
        text_position((const unsigned char *)text, len, (size_t)(nul - text), &line, &col);
        error_at_f(err, name, from_set, line, col, "contains NUL bytes; this looks like a binary file, not YAML");
        cfg_doc_free(doc);
        return NULL;
    }
    return doc_parse(doc, (const unsigned char *)text, len, name, from_set, err);
}

/* JSON spells a character beyond the BMP as a UTF-16 surrogate pair ("\uD83D\uDE00"); YAML, which reads
 * our JSON files, takes "\U0001F600" and refuses lone surrogates. In a JSON document (its first character
 * '{' or '[') each pair inside a string is rewritten in place to the YAML form (10 characters for 12);
 * anything else is left for the parser to judge. Returns the new length. */
static size_t json_surrogates(char *t, size_t len)
{
    size_t i = 0;
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    if (i == len || (t[i] != '{' && t[i] != '['))
        return len;
    size_t o = 0;
    bool in_str = false;
    while (i < len) {
        const char c = t[i];
        if (in_str && c == '\\' && i + 1 < len) {
            char u[11];
            if (i + 12 <= len && util_json_pair_to_yaml(t + i, u)) {
                memcpy(t + o, u, 10);
                o += 10;
                i += 12;
                continue;
            }
            t[o++] = t[i++];
            t[o++] = t[i++];
            continue;
        }
        if (c == '"')
            in_str = !in_str;
        t[o++] = t[i++];
    }
    t[o] = '\0';
    return o;
}

cfg_doc *cfg_doc_load_file(const char *path, cfg_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        cfg_error_plain(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        cfg_error_plain(err, "%s: not a regular file", path);
        return NULL;
    }
    if ((unsigned long long)st.st_size > CFG_MAX_FILE_BYTES) {
        cfg_error_plain(err, "%s: file is %lld bytes; the limit is %u bytes", path, (long long)st.st_size,
                        CFG_MAX_FILE_BYTES);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        cfg_error_plain(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    util_input_note(path);
    /* Read to the end rather than st_size bytes: a kernel file (/proc, /sys) says 0 and still has
     * contents, which must be judged as they are, not called empty. */
    size_t cap = (size_t)st.st_size + 1, size = 0;
    char *text = util_xmalloc(cap + 1);
    for (;;) {
        if (size == cap) {
            cap *= 2;
            text = util_xrealloc(text, cap + 1);
        }
        const size_t got = fread(text + size, 1, cap - size, f);
        size += got;
        if (got == 0 || size > CFG_MAX_FILE_BYTES)
            break;
    }
    const bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || size > CFG_MAX_FILE_BYTES) {
        if (bad)
            cfg_error_plain(err, "%s: read error", path);
        else
            cfg_error_plain(err, "%s: file holds more than %u bytes, the limit", path, CFG_MAX_FILE_BYTES);
        free(text);
        return NULL;
    }
    text[size] = '\0';
    size = json_surrogates(text, size);
    cfg_doc *doc = cfg_doc_load_text(text, size, path, false, err);
    free(text);
    if (doc)
        doc->path = util_xstrdup(path);
    return doc;
}

/* ---------------- copies ---------------- */

static const char *clone_src(cfg_doc *to, const cfg_doc *from, const char *src)
{
    /* A node's source name is one of the document's own strings (its path, a --set argument): the copy
     * gets its own, at the same index. */
    char *const *mine = from->strings.data;
    for (size_t i = 0; i < from->strings.count; i++)
        if (mine[i] == src)
            return ((char **)to->strings.data)[i];
    return src; /* a static name ("--set", the schema's): shared safely */
}

static cfg_node *clone_node(cfg_doc *to, const cfg_doc *from, const cfg_node *n)
{
    cfg_node *c = doc_new_node(to, n->kind, clone_src(to, from, n->src), n->from_set, n->line, n->col);
    c->quoted = n->quoted;
    c->scalar = n->scalar ? util_xstrdup(n->scalar) : NULL;
    if (n->n > 0) {
        c->n = c->cap = n->n;
        c->items = util_xmalloc(n->n * sizeof(cfg_node *));
        if (n->keys)
            c->keys = util_xmalloc(n->n * sizeof(cfg_node *));
        for (size_t i = 0; i < n->n; i++) {
            c->items[i] = clone_node(to, from, n->items[i]);
            if (n->keys)
                c->keys[i] = clone_node(to, from, n->keys[i]);
        }
    }
    return c;
}

cfg_doc *cfg_doc_clone(const cfg_doc *doc)
{
    cfg_doc *c = doc_new();
    char *const *strs = doc->strings.data;
    for (size_t i = 0; i < doc->strings.count; i++)
        doc_intern(c, strs[i]);
    c->path = doc->path ? util_xstrdup(doc->path) : NULL;
    c->root = doc->root ? clone_node(c, doc, doc->root) : NULL;
    return c;
}

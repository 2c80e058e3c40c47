/* cfg_tree: a YAML (or JSON) document as a tree of nodes that remember where they came from, so
 * every later error can point at file:line:col — or at the --set argument that produced it.
 *
 * Loading is deliberately strict: aliases and anchors are rejected (no alias bombs), duplicate keys
 * are errors, node count, depth and file size are bounded, and binary input is refused up front. */
#ifndef VPSIM_CFG_TREE_H
#define VPSIM_CFG_TREE_H

#include <stdbool.h>
#include <stddef.h>

#define CFG_MAX_FILE_BYTES (64u << 20) /* a saved plan of a big scenario is a few MiB */
#define CFG_MAX_NODES 4000000
#define CFG_MAX_DEPTH 64

typedef struct cfg_error {
    char msg[1024];
} cfg_error;

typedef enum { CFG_NODE_SCALAR, CFG_NODE_SEQ, CFG_NODE_MAP } cfg_node_kind;

typedef struct cfg_node cfg_node;
struct cfg_node {
    cfg_node_kind kind;
    const char *src;   /* file path, or "--set KEY=VALUE"; owned by the doc */
    bool from_set;     /* src is a --set argument, not a file */
    int line, col;     /* 1-based position of the node's first character */
    char *scalar;      /* CFG_NODE_SCALAR: the text */
    bool quoted;       /* scalar was quoted: never a number/bool/null */
    size_t n;          /* SEQ: items; MAP: pairs */
    cfg_node **items;  /* SEQ items, or MAP values */
    cfg_node **keys;   /* MAP keys (scalars) */
    size_t cap;
};

/* A document owns all of its nodes and source names. */
typedef struct cfg_doc cfg_doc;

/* Parse a file. Returns NULL with err filled ("file:line:col: message"). */
cfg_doc *cfg_doc_load_file(const char *path, cfg_error *err);
/* Parse text held in memory; `src` names it in errors. `from_set` marks --set arguments. */
cfg_doc *cfg_doc_load_text(const char *text, size_t len, const char *src, bool from_set, cfg_error *err);
void cfg_doc_free(cfg_doc *doc);
cfg_node *cfg_doc_root(cfg_doc *doc);
/* A deep copy that owns its own nodes and names; adopted documents are not copied (their nodes are not
 * reachable from a loaded file's root). */
cfg_doc *cfg_doc_clone(const cfg_doc *doc);
/* cfg_doc_load_file through a per-process cache of parsed files (cfg_doc_cache.c): a copy of the parse,
 * parsed again when the file's bytes differ from those it was parsed from. For loaders that
 * read the same files again and again (a sweep loads its scenario's files at every point). */
cfg_doc *cfg_doc_load_file_cached(const char *path, cfg_error *err);
/* Adopt another document's nodes so they live as long as `doc`. */
void cfg_doc_adopt(cfg_doc *doc, cfg_doc *other);

/* Map lookup; NULL when absent or node is not a map. */
cfg_node *cfg_map_get(const cfg_node *map, const char *key);
/* Find a node by dotted path ("parallel.tp"); NULL when absent. */
cfg_node *cfg_node_at(const cfg_node *root, const char *dotted);
/* Set map[key] = value (replacing any existing value); map must be a map node of doc. */
void cfg_map_put(cfg_doc *doc, cfg_node *map, const char *key, cfg_node *value);
/* New empty map node owned by doc, positioned like `where`. */
cfg_node *cfg_node_new_map(cfg_doc *doc, const cfg_node *where);

/* Format an error at a node: "file:line:col: message" or "--set 'k=v': message". */
void cfg_errorf(cfg_error *err, const cfg_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Error with no node (file level). */
void cfg_error_plain(cfg_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

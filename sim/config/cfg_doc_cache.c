/* cfg_doc_cache: parsed YAML files kept for the life of the process, handed out as copies. A sweep
 * loads its scenario, model, draft and system files at every point; parsing them again was most of a
 * point's time, a copy of the tree is a small part of it. The file is read each time and its bytes
 * compared with those the cached parse came from (a modification time can stay the same over two
 * writes: the kernel's file clock ticks in milliseconds), so an edited file is never served stale.
 * Errors are not cached: a bad file is reported by cfg_doc_load_file each time. */
#include "cfg_tree.h"

#include "../util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DOC_CACHE_SLOTS 16 /* a sweep reads four files; a compare a few per variant */

typedef struct cached_doc {
    char *path;
    char *text; /* the bytes the parse came from */
    size_t len;
    cfg_doc *doc;
} cached_doc;

static cached_doc cache[DOC_CACHE_SLOTS];
static unsigned next_victim;

/* The file's bytes, or NULL when it is not a regular file of at most CFG_MAX_FILE_BYTES that reads
 * whole (cfg_doc_load_file then says why). */
static char *read_regular(const char *path, size_t *len)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > CFG_MAX_FILE_BYTES)
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = util_xmalloc((size_t)st.st_size + 1);
    *len = fread(text, 1, (size_t)st.st_size + 1, f);
    const bool whole = !ferror(f) && *len == (size_t)st.st_size;
    fclose(f);
    if (!whole) { /* grew while read, or a kernel file that reports no size: the plain loader judges it */
        free(text);
        return NULL;
    }
    return text;
}

static void drop(cached_doc *c)
{
    free(c->path);
    free(c->text);
    cfg_doc_free(c->doc);
    *c = (cached_doc){0};
}

cfg_doc *cfg_doc_load_file_cached(const char *path, cfg_error *err)
{
    size_t len = 0;
    char *text = read_regular(path, &len);
    if (!text)
        return cfg_doc_load_file(path, err);
    for (int i = 0; i < DOC_CACHE_SLOTS; i++)
        if (cache[i].path && strcmp(cache[i].path, path) == 0) {
            if (cache[i].len == len && memcmp(cache[i].text, text, len) == 0) {
                free(text);
                util_input_note(path); /* read as an input all the same: no output may replace it */
                return cfg_doc_clone(cache[i].doc);
            }
            drop(&cache[i]);
        }
    cfg_doc *doc = cfg_doc_load_file(path, err);
    if (!doc) {
        free(text);
        return NULL;
    }
    int slot = -1;
    for (int i = 0; i < DOC_CACHE_SLOTS && slot < 0; i++)
        if (!cache[i].path)
            slot = i;
    if (slot < 0) {
        slot = (int)(next_victim++ % DOC_CACHE_SLOTS);
        drop(&cache[slot]);
    }
    cache[slot] = (cached_doc){.path = util_xstrdup(path), .text = text, .len = len, .doc = doc};
    return cfg_doc_clone(doc);
}

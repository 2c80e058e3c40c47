/* The partial file of `vpsim sweep` (FILE.csv.partial): what identifies the sweep, and its records.
 *
 *   # vpsim sweep partial 3
 *   # scenario DIGEST PATH        one line per input file, DIGEST = FNV-1a 64 of its bytes
 *   # file DIGEST PATH            (the model, draft and system files the scenarios read)
 *   # set DIGEST                  the --set list; then "# vary DIGEST", "# backend DIGEST"
 *   r CSV ROW                     every physical row line, prefixed
 *   =INDEX DIGEST                 commit: the rows since the last commit belong to scenario INDEX;
 *                                 DIGEST = FNV-1a 64 of the index and those rows
 *
 * The prefix is what keeps a value such as "=1" (a varied name) from being read as a commit line, the
 * header's digests what keep a resume from mixing rows of an edited scenario with new ones, and each
 * record's digest what keeps a hand-edited row out of the result (it is modelled again). */
#include "sweep.h"

#include "../util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SWEEP_FORMAT_LINE "# vpsim sweep partial 4\n"

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

#define FNV_START 1469598103934665603ULL

/* Digest of a file's bytes; "missing" when it cannot be read (the sweep then fails on it anyway). */
static void file_digest(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(out, len, "missing");
        return;
    }
    uint64_t h = FNV_START;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        h = fnv1a(h, chunk, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad)
        snprintf(out, len, "unreadable");
    else
        snprintf(out, len, "%016llx", (unsigned long long)h);
}

static void add_file(util_buf *files, const char *path)
{
    if (!path)
        return;
    /* Listed once, in the order first met; a path holds no newline in a file we could load. */
    size_t plen = strlen(path);
    for (const char *p = files->s; p && *p;) {
        const char *nl = strchr(p, '\n');
        if ((size_t)(nl - p) == plen && !strncmp(p, path, plen))
            return;
        p = nl + 1;
    }
    util_buf_printf(files, "%s\n", path);
}

/* The files scenario `sets` reads; falls back to nothing when it does not load (its rows then carry
 * the error, and the --set / --vary digests still key them). */
static void scenario_files(const sweep *sw, const char *const *sets, int n, util_buf *files)
{
    cfg_scenario sc;
    cfg_error err;
    if (cfg_scenario_load(sw->scenario_path, sets, n, sw->system_path, &sc, &err))
        return;
    add_file(files, sc.model_path);
    add_file(files, sc.draft_path);
    add_file(files, sc.system_path);
    cfg_scenario_free(&sc);
}

static bool is_file_key(const char *key)
{
    return !strcmp(key, "model") || !strcmp(key, "draft") || !strcmp(key, "system");
}

static uint64_t hash_str(uint64_t h, const char *s) { return fnv1a(h, s, strlen(s) + 1); }

void sweep_make_header(sweep *sw)
{
    /* The files of the first scenario, then of each value of a --vary that names a file (with the
     * other --vary keys at their first value): the only ways a sweep reads other files. */
    const char *sets[CFG_MAX_SETS + SWEEP_MAX_VARY];
    char *owned[SWEEP_MAX_VARY];
    int n = sw->n_sets;
    for (int i = 0; i < n; i++)
        sets[i] = sw->sets[i];
    for (int k = 0; k < sw->n_vary; k++)
        sets[n + k] = owned[k] = util_xasprintf("%s=%s", sw->v[k].key, sw->v[k].values[0]);
    util_buf files = {0};
    scenario_files(sw, sets, n + sw->n_vary, &files);
    for (int k = 0; k < sw->n_vary; k++) {
        if (!is_file_key(sw->v[k].key))
            continue;
        for (int j = 1; j < sw->v[k].n; j++) {
            char *one = util_xasprintf("%s=%s", sw->v[k].key, sw->v[k].values[j]);
            sets[n + k] = one;
            scenario_files(sw, sets, n + sw->n_vary, &files);
            free(one);
        }
        sets[n + k] = owned[k];
    }
    for (int k = 0; k < sw->n_vary; k++)
        free(owned[k]);

    util_buf h = {0};
    char d[32];
    util_buf_printf(&h, SWEEP_FORMAT_LINE);
    file_digest(sw->scenario_path, d, sizeof(d));
    util_buf_printf(&h, "# scenario %s %s\n", d, sw->scenario_path);
    for (const char *p = files.s; p && *p;) {
        const char *nl = strchr(p, '\n');
        char *path = util_xstrndup(p, (size_t)(nl - p));
        file_digest(path, d, sizeof(d));
        util_buf_printf(&h, "# file %s %s\n", d, path);
        free(path);
        p = nl + 1;
    }
    util_buf_free(&files);
    uint64_t s = FNV_START, v = FNV_START, b = FNV_START;
    s = hash_str(s, sw->system_path ? sw->system_path : "");
    for (int i = 0; i < sw->n_sets; i++)
        s = hash_str(s, sw->sets[i]);
    for (int k = 0; k < sw->n_vary; k++) {
        v = hash_str(v, sw->v[k].key);
        for (int j = 0; j < sw->v[k].n; j++)
            v = hash_str(v, sw->v[k].values[j]);
        v = hash_str(v, "");
    }
    for (int i = 0; i < sw->n_bes; i++)
        b = hash_str(b, cfg_backend_names[sw->bes[i]]);
    util_buf_printf(&h, "# set %016llx\n# vary %016llx\n# backend %016llx\n", (unsigned long long)s,
                    (unsigned long long)v, (unsigned long long)b);
    free(sw->header);
    sw->header = h.s;
}

/* Why header `got` (the file's) is not `want` (this sweep's): the first input that differs. */
static void explain_mismatch(const char *want, const char *got, char *why, size_t len)
{
    if (strncmp(got, SWEEP_FORMAT_LINE, strlen(SWEEP_FORMAT_LINE)) != 0) {
        snprintf(why, len, "it was written by an older vpsim or is not a sweep's partial file");
        return;
    }
    static const char *const what[][2] = {{"# set ", "the --set options (or --system) differ"},
                                          {"# vary ", "the --vary keys or values differ"},
                                          {"# backend ", "the --backend list differs"}};
    for (const char *w = want; *w;) {
        const char *nl = strchr(w, '\n');
        size_t wl = (size_t)(nl - w) + 1;
        bool found = false;
        for (const char *g = got; *g && !found;) {
            const char *gn = strchr(g, '\n');
            found = (size_t)(gn - g) + 1 == wl && !strncmp(g, w, wl);
            g = gn + 1;
        }
        if (!found) {
            for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++)
                if (!strncmp(w, what[i][0], strlen(what[i][0]))) {
                    snprintf(why, len, "%s", what[i][1]);
                    return;
                }
            /* "# scenario DIGEST PATH" or "# file DIGEST PATH": was PATH there with another digest? */
            const char *sp = strchr(w + 2, ' ');
            const char *path = sp ? strchr(sp + 1, ' ') : NULL;
            int pl = path ? (int)(nl - path - 1) : 0;
            char needle[4200];
            snprintf(needle, sizeof(needle), " %.*s\n", pl, path ? path + 1 : "");
            if (path && strstr(got, needle))
                snprintf(why, len, "%.*s changed since the sweep began (its contents differ)", pl, path + 1);
            else
                snprintf(why, len, "the scenarios now read %.*s, which the partial file's sweep did not", pl,
                         path ? path + 1 : "?");
            return;
        }
        w = nl + 1;
    }
    snprintf(why, len, "it reads files this sweep does not");
}

static uint64_t record_digest(const char *rows, long long idx)
{
    return fnv1a(fnv1a(FNV_START, &idx, sizeof(idx)), rows, strlen(rows));
}

static void encode_record(util_buf *out, const char *rows, long long idx)
{
    for (const char *p = rows; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        util_buf_printf(out, "r %.*s\n", (int)n, p);
        p += n + (nl ? 1 : 0);
    }
    util_buf_printf(out, "=%lld %016llx\n", idx, (unsigned long long)record_digest(rows, idx));
}

void sweep_append_record(FILE *part, const char *rows, long long idx)
{
    util_buf b = {0};
    encode_record(&b, rows, idx);
    fputs(b.s, part);
    util_buf_free(&b);
}

long long sweep_load_partial(sweep *sw, util_buf *valid, char *why, size_t len)
{
    FILE *f = fopen(sw->partial_path, "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long long done = 0, edited = 0;
    util_buf pending = {0}, header = {0};
    bool in_header = true, mismatch = false;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] != '\n')
            break; /* torn last line: the sweep died while writing it */
        if (in_header && line[0] == '#') {
            util_buf_printf(&header, "%s", line);
            continue;
        }
        if (in_header) {
            in_header = false;
            if ((mismatch = !header.s || strcmp(header.s, sw->header) != 0))
                break;
        }
        if (line[0] == 'r' && line[1] == ' ') {
            util_buf_printf(&pending, "%s", line + 2);
            continue;
        }
        char *end = NULL;
        errno = 0;
        long long idx = line[0] == '=' ? strtoll(line + 1, &end, 10) : -1;
        char *dend = NULL;
        const unsigned long long digest = end && *end == ' ' ? strtoull(end + 1, &dend, 16) : 0;
        if (!end || end == line + 1 || !dend || dend == end + 1 || *dend != '\n' || errno || idx < 0 ||
            idx >= sw->total)
            break; /* not a record this format writes: keep what came before it */
        const char *rows = pending.s ? pending.s : "";
        if (digest != record_digest(rows, idx))
            edited++; /* not what the sweep wrote: modelled again, never copied into the result */
        else if (!sw->rows[idx]) {
            sw->rows[idx] = util_xstrdup(rows);
            done++;
        }
        pending.len = 0;
        if (pending.s)
            pending.s[0] = '\0';
    }
    free(line);
    fclose(f);
    util_buf_free(&pending);
    /* A header cut short (the sweep died while writing it) is this sweep's when what is there is the
     * start of this sweep's header: nothing was done yet, so there is nothing to resume. */
    if (in_header && header.s)
        mismatch = strncmp(header.s, sw->header, strlen(header.s)) != 0;
    if (edited)
        fprintf(stderr, "vpsim sweep: note: %lld record(s) of %s do not match their digest (edited by hand?): "
                        "those scenarios are modelled again\n",
                edited, sw->partial_path);
    if (mismatch) {
        explain_mismatch(sw->header, header.s ? header.s : "", why, len);
        util_buf_free(&header);
        return -1;
    }
    util_buf_free(&header);
    /* Rows after the last commit line belong to an unfinished scenario and are dropped; what is kept
     * is rewritten in scenario order. */
    util_buf_printf(valid, "%s", sw->header);
    for (long long i = 0; i < sw->total; i++)
        if (sw->rows[i])
            encode_record(valid, sw->rows[i], i);
    return done;
}

int sweep_check_out(const char *out)
{
    if (!*out)
        return util_usage_error("sweep", "--out '': expected the CSV file to write");
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode))
        return util_usage_error("sweep", "--out %s: %s; the sweep writes a CSV file there", out,
                               S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
    char *dir = util_dirname(out);
    int rc = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = util_usage_error("sweep", "--out %s: directory %s does not exist", out, dir);
    free(dir);
    if (rc)
        return rc;
    char *partial = util_xasprintf("%s.partial", out);
    if (stat(partial, &st) == 0 && !S_ISREG(st.st_mode))
        rc = util_usage_error("sweep", "--out %s: %s (where the sweep keeps its progress) is not a regular file", out,
                             partial);
    free(partial);
    return rc;
}

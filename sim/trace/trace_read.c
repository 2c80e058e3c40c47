/* trace_read: one rank's PyTorch profiler trace, streamed.
 *
 * Why libyaml and not a hand-written JSON reader: it is already a dependency (the config layer), it is a
 * well-kept, fuzzed event parser, and its event API (yaml_parser_parse) hands out one scalar or bracket
 * at a time with its position, so a trace of hundreds of MB streams through in constant memory with
 * every error placed. JSON is YAML's flow style; what YAML allows beyond JSON (plain words, single
 * quotes, anchors, tags, several documents) is refused here, and what JSON has that libyaml lacks
 * (surrogate pairs) the stream's filter rewrites (trace_stream.c). libyaml's one limit that matters, a
 * 1024-character implicit key, applies to keys only; a trace's keys are short and its long strings (C++
 * kernel names of several KB) are values. docs/commands.md "vpsim import-trace" says the same. */
#include "trace_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define TRACE_MAX_DEPTH 64

typedef struct reader {
    yaml_parser_t p;
    trace_stream *st;
    const char *path;
    trace_rank *r;
    trace_keep_fn keep;
    void *keep_ctx;
    trace_error *err;
    int depth;
} reader;

/* ---------------- names ---------------- */

static unsigned long long hash_bytes(const char *s, size_t n)
{
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void rehash(trace_rank *r)
{
    free(r->name_hash);
    r->hash_cap = r->hash_cap ? 2 * r->hash_cap : 1024;
    r->name_hash = util_xcalloc((size_t)r->hash_cap, sizeof(int));
    for (int i = 0; i < r->n_names; i++) {
        size_t h = hash_bytes(r->names[i], strlen(r->names[i])) & (size_t)(r->hash_cap - 1);
        while (r->name_hash[h])
            h = (h + 1) & (size_t)(r->hash_cap - 1);
        r->name_hash[h] = i + 1;
    }
}

int trace_intern(trace_rank *r, const char *s, size_t len)
{
    if (2 * (r->n_names + 1) > r->hash_cap)
        rehash(r);
    size_t h = hash_bytes(s, len) & (size_t)(r->hash_cap - 1);
    while (r->name_hash[h]) {
        const char *have = r->names[r->name_hash[h] - 1];
        if (strlen(have) == len && memcmp(have, s, len) == 0)
            return r->name_hash[h] - 1;
        h = (h + 1) & (size_t)(r->hash_cap - 1);
    }
    if (r->n_names == r->cap_names) {
        r->cap_names = r->cap_names ? 2 * r->cap_names : 256;
        r->names = util_xrealloc(r->names, (size_t)r->cap_names * sizeof(char *));
    }
    r->names[r->n_names] = util_xstrndup(s, len);
    r->name_hash[h] = r->n_names + 1;
    return r->n_names++;
}

const char *trace_name(const trace_rank *r, int id) { return id >= 0 && id < r->n_names ? r->names[id] : "?"; }

/* ---------------- errors ---------------- */

static int fail_mark(reader *rd, size_t char_index, size_t line, size_t col, const char *what, const char *ctx)
{
    const long long at = trace_stream_offset_of(rd->path, (long long)char_index, true);
    snprintf(rd->err->msg, sizeof(rd->err->msg), "%s: byte %lld%s (line %zu, column %zu): %s%s%s", rd->path, at,
             rd->st->gzip ? " of the decompressed JSON" : "", line + 1, col + 1, what, ctx ? " " : "", ctx ? ctx : "");
    return -1;
}

static int fail_event(reader *rd, const yaml_event_t *ev, const char *what)
{
    return fail_mark(rd, ev->start_mark.index, ev->start_mark.line, ev->start_mark.column, what, NULL);
}

static int parser_failed(reader *rd)
{
    const yaml_parser_t *p = &rd->p;
    if (rd->st->failed) {
        snprintf(rd->err->msg, sizeof(rd->err->msg), "%s", rd->st->why);
        return -1;
    }
    char ctx[160] = "";
    if (p->context)
        snprintf(ctx, sizeof(ctx), "(%s)", p->context);
    if (p->error == YAML_READER_ERROR) {
        const long long at = trace_stream_offset_of(rd->path, (long long)p->problem_offset, false);
        snprintf(rd->err->msg, sizeof(rd->err->msg), "%s: byte %lld: %s (not UTF-8 text)", rd->path, at,
                 p->problem ? p->problem : "cannot read");
        return -1;
    }
    const yaml_mark_t *m = &p->problem_mark;
    /* A document that ends inside a bracket is the common cut: say so beside libyaml's words. */
    const bool cut = rd->st->eof && m->index + 2 >= (size_t)rd->st->out_chars;
    char what[400];
    snprintf(what, sizeof(what), "%s%s", p->problem ? p->problem : "not JSON",
             cut ? " at the end of the file: the trace is cut short (truncated)" : "");
    return fail_mark(rd, m->index, m->line, m->column, what, ctx[0] ? ctx : NULL);
}

/* ---------------- events, checked to be JSON ---------------- */

static bool json_literal(const char *s, size_t n)
{
    if ((n == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "null", 4))) || (n == 5 && !memcmp(s, "false", 5)))
        return true;
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i == n || s[i] < '0' || s[i] > '9')
        return false;
    if (s[i] == '0')
        i++;
    else
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    if (i < n && s[i] == '.') {
        if (++i == n || s[i] < '0' || s[i] > '9')
            return false;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i == n || s[i] < '0' || s[i] > '9')
            return false;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    return i == n;
}

/* The next event, refused unless JSON could have produced it. 0, or -1 with rd->err set (the event
 * is then already deleted). */
static int next(reader *rd, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&rd->p, ev))
        return parser_failed(rd);
    const char *bad = NULL;
    switch (ev->type) {
    case YAML_ALIAS_EVENT: bad = "not JSON: a YAML alias"; break;
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor || ev->data.scalar.tag)
            bad = "not JSON: a YAML anchor or tag";
        else if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                 !json_literal((const char *)ev->data.scalar.value, ev->data.scalar.length))
            bad = "not JSON: unquoted text (a string needs double quotes; a number, true, false or null none)";
        else if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE &&
                 ev->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE)
            bad = "not JSON: a string must be in double quotes";
        break;
    case YAML_MAPPING_START_EVENT:
        if (ev->data.mapping_start.anchor || ev->data.mapping_start.tag)
            bad = "not JSON: a YAML anchor or tag";
        break;
    case YAML_SEQUENCE_START_EVENT:
        if (ev->data.sequence_start.anchor || ev->data.sequence_start.tag)
            bad = "not JSON: a YAML anchor or tag";
        break;
    default: break;
    }
    if (bad) {
        fail_event(rd, ev, bad);
        yaml_event_delete(ev);
        return -1;
    }
    return 0;
}

/* Skip one value whose first event is `ev` (deleted here). */
static int skip_value(reader *rd, yaml_event_t *ev)
{
    int depth = 0;
    for (;;) {
        const yaml_event_type_t t = ev->type;
        if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
            if (++depth + rd->depth > TRACE_MAX_DEPTH) {
                fail_event(rd, ev, "nested deeper than 64 levels");
                yaml_event_delete(ev);
                return -1;
            }
        } else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT)
            depth--;
        yaml_event_delete(ev);
        if (depth == 0)
            return 0;
        if (next(rd, ev))
            return -1;
    }
}

/* A key of the mapping being read: 1 with `ev` holding it, 0 at the mapping's end, -1 on error. */
static int next_key(reader *rd, yaml_event_t *ev)
{
    if (next(rd, ev))
        return -1;
    if (ev->type == YAML_MAPPING_END_EVENT) {
        yaml_event_delete(ev);
        return 0;
    }
    if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
        fail_event(rd, ev, "not JSON: an object's key must be a string");
        yaml_event_delete(ev);
        return -1;
    }
    return 1;
}

static bool key_is(const yaml_event_t *ev, const char *k)
{
    return ev->data.scalar.length == strlen(k) && !memcmp(ev->data.scalar.value, k, ev->data.scalar.length);
}

/* A number value (quoted or not: some writers quote ids). NAN when it is none. */
static double scalar_num(const yaml_event_t *ev)
{
    if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.length == 0 || ev->data.scalar.length > 60)
        return NAN;
    char buf[64], *end;
    memcpy(buf, ev->data.scalar.value, ev->data.scalar.length);
    buf[ev->data.scalar.length] = '\0';
    const double v = strtod(buf, &end);
    return *end == '\0' ? v : NAN;
}

/* ---------------- one trace event ---------------- */

typedef struct event_fields {
    char ph[8], cat[32];
    char *name;
    size_t name_len;
    double ts, dur, tid, stream, corr;
    yaml_mark_t at;
} event_fields;

static int read_args(reader *rd, event_fields *f)
{
    yaml_event_t k, v;
    int more;
    while ((more = next_key(rd, &k)) == 1) {
        double *slot = key_is(&k, "stream") ? &f->stream : key_is(&k, "correlation") ? &f->corr : NULL;
        yaml_event_delete(&k);
        if (next(rd, &v))
            return -1;
        if (slot && v.type == YAML_SCALAR_EVENT) {
            *slot = scalar_num(&v);
            yaml_event_delete(&v);
        } else if (skip_value(rd, &v))
            return -1;
    }
    return more;
}

static void copy_short(char *dst, size_t cap, const yaml_event_t *v)
{
    size_t n = v->data.scalar.length < cap - 1 ? v->data.scalar.length : cap - 1;
    memcpy(dst, v->data.scalar.value, n);
    dst[n] = '\0';
}

static bool cat_is(const char *cat, const char *a) { return strcasecmp(cat, a) == 0; }

/* A stream, thread or correlation id is a number of the trace: one an int (a long long) cannot hold, as
 * a hostile or broken trace may give (1e22), reads as absent, like a missing one, instead of as the
 * conversion's undefined result (the fuzz harness found `"stream": 6.7e21`). NaN is absent too. */
static bool id_int(double v) { return v > (double)INT_MIN - 1.0 && v < (double)INT_MAX + 1.0; }
static bool id_ll(double v) { return v > -9.2e18 && v < 9.2e18; }

static void keep_event(reader *rd, const event_fields *f)
{
    trace_rank *r = rd->r;
    r->events++;
    if (strcmp(f->ph, "X") != 0 || isnan(f->ts))
        return;
    const double dur = isnan(f->dur) ? 0.0 : f->dur;
    const char *name = f->name ? f->name : "";
    if (cat_is(f->cat, "kernel") || cat_is(f->cat, "gpu_memcpy") || cat_is(f->cat, "gpu_memset")) {
        trace_kernel *k = util_vec_push(&r->kernels);
        k->ts = f->ts;
        k->dur = dur;
        k->corr = id_ll(f->corr) ? (long long)f->corr : -1;
        k->stream = id_int(f->stream) ? (int)f->stream : id_int(f->tid) ? (int)f->tid : 0;
        k->name = trace_intern(r, name, f->name_len);
        k->kind = TRACE_KIND_UNMAPPED;
        k->phase = -1;
        return;
    }
    const bool runtime = cat_is(f->cat, "cuda_runtime") || cat_is(f->cat, "cuda_driver");
    if (runtime && id_ll(f->corr)) {
        trace_span *s = util_vec_push(&r->launches);
        *s = (trace_span){f->ts, dur, (long long)f->corr, trace_intern(r, name, f->name_len), -1, false};
        return;
    }
    const bool gpu = cat_is(f->cat, "gpu_user_annotation");
    if ((gpu || cat_is(f->cat, "user_annotation") || cat_is(f->cat, "python_function")) &&
        rd->keep && rd->keep(name, rd->keep_ctx)) {
        trace_span *s = util_vec_push(&r->marks);
        /* kineto writes a gpu_user_annotation per stream, with the stream as its tid */
        const int stream = gpu && id_int(f->tid) ? (int)f->tid : -1;
        *s = (trace_span){f->ts, dur, -1, trace_intern(r, name, f->name_len), stream, gpu};
    }
}

/* One element of traceEvents; `ev` is its first event (deleted here). */
static int read_event(reader *rd, yaml_event_t *ev)
{
    if (ev->type != YAML_MAPPING_START_EVENT) {
        fail_event(rd, ev, "not a trace: each element of \"traceEvents\" is an object");
        yaml_event_delete(ev);
        return -1;
    }
    event_fields f = {.ts = NAN, .dur = NAN, .tid = NAN, .stream = NAN, .corr = NAN, .at = ev->start_mark};
    yaml_event_delete(ev);
    rd->depth++;
    yaml_event_t k, v;
    int more, rc = 0;
    while (rc == 0 && (more = next_key(rd, &k)) == 1) {
        const bool is_ph = key_is(&k, "ph"), is_cat = key_is(&k, "cat"), is_name = key_is(&k, "name");
        const bool is_ts = key_is(&k, "ts"), is_dur = key_is(&k, "dur"), is_tid = key_is(&k, "tid");
        const bool is_args = key_is(&k, "args");
        yaml_event_delete(&k);
        if (next(rd, &v)) {
            rc = -1;
            break;
        }
        if (is_args && v.type == YAML_MAPPING_START_EVENT) {
            yaml_event_delete(&v);
            rd->depth++;
            rc = read_args(rd, &f) < 0 ? -1 : 0;
            rd->depth--;
            continue;
        }
        if (v.type != YAML_SCALAR_EVENT) {
            rc = skip_value(rd, &v);
            continue;
        }
        if (is_ph)
            copy_short(f.ph, sizeof(f.ph), &v);
        else if (is_cat)
            copy_short(f.cat, sizeof(f.cat), &v);
        else if (is_name) {
            free(f.name);
            f.name = util_xstrndup((const char *)v.data.scalar.value, v.data.scalar.length);
            f.name_len = v.data.scalar.length;
        } else if (is_ts || is_dur || is_tid) {
            const double x = scalar_num(&v);
            if ((is_ts || is_dur) && !isnan(x) && !(fabs(x) < 1e15)) {
                fail_event(rd, &v, "a time (\"ts\" or \"dur\") beyond 1e15 us");
                rc = -1;
            }
            *(is_ts ? &f.ts : is_dur ? &f.dur : &f.tid) = x;
        }
        yaml_event_delete(&v);
    }
    if (rc == 0 && more < 0)
        rc = -1;
    rd->depth--;
    if (rc == 0) {
        if (!strcmp(f.ph, "X") && !isnan(f.dur) && f.dur < 0)
            rc = fail_mark(rd, f.at.index, f.at.line, f.at.column, "an event with a negative \"dur\"", NULL);
        else
            keep_event(rd, &f);
    }
    free(f.name);
    return rc;
}

static int read_events(reader *rd)
{
    yaml_event_t ev;
    rd->depth++;
    for (;;) {
        if (next(rd, &ev))
            return -1;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (read_event(rd, &ev))
            return -1;
    }
    rd->depth--;
    return 0;
}

/* distributedInfo: {"backend": "nccl", "rank": R, "world_size": N} (kineto writes it under torch.distributed). */
static int read_dist(reader *rd)
{
    yaml_event_t k, v;
    int more;
    while ((more = next_key(rd, &k)) == 1) {
        const bool is_rank = key_is(&k, "rank"), is_world = key_is(&k, "world_size");
        yaml_event_delete(&k);
        if (next(rd, &v))
            return -1;
        if (v.type == YAML_SCALAR_EVENT && (is_rank || is_world)) {
            const double x = scalar_num(&v);
            if (!isnan(x) && x >= 0 && x < 1e6)
                *(is_rank ? &rd->r->rank : &rd->r->world) = (int)x;
            yaml_event_delete(&v);
        } else if (skip_value(rd, &v))
            return -1;
    }
    return more;
}

static int read_root(reader *rd)
{
    yaml_event_t ev;
    if (next(rd, &ev))
        return -1;
    const yaml_event_type_t t = ev.type;
    const yaml_mark_t root_at = ev.start_mark;
    yaml_event_delete(&ev);
    if (t == YAML_SEQUENCE_START_EVENT) /* the JSON array form: the events alone */
        return read_events(rd);
    bool have_events = false;
    rd->depth++;
    yaml_event_t k, v;
    int more;
    while ((more = next_key(rd, &k)) == 1) {
        const bool is_events = key_is(&k, "traceEvents"), is_dist = key_is(&k, "distributedInfo");
        const bool is_base = key_is(&k, "baseTimeNanoseconds");
        yaml_event_delete(&k);
        if (next(rd, &v))
            return -1;
        if (is_events) {
            if (v.type != YAML_SEQUENCE_START_EVENT) {
                fail_event(rd, &v, "not a trace: \"traceEvents\" must be an array");
                yaml_event_delete(&v);
                return -1;
            }
            yaml_event_delete(&v);
            if (read_events(rd))
                return -1;
            have_events = true;
        } else if (is_dist && v.type == YAML_MAPPING_START_EVENT) {
            yaml_event_delete(&v);
            if (read_dist(rd) < 0)
                return -1;
        } else if (is_base && v.type == YAML_SCALAR_EVENT) {
            /* Whole nanoseconds since the epoch: exact in a long long, not in a double of microseconds. */
            char buf[32];
            copy_short(buf, sizeof(buf), &v);
            long long ns;
            if (util_parse_ll(buf, &ns) == 0) {
                rd->r->base_ns = ns;
                rd->r->have_base = true;
            }
            yaml_event_delete(&v);
        } else if (skip_value(rd, &v))
            return -1;
    }
    if (more < 0)
        return -1;
    if (!have_events)
        return fail_mark(rd, root_at.index, root_at.line, root_at.column,
                         "not a Chrome trace: the object has no \"traceEvents\" array", NULL);
    return 0;
}

static int cmp_kernel(const void *a, const void *b)
{
    const trace_kernel *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts ? 1 : (x->stream > y->stream) - (x->stream < y->stream);
}

static int cmp_span(const void *a, const void *b)
{
    const trace_span *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

int trace_read(const char *path, trace_keep_fn keep, void *keep_ctx, trace_rank *out, trace_error *err)
{
    memset(out, 0, sizeof(*out));
    out->path = util_xstrdup(path);
    out->rank = out->world = -1;
    util_vec_init(&out->kernels, sizeof(trace_kernel));
    util_vec_init(&out->marks, sizeof(trace_span));
    util_vec_init(&out->launches, sizeof(trace_span));
    util_vec_init(&out->phases, sizeof(trace_phase));
    trace_stream *st = util_xmalloc(sizeof(*st));
    if (trace_stream_open(st, path, err)) {
        free(st);
        return -1;
    }
    util_input_note(path);
    reader rd = {.st = st, .path = path, .r = out, .keep = keep, .keep_ctx = keep_ctx, .err = err};
    yaml_parser_initialize(&rd.p);
    yaml_parser_set_input(&rd.p, trace_stream_read, st);
    int rc = 0;
    yaml_event_t ev;
    /* stream start, document start, the root value, document end, stream end: nothing after it */
    for (int i = 0; i < 2 && rc == 0; i++) {
        rc = next(&rd, &ev);
        if (rc == 0)
            yaml_event_delete(&ev);
    }
    if (rc == 0)
        rc = read_root(&rd);
    if (rc == 0 && (rc = next(&rd, &ev)) == 0) { /* document end */
        yaml_event_delete(&ev);
        if ((rc = next(&rd, &ev)) == 0) {
            if (ev.type != YAML_STREAM_END_EVENT)
                rc = fail_event(&rd, &ev, "not JSON: more than one value in the file");
            yaml_event_delete(&ev);
        }
    }
    out->bytes = st->out_bytes;
    yaml_parser_delete(&rd.p);
    trace_stream_close(st);
    free(st);
    if (rc == 0 && out->kernels.count == 0) {
        snprintf(err->msg, sizeof(err->msg), "%s: no GPU kernel events (\"ph\": \"X\", \"cat\": \"kernel\") among its %lld "
                 "events: profile with CUDA activities on (torch.profiler activities CPU and CUDA)",
                 path, out->events);
        rc = -1;
    }
    if (rc == 0) {
        /* (qsort of an empty vector's NULL data is undefined: only what has two items is sorted) */
        if (out->kernels.count > 1)
            qsort(out->kernels.data, out->kernels.count, sizeof(trace_kernel), cmp_kernel);
        if (out->marks.count > 1)
            qsort(out->marks.data, out->marks.count, sizeof(trace_span), cmp_span);
        if (out->launches.count > 1)
            qsort(out->launches.data, out->launches.count, sizeof(trace_span), cmp_span);
    }
    return rc;
}

void trace_rank_free(trace_rank *r)
{
    for (int i = 0; i < r->n_names; i++)
        free(r->names[i]);
    free(r->names);
    free(r->name_hash);
    free(r->path);
    util_vec_free(&r->kernels);
    util_vec_free(&r->marks);
    util_vec_free(&r->launches);
    util_vec_free(&r->phases);
    memset(r, 0, sizeof(*r));
}

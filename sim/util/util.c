#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void util_oom(size_t n)
{
    fprintf(stderr, "vpsim: out of memory allocating %zu bytes\n", n);
    exit(VP_EXIT_FAIL);
}

void *util_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        util_oom(n);
    return p;
}

void *util_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        util_oom(count * size);
    return p;
}

void *util_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        util_oom(n);
    return q;
}

char *util_xstrdup(const char *s)
{
    return util_xstrndup(s, strlen(s));
}

char *util_xstrndup(const char *s, size_t n)
{
    char *p = util_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *util_xasprintf(const char *fmt, ...)
{
    util_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    util_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return b.s;
}

void util_vec_init(util_vec *v, size_t item_size)
{
    memset(v, 0, sizeof(*v));
    v->item = item_size;
}

void *util_vec_push(util_vec *v)
{
    if (v->count == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->data = util_xrealloc(v->data, v->cap * v->item);
    }
    void *slot = (char *)v->data + v->count * v->item;
    memset(slot, 0, v->item);
    v->count++;
    return slot;
}

void util_vec_free(util_vec *v)
{
    free(v->data);
    v->data = NULL;
    v->count = v->cap = 0;
}

void util_buf_vprintf(util_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        b->s = util_xrealloc(b->s, cap);
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void util_buf_printf(util_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    util_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void util_buf_free(util_buf *b)
{
    free(b->s);
    memset(b, 0, sizeof(*b));
}

char *util_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return util_xstrdup(".");
    if (slash == path)
        return util_xstrdup("/");
    return util_xstrndup(path, (size_t)(slash - path));
}

char *util_path_join(const char *base_dir, const char *rel)
{
    if (rel[0] == '/' || !base_dir || !base_dir[0] || strcmp(base_dir, ".") == 0)
        return util_xstrdup(rel);
    return util_xasprintf("%s/%s", base_dir, rel);
}

int util_write_file_atomic(const char *path, const char *data, size_t len, char *errbuf, size_t errlen)
{
    char *tmp = util_xasprintf("%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(errbuf, errlen, "cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            snprintf(errbuf, errlen, "cannot write %s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            free(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(errbuf, errlen, "cannot flush %s: %s", tmp, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(errbuf, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

const char *util_fmt_bytes(double bytes, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (fabs(bytes) >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f B", bytes);
    else
        snprintf(buf, len, "%.2f %s", bytes, unit[u]);
    return buf;
}

/* ---------------- JSON writer ---------------- */

void util_json_init(util_json *j, bool pretty)
{
    memset(j, 0, sizeof(*j));
    j->pretty = pretty;
}

static void json_indent(util_json *j)
{
    if (!j->pretty)
        return;
    util_buf_printf(&j->out, "\n");
    for (int i = 0; i < j->depth; i++)
        util_buf_printf(&j->out, "  ");
}

/* Called before every value or key: emits the separator and indentation. */
static void json_pre_value(util_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth > 0) {
        if (j->need_comma[j->depth])
            util_buf_printf(&j->out, ",");
        j->need_comma[j->depth] = true;
        json_indent(j);
    }
}

static void json_open(util_json *j, char c)
{
    json_pre_value(j);
    util_buf_printf(&j->out, "%c", c);
    j->depth++;
    if (j->depth < 64)
        j->need_comma[j->depth] = false;
}

static void json_close(util_json *j, char c)
{
    bool had_items = j->need_comma[j->depth];
    j->depth--;
    if (had_items)
        json_indent(j);
    util_buf_printf(&j->out, "%c", c);
    if (j->depth == 0 && j->pretty)
        util_buf_printf(&j->out, "\n");
}

void util_json_obj_begin(util_json *j) { json_open(j, '{'); }
void util_json_obj_end(util_json *j) { json_close(j, '}'); }
void util_json_arr_begin(util_json *j) { json_open(j, '['); }
void util_json_arr_end(util_json *j) { json_close(j, ']'); }

static void json_write_string(util_json *j, const char *s)
{
    util_buf_printf(&j->out, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': util_buf_printf(&j->out, "\\\""); break;
        case '\\': util_buf_printf(&j->out, "\\\\"); break;
        case '\n': util_buf_printf(&j->out, "\\n"); break;
        case '\t': util_buf_printf(&j->out, "\\t"); break;
        case '\r': util_buf_printf(&j->out, "\\r"); break;
        default:
            if (*p < 0x20)
                util_buf_printf(&j->out, "\\u%04x", *p);
            else
                util_buf_printf(&j->out, "%c", *p);
        }
    }
    util_buf_printf(&j->out, "\"");
}

void util_json_key(util_json *j, const char *key)
{
    json_pre_value(j);
    json_write_string(j, key);
    util_buf_printf(&j->out, j->pretty ? ": " : ":");
    j->after_key = true;
}

void util_json_str(util_json *j, const char *s)
{
    json_pre_value(j);
    if (s)
        json_write_string(j, s);
    else
        util_buf_printf(&j->out, "null");
}

void util_json_int(util_json *j, long long v)
{
    json_pre_value(j);
    util_buf_printf(&j->out, "%lld", v);
}

void util_json_num(util_json *j, double v)
{
    json_pre_value(j);
    if (!isfinite(v))
        util_buf_printf(&j->out, "null");
    else if (v == (double)(long long)v && fabs(v) < 9e15)
        util_buf_printf(&j->out, "%lld", (long long)v);
    else
        util_buf_printf(&j->out, "%.17g", v);
}

void util_json_bool(util_json *j, bool v)
{
    json_pre_value(j);
    util_buf_printf(&j->out, v ? "true" : "false");
}

void util_json_null(util_json *j)
{
    json_pre_value(j);
    util_buf_printf(&j->out, "null");
}

void util_json_kstr(util_json *j, const char *key, const char *s) { util_json_key(j, key); util_json_str(j, s); }
void util_json_kint(util_json *j, const char *key, long long v) { util_json_key(j, key); util_json_int(j, v); }
void util_json_knum(util_json *j, const char *key, double v) { util_json_key(j, key); util_json_num(j, v); }
void util_json_kbool(util_json *j, const char *key, bool v) { util_json_key(j, key); util_json_bool(j, v); }

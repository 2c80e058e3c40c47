/* trace_stream: the bytes of a trace file as libyaml reads them.
 *
 * zlib's gzread decompresses gzip and passes any other file through unchanged, so one path reads
 * `trace.json` and `trace.json.gz` (SGLang and vLLM write either). The filter in front of libyaml does
 * three things a YAML parser cannot: it refuses input that is not JSON at its first character (libyaml
 * would read a YAML file as a mapping); it refuses NUL bytes (binary input); and it rewrites a UTF-16
 * surrogate pair inside a string ("\uD83D\uDE00", JSON's spelling of a character beyond the BMP, which
 * PyTorch writes for such characters in Python names) into "\U0001F600", YAML's spelling, since libyaml
 * refuses surrogates (cfg_tree.c does the same for whole files). */
#include "trace_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int trace_stream_open(trace_stream *s, const char *path, trace_error *err)
{
    memset(s, 0, sizeof(*s));
    s->path = path;
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        snprintf(err->msg, sizeof(err->msg), "%s: cannot open: %s", path, errno ? strerror(errno) : "gzopen failed");
        return -1;
    }
    gzbuffer(gz, 1u << 17);
    s->gz = gz;
    return 0;
}

void trace_stream_close(trace_stream *s)
{
    if (s->gz)
        gzclose((gzFile)s->gz);
    s->gz = NULL;
}

static void emit(trace_stream *s, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        s->ob[s->ob_len++] = p[i];
        s->out_bytes++;
        s->out_chars += (p[i] & 0xC0) != 0x80; /* a UTF-8 lead byte starts a character */
    }
}

static void feed(trace_stream *s, unsigned char c);

/* The pending escape is not a surrogate pair: its first `keep` bytes go out as they are, the rest are
 * read again (one of them may start the next escape). */
static void flush_pending(trace_stream *s, int keep)
{
    unsigned char rest[12];
    const int n_rest = s->npend - keep;
    memcpy(rest, s->pend + keep, (size_t)n_rest);
    emit(s, s->pend, (size_t)keep);
    s->npend = 0;
    for (int i = 0; i < n_rest; i++)
        feed(s, rest[i]);
}

static void feed_escape(trace_stream *s, unsigned char c)
{
    s->pend[s->npend++] = c;
    const int n = s->npend;
    if (n == 2 && s->pend[1] != 'u')
        flush_pending(s, 2);
    else if (n == 6) {
        const int hi = util_hex4((const char *)s->pend + 2);
        if (hi < 0xD800 || hi > 0xDBFF)
            flush_pending(s, 6);
    } else if ((n == 7 && s->pend[6] != '\\') || (n == 8 && s->pend[7] != 'u'))
        flush_pending(s, 6);
    else if (n == 12) {
        char u[11];
        if (util_json_pair_to_yaml((const char *)s->pend, u)) {
            s->npend = 0;
            emit(s, (const unsigned char *)u, 10);
        } else
            flush_pending(s, 6);
    }
}

static void fail_at(trace_stream *s, const char *what)
{
    s->failed = true;
    snprintf(s->why, sizeof(s->why), "%s: byte %lld: %s", s->path, s->raw_off, what);
}

static void feed(trace_stream *s, unsigned char c)
{
    if (s->failed)
        return;
    if (s->npend > 0) {
        feed_escape(s, c);
        return;
    }
    if (c == 0) {
        fail_at(s, "a NUL byte: this is a binary file, not a JSON trace");
        return;
    }
    if (!s->started) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            emit(s, &c, 1);
            return;
        }
        if (c != '{' && c != '[') {
            char what[120];
            if (c >= 0x20 && c < 0x7f)
                snprintf(what, sizeof(what), "not JSON: a Chrome trace starts with '{' or '[', this file with '%c'", c);
            else
                snprintf(what, sizeof(what), "not JSON: a Chrome trace starts with '{' or '[', this file with byte 0x%02x", c);
            fail_at(s, what);
            return;
        }
        s->started = true;
    }
    if (s->in_str && c == '\\') {
        s->pend[s->npend++] = c;
        return;
    }
    if (c == '"')
        s->in_str = !s->in_str;
    emit(s, &c, 1);
}

/* Refill the raw buffer: false at the end of the file or on an error (s->failed then says which). */
static bool refill(trace_stream *s)
{
    if (s->eof || s->failed)
        return false;
    const int got = gzread((gzFile)s->gz, s->raw, sizeof(s->raw));
    if (got < 0) {
        int code = 0;
        const char *msg = gzerror((gzFile)s->gz, &code);
        s->failed = true;
        snprintf(s->why, sizeof(s->why), "%s: byte %lld of the decompressed trace: gzip: %s%s", s->path, s->raw_off,
                 code == Z_ERRNO ? strerror(errno) : msg,
                 code == Z_BUF_ERROR ? " (the file is cut short)" : "");
        return false;
    }
    if (s->raw_off == 0)
        s->gzip = gzdirect((gzFile)s->gz) == 0;
    if (got == 0) {
        s->eof = true;
        /* An escape cut by the end of the file goes out as it is: the parser names what is wrong. */
        if (s->npend > 0)
            flush_pending(s, s->npend);
        return false;
    }
    /* A UTF-8 byte order mark at the very start is no character of the document (libyaml skips it too). */
    size_t skip = 0;
    if (s->raw_off == 0 && got >= 3 && s->raw[0] == 0xEF && s->raw[1] == 0xBB && s->raw[2] == 0xBF)
        skip = 3;
    s->raw_len = (size_t)got;
    s->raw_pos = skip;
    s->raw_off += (long long)skip;
    return true;
}

int trace_stream_read(void *data, unsigned char *buffer, size_t size, size_t *size_read)
{
    trace_stream *s = data;
    *size_read = 0;
    while (*size_read < size) {
        if (s->ob_pos < s->ob_len) {
            size_t n = s->ob_len - s->ob_pos;
            if (n > size - *size_read)
                n = size - *size_read;
            memcpy(buffer + *size_read, s->ob + s->ob_pos, n);
            s->ob_pos += n;
            *size_read += n;
            continue;
        }
        s->ob_len = s->ob_pos = 0;
        if (s->raw_pos == s->raw_len && !refill(s))
            break;
        /* feed emits at most 12 bytes per byte taken: stop with room for that. Bytes that change no state
         * (not a quote, backslash or NUL, outside an escape) are copied in a run, the common case. */
        while (s->raw_pos < s->raw_len && s->ob_len + 24 < sizeof(s->ob) && !s->failed) {
            if (s->started && s->npend == 0) {
                size_t n = 0;
                const size_t room = sizeof(s->ob) - 24 - s->ob_len, left = s->raw_len - s->raw_pos;
                const unsigned char *in = s->raw + s->raw_pos;
                unsigned char *o = s->ob + s->ob_len;
                long long chars = 0;
                while (n < left && n < room && in[n] != '"' && in[n] != '\\' && in[n] != 0) {
                    o[n] = in[n];
                    chars += (in[n] & 0xC0) != 0x80;
                    n++;
                }
                s->ob_len += n;
                s->out_bytes += (long long)n;
                s->out_chars += chars;
                s->raw_pos += n;
                s->raw_off += (long long)n;
                if (s->raw_pos == s->raw_len || s->ob_len + 24 >= sizeof(s->ob))
                    break;
            }
            feed(s, s->raw[s->raw_pos++]);
            s->raw_off++;
        }
        if (s->failed)
            break;
    }
    /* Returning 0 makes libyaml stop with "input error"; the reader then reports s->why instead. */
    if (s->failed)
        return 0;
    return 1;
}

long long trace_stream_offset_of(const char *path, long long index, bool chars)
{
    trace_stream *s = util_xcalloc(1, sizeof(*s));
    trace_error err;
    long long at = -1;
    if (trace_stream_open(s, path, &err) == 0) {
        while (at < 0 && (s->raw_pos < s->raw_len || refill(s))) {
            const unsigned char c = s->raw[s->raw_pos++];
            feed(s, c);
            s->ob_len = 0; /* nothing reads the output here: only its counts matter */
            if ((chars ? s->out_chars : s->out_bytes) > index)
                at = s->raw_off;
            s->raw_off++;
            if (s->failed)
                at = s->raw_off - 1;
        }
        if (at < 0)
            at = s->raw_off; /* at the end of the file */
        trace_stream_close(s);
    }
    free(s);
    return at;
}

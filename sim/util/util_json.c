/* JSON (util.h): the streaming writer every record goes through, and the escapes JSON readers share
 * (cfg_tree and the trace stream turn a JSON surrogate pair into the escape libyaml reads). */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

void util_json_raw(util_json *j, const char *json)
{
    json_pre_value(j);
    util_buf_printf(&j->out, "%s", json);
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

/* ---------------- escapes ---------------- */

int util_hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        const char c = s[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

bool util_json_pair_to_yaml(const char *p, char out[11])
{
    if (p[0] != '\\' || p[1] != 'u' || p[6] != '\\' || p[7] != 'u')
        return false;
    const int hi = util_hex4(p + 2), lo = util_hex4(p + 8);
    if (hi < 0xD800 || hi > 0xDBFF || lo < 0xDC00 || lo > 0xDFFF)
        return false;
    snprintf(out, 11, "\\U%08X", 0x10000u + (((unsigned)hi - 0xD800u) << 10) + ((unsigned)lo - 0xDC00u));
    return true;
}

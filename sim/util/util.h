/* util: allocation, growable buffers, string helpers and a small JSON writer.
 * Everything here is host-only plain C11 with no MPI or CUDA. */
#ifndef VPSIM_UTIL_H
#define VPSIM_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses are part of the CLI contract (README "Exit status"). */
enum {
    VP_EXIT_OK = 0,
    VP_EXIT_FAIL = 1,   /* runtime failure, wrong results */
    VP_EXIT_USAGE = 2,  /* bad input: config, --set, command line */
};

/* Out-of-memory is not recoverable in a CLI tool: report and exit. */
/* The prefix of every error line: "vpsim COMMAND" once main knows the command, else "vpsim". */
void util_set_prog(const char *prog);
const char *util_prog(void);

void *util_xmalloc(size_t n);
void *util_xcalloc(size_t count, size_t size);
void *util_xrealloc(void *p, size_t n);
char *util_xstrdup(const char *s);
char *util_xstrndup(const char *s, size_t n);
char *util_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Growable array of fixed-size items: data is valid for count items. */
typedef struct util_vec {
    void *data;
    size_t count, cap, item;
} util_vec;
void util_vec_init(util_vec *v, size_t item_size);
void *util_vec_push(util_vec *v); /* returns a zeroed slot */
void util_vec_free(util_vec *v);

/* Growable string. */
typedef struct util_buf {
    char *s;
    size_t len, cap;
} util_buf;
void util_buf_printf(util_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void util_buf_vprintf(util_buf *b, const char *fmt, va_list ap);
void util_buf_free(util_buf *b);

/* A command-line error (util_usage.c): "vpsim CMD: message" and a hint to use --help on stderr;
 * returns VP_EXIT_USAGE. */
int util_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The items of a comma-separated option value, any length and count: `*items` holds n fresh strings
 * (free with util_list_free). Returns n, or -1 after naming an empty item (",a", "a,,b", "a,", "") as
 * a usage error of command `cmd`'s option `opt`. */
int util_split_list(const char *cmd, const char *opt, const char *arg, char ***items);
void util_list_free(char **items, int n);

/* A decimal integer and nothing else (optional '-', digits; no blanks, '+', hex or exponent).
 * 0, or -1 when `s` is not one or overflows. */
int util_parse_ll(const char *s, long long *out);

/* The value of /proc/cpuinfo's first line for `key` (e.g. "model name", "vendor_id") into buf; false
 * (buf "") when there is none. */
bool util_cpuinfo(const char *key, char *buf, size_t len);
/* Now as "YYYY-MM-DD HH:MM UTC", the date every measured value's provenance carries. */
void util_utc_now(char *buf, size_t len);

/* The q-quantile (0 <= q <= 1) of n > 0 values, linear between the two nearest ranks (q = 0.5 of an even
 * count: the mean of the middle two); `v` is left as it was. */
double util_percentile(const double *v, int n, double q);

/* Directory part of a path ("." when none); caller frees. */
char *util_dirname(const char *path);
/* The whole of a (small) file as a NUL-terminated string, NULL when it cannot be read. */
char *util_read_file(const char *path);
/* Join base_dir and rel unless rel is absolute; caller frees. */
char *util_path_join(const char *base_dir, const char *rel);

/* Where a write to `path` lands: `path` itself, or, when `path` is a symbolic link, the existing file it
 * leads to (that file is replaced; the link stays). NULL with a message (without the path) when `path`
 * cannot hold a regular file: empty, ending in '/', a directory, device, FIFO or socket (directly or
 * through a link), a dangling link, a missing or unwritable directory, or a directory on a kernel
 * pseudo file system (/proc, /sys, ...). Caller frees. */
char *util_out_target(const char *path, char *errbuf, size_t errlen);
/* util_out_target refuses also a file this command has read (util_inputs.c): every input is noted where
 * it is read (cfg_doc_load_file, util_read_file, util_input_note), and an output onto any of them (same
 * device and inode, whatever the name) is refused, so no command can replace what it was given. */
void util_input_note(const char *path);
/* The name the input `path` was read under, or NULL when `path` is not one of this command's inputs. */
const char *util_input_of(const char *path);
/* Forget the noted inputs (tests that run several commands in one process). */
void util_inputs_forget(void);

/* Write `len` bytes to util_out_target(path) atomically: temp file in the same directory, fsync, rename
 * (the replaced file's mode kept). Returns 0, -1 with a message in errbuf when the write failed, or -2
 * when util_out_target refused the path (bad input: nothing was touched); the temp file never outlives a
 * failure. */
int util_write_file_atomic(const char *path, const char *data, size_t len, char *errbuf, size_t errlen);

/* Append `s` to `out` as one CSV field, quoted as RFC 4180 says when it holds a comma, a quote or a line
 * break (a quote doubled). Every CSV vpsim writes goes through it, so no name can break a row. */
void util_csv_field(util_buf *out, const char *s);

/* Human formatting of byte counts ("42.0 KiB"); returns buf. */
const char *util_fmt_bytes(double bytes, char *buf, size_t len);

/* Four hex digits as a number, -1 when they are not. */
int util_hex4(const char *s);
/* JSON spells a character beyond the BMP as a UTF-16 surrogate pair ("\uD83D\uDE00", 12 characters at
 * `p`); YAML, which reads vpsim's JSON, spells it "\U0001F600" and refuses surrogates. True with the YAML
 * escape (10 characters and a NUL) in `out` when `p` starts with such a pair. */
bool util_json_pair_to_yaml(const char *p, char out[11]);

/* ---- JSON writer: streaming, comma handling and escaping done here. ---- */
typedef struct util_json {
    util_buf out;
    int depth;
    bool need_comma[64];
    bool pretty;
    bool after_key;
} util_json;
void util_json_init(util_json *j, bool pretty);
void util_json_obj_begin(util_json *j);
void util_json_obj_end(util_json *j);
void util_json_arr_begin(util_json *j);
void util_json_arr_end(util_json *j);
void util_json_key(util_json *j, const char *key);
void util_json_str(util_json *j, const char *s);
void util_json_int(util_json *j, long long v);
void util_json_num(util_json *j, double v);
void util_json_bool(util_json *j, bool v);
void util_json_null(util_json *j);
/* A value given as JSON text, written as it is (the caller's text must be one valid JSON value). */
void util_json_raw(util_json *j, const char *json);
/* Shorthands for "key": value. */
void util_json_kstr(util_json *j, const char *key, const char *s);
void util_json_kint(util_json *j, const char *key, long long v);
void util_json_knum(util_json *j, const char *key, double v);
void util_json_kbool(util_json *j, const char *key, bool v);

#endif

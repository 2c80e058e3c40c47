/* trace_internal: what the trace layer's files share and nobody else needs. */
#ifndef VPSIM_TRACE_INTERNAL_H
#define VPSIM_TRACE_INTERNAL_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>

/* The bytes libyaml reads: a trace file through zlib (gzip or plain: gzread passes plain files through),
 * checked to be JSON at its first character, with JSON's surrogate pairs rewritten into the escape
 * libyaml knows (trace_stream.c says why). */
#define TRACE_STREAM_CHUNK 65536
typedef struct trace_stream {
    void *gz; /* gzFile */
    const char *path;
    unsigned char raw[TRACE_STREAM_CHUNK];
    size_t raw_len, raw_pos;
    long long raw_off; /* decompressed bytes the filter has taken */
    unsigned char ob[TRACE_STREAM_CHUNK + 64];
    size_t ob_len, ob_pos;
    long long out_bytes, out_chars; /* what the filter gave out so far */
    bool started, in_str, eof, failed;
    bool gzip; /* the file is gzip: offsets count the decompressed JSON */
    unsigned char pend[12];
    int npend;
    char why[512]; /* the stream's own failure (a gzip error, not JSON), with its byte offset */
} trace_stream;

int trace_stream_open(trace_stream *s, const char *path, trace_error *err);
void trace_stream_close(trace_stream *s);
/* libyaml's read handler over a trace_stream. */
int trace_stream_read(void *data, unsigned char *buffer, size_t size, size_t *size_read);
/* The file's byte offset (in the decompressed JSON) of what libyaml calls character `index` (chars
 * true) or byte `index` of its input (false): the file is read again through the same filter, since
 * libyaml counts characters where a user's tools count bytes. -1 when it cannot be found. */
long long trace_stream_offset_of(const char *path, long long index, bool chars);

/* trace_stats.c: one phase of one rank's cycle added into the sums of `acc` (divided later), with its
 * kernels' time into the summary's totals and unmapped names. `prev_end` is the previous phase's end
 * (NAN for a cycle's first phase, whose lead is the host's). */
void trace_stats_phase(const trace_rank *r, int ph, double prev_end, trace_phase_stats *acc, trace_summary *sum);
/* Divide the sums of `acc` by `n` samples. */
void trace_stats_scale(trace_phase_stats *acc, double n);

#endif

/* sim/trace's reader against what real PyTorch traces hold: kernel names of several KB, unicode escapes
 * and surrogate pairs, the bare-array form, libyaml's key limit, and a file far larger than any the
 * config loader takes, read in bounded memory. */
#include "test_helpers.h"

#include "../../sim/trace/trace.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *kernel_ev(char *buf, size_t len, const char *name, double ts)
{
    snprintf(buf, len, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, "
                       "\"dur\": 2.5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 12, \"grid\": [1, 2, 3]}}",
             name, ts);
    return buf;
}

Test(trace_read, long_names_unicode_and_surrogates)
{
    /* a C++ template name of 6000 characters, as CUTLASS kernels have */
    char *longname = malloc(6001);
    memset(longname, 'T', 6000);
    longname[6000] = '\0';
    char e1[7000], e2[512], e3[512];
    util_buf t = {0};
    util_buf_printf(&t, "{\"schemaVersion\": 1, \"traceEvents\": [%s, %s, %s], \"baseTimeNanoseconds\": 1764547200000000123}",
                    kernel_ev(e1, sizeof(e1), longname, 10), kernel_ev(e2, sizeof(e2), "k\\u00b5s\\u00e9", 20),
                    kernel_ev(e3, sizeof(e3), "emoji \\ud83d\\ude00 \\/ ok", 30));
    char *path = th_write_temp(t.s, t.len, ".json");
    trace_rank r;
    trace_error err;
    cr_assert_eq(trace_read(path, NULL, NULL, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.kernels.count, 3);
    const trace_kernel *k = r.kernels.data;
    cr_assert_str_eq(trace_name(&r, k[0].name), longname);
    cr_assert_str_eq(trace_name(&r, k[1].name), "k\xc2\xb5s\xc3\xa9");
    cr_assert_str_eq(trace_name(&r, k[2].name), "emoji \xf0\x9f\x98\x80 / ok");
    cr_assert_eq(k[0].stream, 7);
    cr_assert_eq(k[0].corr, 12);
    cr_assert(r.have_base && r.base_ns == 1764547200000000123LL);
    trace_rank_free(&r);
    unlink(path);
    free(path);
    free(longname);
    util_buf_free(&t);
}

/* Ids no int holds (the fuzz harness's "stream": 6.7e21) are absent, like missing ones: the kernel's
 * stream falls back to its thread, its correlation to none. */
Test(trace_read, ids_out_of_range_read_as_absent)
{
    const char *t = "[{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 5, \"ts\": 1, "
                    "\"dur\": 2, \"args\": {\"stream\": 6.66667e21, \"correlation\": -1e300}}, "
                    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 1e30, \"ts\": 4, "
                    "\"dur\": 2, \"args\": {\"stream\": 3e9}}]";
    char *path = th_write_temp(t, strlen(t), ".json");
    trace_rank r;
    trace_error err;
    cr_assert_eq(trace_read(path, NULL, NULL, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.kernels.count, 2);
    const trace_kernel *k = r.kernels.data;
    cr_assert_eq(k[0].stream, 5);
    cr_assert_eq(k[0].corr, -1);
    cr_assert_eq(k[1].stream, 0, "neither the stream nor the thread is an int");
    trace_rank_free(&r);
    unlink(path);
    free(path);
}

Test(trace_read, bare_array_form)
{
    char e[512];
    util_buf t = {0};
    util_buf_printf(&t, "[%s]", kernel_ev(e, sizeof(e), "nvjet_x", 1));
    char *path = th_write_temp(t.s, t.len, ".json");
    trace_rank r;
    trace_error err;
    cr_assert_eq(trace_read(path, NULL, NULL, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.kernels.count, 1);
    trace_rank_free(&r);
    unlink(path);
    free(path);
    util_buf_free(&t);
}

/* libyaml's one limit that matters: an implicit key of more than 1024 characters. A trace's keys are
 * short; a long one is refused with its place, not misread. */
Test(trace_read, overlong_key_is_refused_with_its_offset)
{
    util_buf t = {0};
    util_buf_printf(&t, "{\"traceEvents\": [], \"");
    for (int i = 0; i < 1100; i++)
        util_buf_printf(&t, "k");
    util_buf_printf(&t, "\": 1}");
    char *path = th_write_temp(t.s, t.len, ".json");
    trace_rank r;
    trace_error err;
    cr_assert_eq(trace_read(path, NULL, NULL, &r, &err), -1);
    char want[64];
    snprintf(want, sizeof(want), "%s: byte ", path);
    cr_assert_not_null(strstr(err.msg, want), "%s", err.msg);
    trace_rank_free(&r);
    unlink(path);
    free(path);
    util_buf_free(&t);
}

/* Byte offsets count bytes where libyaml counts characters: an error after multi-byte text is placed at
 * its byte. */
Test(trace_read, offsets_are_bytes_after_multibyte_text)
{
    const char *t = "{\"traceEvents\": [{\"name\": \"\xc3\xa9\xc3\xa9\xc3\xa9\", \"ph\": X}]}";
    char *path = th_write_temp(t, strlen(t), ".json");
    trace_rank r;
    trace_error err;
    cr_assert_eq(trace_read(path, NULL, NULL, &r, &err), -1);
    const size_t at = (size_t)(strstr(t, "X}") - t);
    char want[128];
    snprintf(want, sizeof(want), "%s: byte %zu (line 1, column %zu)", path, at, at - 3 + 1);
    cr_assert_not_null(strstr(err.msg, want), "want '%s' in: %s", want, err.msg);
    trace_rank_free(&r);
    unlink(path);
    free(path);
}

static long max_rss_kib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

/* 96 MiB of CPU-side events (a profile's bulk) around a few kernels: more than the config loader's 64 MiB
 * cap, read through while the process grows by far less than the file. Under AddressSanitizer (which
 * keeps freed memory in quarantine and runs the reader many times slower) a 12 MiB file, no bound. */
#if defined(__SANITIZE_ADDRESS__)
#define BIG_MIB 12u
#define BIG_BOUNDED 0
#else
#define BIG_MIB 96u
#define BIG_BOUNDED 1
#endif
Test(trace_read, streams_a_file_larger_than_memory_bounds, .timeout = 120)
{
    char path[] = "/tmp/vpsim-big-XXXXXX";
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"traceEvents\": [\n", f);
    char e[512];
    fprintf(f, "%s,\n", kernel_ev(e, sizeof(e), "first_kernel", 1));
    const char *cpu = "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 5.0, "
                      "\"dur\": 1.0, \"args\": {\"External id\": 3, \"Input Dims\": [[3, 7168], [7168, 2112]]}},\n";
    const size_t n = (BIG_MIB << 20) / strlen(cpu);
    for (size_t i = 0; i < n; i++)
        fputs(cpu, f);
    fprintf(f, "%s]}\n", kernel_ev(e, sizeof(e), "last_kernel", 9));
    fclose(f);
    const long before = max_rss_kib();
    trace_rank r;
    trace_error err;
    cr_assert_eq(trace_read(path, NULL, NULL, &r, &err), 0, "%s", err.msg);
    const long grew = max_rss_kib() - before;
    cr_assert_eq(r.kernels.count, 2);
    cr_assert(r.bytes > ((long long)BIG_MIB << 20), "%lld", r.bytes);
    cr_assert(r.events > (long long)n);
    cr_assert(!BIG_BOUNDED || grew < 16 * 1024, "the reader grew by %ld KiB for a %lld-byte file", grew, r.bytes);
    trace_rank_free(&r);
    unlink(path);
}

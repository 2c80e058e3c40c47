/* cal_facts (cal_facts.h): the device a measurement ran on against the device a base system file
 * names, and the gpu section a measured file takes from the device. */
#include "cal_facts.h"

#include "../config/cfg_tree.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cal_base_device(const char *base, char *name, size_t len, int *sms, char *why, size_t why_len)
{
    cfg_error err;
    cfg_doc *doc = cfg_doc_load_file(base, &err);
    name[0] = '\0';
    *sms = 0;
    if (!doc) {
        snprintf(why, why_len, "%s", err.msg);
        return -1;
    }
    const cfg_node *gpu = cfg_map_get(cfg_doc_root(doc), "gpu");
    const cfg_node *n = cfg_map_get(gpu, "name"), *s = cfg_map_get(gpu, "sms");
    if (n && n->kind == CFG_NODE_SCALAR)
        snprintf(name, len, "%s", n->scalar);
    if (s && s->kind == CFG_NODE_SCALAR)
        *sms = atoi(s->scalar);
    cfg_doc_free(doc);
    return 0;
}

/* Equal names up to case and runs of blanks ("NVIDIA  H200" is "nvidia h200"). */
static bool same_name(const char *a, const char *b)
{
    for (;;) {
        while (isspace((unsigned char)*a) && (isspace((unsigned char)a[1]) || !a[1]))
            a++;
        while (isspace((unsigned char)*b) && (isspace((unsigned char)b[1]) || !b[1]))
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        const bool sa = isspace((unsigned char)*a), sb = isspace((unsigned char)*b);
        if (sa != sb || (!sa && tolower((unsigned char)*a) != tolower((unsigned char)*b)))
            return false;
        a++;
        b++;
    }
}

bool cal_facts_differ(const exec_facts *f, const char *base_name, int base_sms, char *diff, size_t len)
{
    diff[0] = '\0';
    if (!base_name[0])
        return false;
    if (!same_name(f->gpu_name, base_name)) {
        snprintf(diff, len, "measured on %s, but the base names %s", f->label[0] ? f->label : f->gpu_name, base_name);
        return true;
    }
    /* One name, other SM counts: another part under one name (a MIG slice, a binned SKU). */
    if (f->sms > 0 && base_sms > 0 && f->sms != base_sms) {
        snprintf(diff, len, "measured on %s with %d SMs, but the base's %s has %d", f->gpu_name, f->sms, base_name,
                 base_sms);
        return true;
    }
    return false;
}

/* The system files in the base's folder that name the device measured, as "a, b" (at most 4). */
static void matching_files(const exec_facts *f, const char *base, char *out, size_t len)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s", base);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    out[0] = '\0';
    DIR *d = opendir(dir);
    char **names = NULL;
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        const size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".yaml") != 0)
            continue;
        char path[1024], name[128], why[200];
        int sms;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (cal_base_device(path, name, sizeof(name), &sms, why, sizeof(why)) == 0 && name[0] &&
            !cal_facts_differ(f, name, sms, why, sizeof(why))) {
            names = util_xrealloc(names, (size_t)(n + 1) * sizeof(*names));
            names[n++] = util_xstrdup(path);
        }
    }
    if (d)
        closedir(d);
    /* Sorted, so the message is the same on every file system. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        if (i < 4)
            snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
    free(names);
}

int cal_facts_check(const char *cmd, const exec_facts *f, const char *base, bool base_explicit, char *mismatch,
                    size_t len)
{
    char name[128], why[400];
    int sms;
    mismatch[0] = '\0';
    if (cal_base_device(base, name, sizeof(name), &sms, why, sizeof(why))) {
        fprintf(stderr, "vpsim %s: base system file: %s\n", cmd, why);
        return VP_EXIT_USAGE;
    }
    if (!cal_facts_differ(f, name, sms, mismatch, len))
        return 0;
    if (base_explicit)
        return 0;
    char files[1024], hint[1200];
    matching_files(f, base, files, sizeof(files));
    if (files[0])
        snprintf(hint, sizeof(hint), "give a base that names this device (--system or --base): %s", files);
    else
        snprintf(hint, sizeof(hint), "give a base that names this device (--system or --base FILE)");
    fprintf(stderr, "vpsim %s: base %s: %s, so the file would describe another machine (the base's SMs, bandwidth, "
                    "TFLOP/s and launch costs beside these measurements); nothing written: %s, or "
                    "--base %s to write into this base anyway (the mismatch then goes into the file's header)\n",
            cmd, base, mismatch, hint, base);
    mismatch[0] = '\0';
    return VP_EXIT_USAGE;
}

void cal_facts_header(const char *mismatch, const char *base, util_buf *out)
{
    if (!mismatch[0])
        return;
    util_buf_printf(out, "#   MISMATCH, written because --base %s was given:\n"
                         "#     %s;\n"
                         "#     the gpu section is the device's own; every value of the base not measured here is the\n"
                         "#     base's device's (bandwidth, TFLOP/s, efficiencies, kernel floor)\n",
                    base, mismatch);
}

static int note(cal_note *notes, int i, int max, const char *key, const char *comment)
{
    if (i >= max)
        return i;
    notes[i].key = util_xstrdup(key);
    notes[i].comment = util_xstrdup(comment);
    return i + 1;
}

int cal_facts_gpu_text(const exec_facts *f, const char *prov, util_buf *out, cal_note *notes, int max)
{
    char c[512];
    int n = 0;
    util_buf_printf(out, "gpu:\n  name: \"%s\"\n", f->gpu_name);
    snprintf(c, sizeof(c), "measured: %s: %s%s%s", prov, f->self_test ? "the host's CPU model (/proc/cpuinfo)" :
             "cudaGetDeviceProperties", f->clocks[0] ? "; NVML then: " : "", f->clocks);
    n = note(notes, n, max, "gpu.name", c);
    if (f->sms > 0) {
        util_buf_printf(out, "  sms: %d\n", f->sms);
        snprintf(c, sizeof(c), "measured: %s: cudaGetDeviceProperties multiProcessorCount", prov);
        n = note(notes, n, max, "gpu.sms", c);
    }
    if (f->memory_gib > 0) {
        util_buf_printf(out, "  memory_gib: %.1f\n", f->memory_gib);
        snprintf(c, sizeof(c), "measured: %s: cudaGetDeviceProperties totalGlobalMem", prov);
        n = note(notes, n, max, "gpu.memory_gib", c);
    }
    if (f->cc > 0) {
        util_buf_printf(out, "  cc: %d\n", f->cc);
        snprintf(c, sizeof(c), "measured: %s: cudaGetDeviceProperties major x 10 + minor", prov);
        n = note(notes, n, max, "gpu.cc", c);
    }
    return n;
}

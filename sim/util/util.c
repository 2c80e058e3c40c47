#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

static void util_oom(size_t n)
{
    fprintf(stderr, "%s: out of memory allocating %zu bytes\n", util_prog(), n);
    exit(VP_EXIT_FAIL);
}

static const char *g_prog = "vpsim";

void util_set_prog(const char *prog) { g_prog = prog; }

const char *util_prog(void) { return g_prog; }

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

int util_parse_ll(const char *s, long long *out)
{
    /* strtoll alone would take leading blanks, '+', and (base 0) hex: an option value is digits only. */
    const char *p = s + (s[0] == '-');
    if (!*p)
        return -1;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static const char *util_file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* File systems whose entries are kernel interfaces, not files: a rename there would at best fail
 * after all the work and at worst feed text to a kernel knob. */
static const char *util_pseudo_fs(const char *dir)
{
    static const struct {
        long magic;
        const char *name;
    } fs[] = {{PROC_SUPER_MAGIC, "proc"},     {SYSFS_MAGIC, "sysfs"},   {CGROUP_SUPER_MAGIC, "cgroup"},
              {CGROUP2_SUPER_MAGIC, "cgroup2"}, {DEBUGFS_MAGIC, "debugfs"}, {DEVPTS_SUPER_MAGIC, "devpts"}};
    struct statfs sf;
    if (statfs(dir, &sf) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
        if ((long)sf.f_type == fs[i].magic)
            return fs[i].name;
    return NULL;
}

char *util_out_target(const char *path, char *errbuf, size_t errlen)
{
    if (!path[0]) {
        snprintf(errbuf, errlen, "an empty path names no file");
        return NULL;
    }
    if (path[strlen(path) - 1] == '/') {
        snprintf(errbuf, errlen, "ends with '/', so it names a directory; give a file path");
        return NULL;
    }
    struct stat st;
    char *target = NULL;
    const char *via = ""; /* set when a symbolic link was followed, for the message */
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        target = realpath(path, NULL);
        if (!target) {
            snprintf(errbuf, errlen, "is a symbolic link that does not lead to an existing file (%s)",
                     strerror(errno));
            return NULL;
        }
        via = "is a symbolic link to ";
    } else {
        target = util_xstrdup(path);
    }
    const char *input = util_input_of(target);
    if (input) {
        if (strcmp(input, path))
            snprintf(errbuf, errlen, "is the same file as '%s', an input of this command; write the output to "
                     "another file", input);
        else
            snprintf(errbuf, errlen, "is an input of this command; write the output to another file");
        free(target);
        return NULL;
    }
    if (stat(target, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            if (via[0])
                snprintf(errbuf, errlen, "%s%s, which is %s, not a regular file", via, target,
                         util_file_kind(st.st_mode));
            else
                snprintf(errbuf, errlen, "is %s, not a regular file", util_file_kind(st.st_mode));
            free(target);
            return NULL;
        }
    } else if (errno != ENOENT && errno != ENOTDIR) {
        snprintf(errbuf, errlen, "cannot be examined: %s", strerror(errno));
        free(target);
        return NULL;
    }
    char *dir = util_dirname(target);
    const char *pseudo = NULL;
    struct stat ds;
    bool bad = true;
    if (stat(dir, &ds) != 0)
        snprintf(errbuf, errlen, "directory '%s' %s", dir, errno == ENOENT ? "does not exist" : strerror(errno));
    else if (!S_ISDIR(ds.st_mode))
        snprintf(errbuf, errlen, "'%s' is not a directory", dir);
    else if ((pseudo = util_pseudo_fs(dir)) != NULL)
        snprintf(errbuf, errlen, "'%s' is on the kernel's %s file system, which holds no regular files", dir,
                 pseudo);
    else if (access(dir, W_OK | X_OK) != 0)
        snprintf(errbuf, errlen, "directory '%s' is not writable: %s", dir, strerror(errno));
    else
        bad = false;
    free(dir);
    if (bad) {
        free(target);
        return NULL;
    }
    return target;
}

int util_write_file_atomic(const char *path, const char *data, size_t len, char *errbuf, size_t errlen)
{
    char why[512];
    char *target = util_out_target(path, why, sizeof(why));
    if (!target) {
        snprintf(errbuf, errlen, "cannot %s '%s': %s", access(path, F_OK) == 0 ? "replace" : "create", path, why);
        return -2;
    }
    /* mkstemp: O_EXCL, so a file or link already at the temp name is never written through. */
    char *tmp = util_xasprintf("%s.tmp.XXXXXX", target);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(errbuf, errlen, "cannot create a temporary file beside %s: %s", target, strerror(errno));
        free(tmp);
        free(target);
        return -1;
    }
    /* mkstemp makes 0600; keep the mode of the file being replaced, else what open(0666) and umask give. */
    struct stat st;
    mode_t mode;
    if (stat(target, &st) == 0) {
        mode = st.st_mode & 07777;
    } else {
        /* umask can only be read by setting it; no other thread of vpsim creates files meanwhile. */
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    const char *fail = NULL, *fail_path = tmp;
    int saved = 0;
    if (fchmod(fd, mode) != 0) {
        fail = "cannot set the mode of";
        saved = errno;
    }
    for (size_t off = 0; !fail && off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fail = "cannot write";
            saved = w < 0 ? errno : EIO;
        } else {
            off += (size_t)w;
        }
    }
    if (!fail && fsync(fd) != 0) {
        fail = "cannot flush";
        saved = errno;
    }
    if (close(fd) != 0 && !fail) {
        fail = "cannot close";
        saved = errno;
    }
    if (!fail && rename(tmp, target) != 0) {
        fail = "cannot rename the temporary file onto";
        fail_path = target;
        saved = errno;
    }
    if (fail) {
        snprintf(errbuf, errlen, "%s %s: %s", fail, fail_path, strerror(saved));
        unlink(tmp);
        free(tmp);
        free(target);
        return -1;
    }
    /* The rename is durable only once the directory itself is on disk. */
    char *dir = util_dirname(target);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    free(dir);
    free(tmp);
    free(target);
    return 0;
}

void util_csv_field(util_buf *out, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        util_buf_printf(out, "%s", s);
        return;
    }
    util_buf_printf(out, "\"");
    for (const char *c = s; *c; c++)
        util_buf_printf(out, *c == '"' ? "\"\"" : "%c", *c);
    util_buf_printf(out, "\"");
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

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double util_percentile(const double *v, int n, double q)
{
    double *s = util_xmalloc((size_t)n * sizeof(double));
    memcpy(s, v, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    const double pos = q * (n - 1);
    const int lo = (int)floor(pos), hi = (int)ceil(pos);
    const double r = s[lo] + (s[hi] - s[lo]) * (pos - lo);
    free(s);
    return r;
}

bool util_cpuinfo(const char *key, char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    const size_t k = strlen(key);
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f)) {
        const char *colon = strchr(line, ':');
        if (colon && strncmp(line, key, k) == 0 && (line[k] == ' ' || line[k] == '\t' || line[k] == ':')) {
            snprintf(buf, len, "%s", colon[1] == ' ' ? colon + 2 : colon + 1);
            buf[strcspn(buf, "\n")] = '\0';
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

void util_utc_now(char *buf, size_t len)
{
    const time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
}

char *util_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    util_input_note(path);
    util_buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        util_buf_printf(&b, "%.*s", (int)n, chunk);
    const bool bad = ferror(f);
    fclose(f);
    if (bad) {
        util_buf_free(&b);
        return NULL;
    }
    return b.s ? b.s : util_xstrdup("");
}

/* Helpers for the harnesses (see fuzz_util.h). */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;
static char memfd_path[64];

const char *fuzz_memfd_path(const uint8_t *data, size_t size)
{
    if (memfd < 0) {
        memfd = memfd_create("vpsim-fuzz", 0);
        if (memfd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
    }
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size) {
        perror("memfd write");
        abort();
    }
    return memfd_path;
}

void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

static char tmpdir[256];

static void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", tmpdir);
}

const char *fuzz_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof(tmpdir), "%s/vpsim-fuzz-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

/* The files a command has read, so that no output of it can replace one (seen once: `plan sc.yaml --out
 * sc.yaml` destroyed its own scenario). Files are told apart by device and inode, not by name: a second
 * name, a link or a relative path of the same file is the same input. */
#include "util.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define UTIL_MAX_INPUTS 64

typedef struct util_input {
    dev_t dev;
    ino_t ino;
    char path[256];
} util_input;

/* One command per process, read on its main thread: a plain table is enough. Past the cap a file is
 * not remembered; no command reads that many. */
static util_input inputs[UTIL_MAX_INPUTS];
static int n_inputs;

void util_input_note(const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino)
            return;
    if (n_inputs == UTIL_MAX_INPUTS)
        return;
    util_input *in = &inputs[n_inputs++];
    in->dev = st.st_dev;
    in->ino = st.st_ino;
    snprintf(in->path, sizeof(in->path), "%s", path);
}

const char *util_input_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i].dev == st.st_dev && inputs[i].ino == st.st_ino)
            return inputs[i].path;
    return NULL;
}

void util_inputs_forget(void)
{
    n_inputs = 0;
}

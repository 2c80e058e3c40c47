/* Shared by the libFuzzer harnesses: fuzz input handed to loaders that take a path. */
#ifndef VPSIM_FUZZ_UTIL_H
#define VPSIM_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The checkout the harness was built from (configs/, models/, tests/data/). */
#ifndef FUZZ_ROOT
#define FUZZ_ROOT "."
#endif

/* Replace the contents of an anonymous in-memory file with `data` and return its /proc/self/fd path
 * (the loaders stat and open a path; a memfd is a regular file and leaves nothing on disk). */
const char *fuzz_memfd_path(const uint8_t *data, size_t size);
/* Write `data` to `path` (truncating). Aborts on failure: the harness, not the input, is broken. */
void fuzz_write_file(const char *path, const uint8_t *data, size_t size);
/* A private temporary directory, removed at exit. */
const char *fuzz_tmpdir(void);

#endif

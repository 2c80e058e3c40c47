/* cal_facts: a measured system file describes the machine that measured it. calibrate
 * --measure and probe take the gpu section from the device they ran on (exec_facts, sim/exec/exec.h),
 * keep the base's values a probe does not measure with their own provenance, and refuse to put one
 * device's measurements into a base that names another unless the base was given explicitly; then
 * the mismatch goes into the file's header. Plain functions of the facts and the base file, so the
 * tests reach them with hand-made facts (an H200's on a machine without a GPU). */
#ifndef VPSIM_CAL_FACTS_H
#define VPSIM_CAL_FACTS_H

#include "cal_system.h"

#include "../exec/exec.h"
#include "../util/util.h"

#include <stdbool.h>
#include <stddef.h>

/* The tag a self-test's values open with (cal_system_spec.self_test), for each kind of self-test. */
#define CAL_SELF_TEST_CPU "SELF-TEST (the CPU device: not a GPU's figures)"
#define CAL_SELF_TEST_VIRTUAL "SELF-TEST (virtual ranks: several ranks share one GPU)"

/* The device the base system file names: gpu.name ("" when it names none) and gpu.sms (0 when absent).
 * 0, or -1 with why when the file cannot be read. */
int cal_base_device(const char *base, char *name, size_t len, int *sms, char *why, size_t why_len);

/* Whether `f` is another device than the one named `base_name` with `base_sms` SMs: names compared
 * without regard to case and runs of blanks, SMs when both say. A base that names no device differs
 * from none. true with the difference in words in `diff`. */
bool cal_facts_differ(const exec_facts *f, const char *base_name, int base_sms, char *diff, size_t len);

/* The check before measuring. The device differs from the base's: with `base_explicit` 0 and the
 * difference in `mismatch` (for the file's header); without it VP_EXIT_USAGE after saying why, what
 * to give instead (the files beside the base that name this device) and that --base FILE writes into
 * that base anyway. Same device (or a base naming none): 0 and `mismatch` "". VP_EXIT_USAGE when the
 * base cannot be read. `cmd` names the command in messages. */
int cal_facts_check(const char *cmd, const exec_facts *f, const char *base, bool base_explicit, char *mismatch,
                    size_t len);

/* The header line of a mismatch written on purpose ("" writes nothing). */
void cal_facts_header(const char *mismatch, const char *base, util_buf *out);

/* The fresh gpu section from the facts (name, and sms, memory_gib, cc where the device has them) as
 * YAML, and one note per value into notes[0..max) (key and comment malloc'ed: free both). `prov` says
 * which command measured, when and where. Returns the notes written. */
int cal_facts_gpu_text(const exec_facts *f, const char *prov, util_buf *out, cal_note *notes, int max);

#endif

/* cal_system: the services calibrate and probe share (cal_system.c): merging and checking points, the
 * option tail, the system-file writer. */
#ifndef VPSIM_CAL_SYSTEM_H
#define VPSIM_CAL_SYSTEM_H

#include "../util/util.h"

#include <stddef.h>

#define CAL_MAX_POINTS 32 /* CFG_SYS_TABLE_MAX */

/* How far a point may lie below the slowest point at a smaller size before calibrate refuses the table
 * as falling with size: the larger of CAL_FALL_REL of that time and CAL_FALL_ABS_US.
 * CAL_FALL_REL (derived): identical ops (same name and shape, one per layer) in the H200 graph run
 * traces/samples/h200-none-graph.results.json spread by 10-44 % between their 10th and 90th
 * percentile, 20 % in the median op; a table point is a median over such ops, so a drop within 20 %
 * is within the noise of the measurement, and a larger one is a table the model should not
 * interpolate (bigger ops priced cheaper).
 * CAL_FALL_ABS_US (spec): cudaEventElapsedTime resolves about 0.5 us (CUDA runtime API reference), so
 * sub-microsecond differences between short ops are not measurable. */
#define CAL_FALL_REL 0.20
#define CAL_FALL_ABS_US 0.5

typedef struct cal_point {
    double bytes, us;
} cal_point;

/* Merge `n` points sorted by bytes into at most `max` (>= 1) written to `out`: points whose sizes lie
 * within a ratio of their group's first become one (geometric-mean bytes, median us), the ratio
 * widened until the groups fit. Any n >= 0 is handled; `out` is never written past `max`. Returns the
 * count. */
int cal_merge_points(const cal_point *in, int n, cal_point *out, int max);

/* A table a system file may carry: every time > 0 and none falling below the slowest earlier point by
 * more than the tolerance above. Returns -1 when sound, else the index of the first bad point with
 * why: "KIND at B B: ..." naming the op kind, size and times. */
int cal_check_points(const char *kind, const cal_point *pts, int n, char *why, size_t len);

/* The whole system file calibrate writes: `header`, then the base system file `base` with `fresh_text`
 * (YAML of the same layout: measured: {use, ops | compute: {TABLE: ...}}, launch: {...}) put in (maps
 * merged two levels down, so a fresh table replaces the base's whole and the base's other tables
 * stay), every base value with the comment beside it in the base, and `note` as the comment of the
 * value at dotted key `note_key` (both NULL: none). The text is bound as a system file first. 0, or
 * VP_EXIT_USAGE after saying why (nothing in `out` is to be written then). */
int cal_system_text(const char *base, const char *fresh_text, const char *header, const char *note_key,
                    const char *note, util_buf *out);

/* cal_system_text's general form, for `vpsim probe` too: the base's maps at the dotted keys `clear` are
 * emptied before the merge (the fresh text then replaces them whole: a probe's paths, or collective
 * tables of another box), and each of `notes` is the comment of the value at its dotted key. `cmd` and
 * `base_opt` name the command and the option the base came from in messages; `what` names the result. */
typedef struct cal_note {
    const char *key, *comment;
} cal_note;
typedef struct cal_system_spec {
    const char *cmd, *base_opt, *what;
    const char *base, *fresh_text, *header;
    const char *const *clear;
    int n_clear;
    const cal_note *notes;
    int n_notes;
    /* A self-test (the CPU device, virtual ranks): this tag opens the comment of every value the fresh
     * text puts in, noted or not ("SELF-TEST (...)"); NULL: a real measurement. */
    const char *self_test;
} cal_system_spec;
int cal_system_write(const cal_system_spec *s, util_buf *out);


#endif

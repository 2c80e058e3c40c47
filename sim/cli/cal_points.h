/* cal_points: the merging of `vpsim calibrate` (its own header so the tests reach it). */
#ifndef VPSIM_CAL_POINTS_H
#define VPSIM_CAL_POINTS_H

#define CAL_MAX_POINTS 32 /* CFG_SYS_TABLE_MAX */

typedef struct cal_point {
    double bytes, us;
} cal_point;

/* Merge `n` points sorted by bytes into at most `max` (>= 1) written to `out`: points whose sizes lie
 * within a ratio of their group's first become one (geometric-mean bytes, median us), the ratio
 * widened until the groups fit. Any n >= 0 is handled; `out` is never written past `max`. Returns the
 * count. */
int cal_merge_points(const cal_point *in, int n, cal_point *out, int max);

#endif

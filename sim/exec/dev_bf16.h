/* dev_bf16: bf16 <-> float on the host, for the CUDA device's to_host_float / from_host_float (the
 * executor's --check reads results and writes operands as floats). Apart from dev_cuda.c because it
 * is plain C: it builds without CUDA, so the unit tests pin its rounding on any machine. */
#ifndef VPSIM_DEV_BF16_H
#define VPSIM_DEV_BF16_H

#include <stdint.h>

/* Exact: a bf16 is the upper half of a float. */
void dev_bf16_to_float(float *dst, const uint16_t *src, long long n);
/* Round to nearest, ties to even (overflow gives inf); any NaN becomes the quiet NaN 0x7fc0. */
void dev_float_to_bf16(uint16_t *dst, const float *src, long long n);

#endif

/* bf16 <-> float on the host (dev_bf16.h). */
#include "dev_bf16.h"

#include <string.h>

void dev_bf16_to_float(float *dst, const uint16_t *src, long long n)
{
    for (long long i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof(u));
    }
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0; /* NaN stays NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

void dev_float_to_bf16(uint16_t *dst, const float *src, long long n)
{
    for (long long i = 0; i < n; i++)
        dst[i] = float_to_bf16(src[i]);
}

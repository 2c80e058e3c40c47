/* The host bf16 conversions the CUDA device's --check goes through (dev_bf16.c): expected bit patterns
 * worked out by hand from the IEEE layouts (bf16 = sign, 8-bit exponent, 7-bit fraction: the upper half
 * of a float). */
#include "../../sim/exec/dev_bf16.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint16_t round_bits(uint32_t u)
{
    const float f = from_bits(u);
    uint16_t h = 0;
    dev_float_to_bf16(&h, &f, 1);
    return h;
}

Test(dev_bf16, rounds_to_nearest_ties_to_even)
{
    cr_expect_eq(round_bits(0x3f800000u), 0x3f80); /* 1.0: exact */
    cr_expect_eq(round_bits(0xc0000000u), 0xc000); /* -2.0: exact, sign kept */
    cr_expect_eq(round_bits(0x3f807fffu), 0x3f80); /* just below half an ulp: down */
    cr_expect_eq(round_bits(0x3f808001u), 0x3f81); /* just above: up */
    cr_expect_eq(round_bits(0x3f808000u), 0x3f80); /* tie between 0x3f80 and 0x3f81: to the even one */
    cr_expect_eq(round_bits(0x3f818000u), 0x3f82); /* tie between 0x3f81 and 0x3f82: to the even one */
    cr_expect_eq(round_bits(0x3fff8000u), 0x4000); /* the carry moves into the exponent: 2.0 */
}

Test(dev_bf16, overflow_and_nan)
{
    cr_expect_eq(round_bits(0x7f800000u), 0x7f80); /* +inf stays inf */
    cr_expect_eq(round_bits(0xff800000u), 0xff80); /* -inf */
    cr_expect_eq(round_bits(0x7f7fffffu), 0x7f80); /* FLT_MAX is past the largest bf16 (0x7f7f) by more than half an ulp */
    cr_expect_eq(round_bits(0x7f7f7fffu), 0x7f7f); /* below the midpoint: the largest finite bf16 */
    /* NaNs whose payload sits only in the low half would round to inf without the NaN test. */
    cr_expect_eq(round_bits(0x7f800001u), 0x7fc0);
    cr_expect_eq(round_bits(0xffc00000u), 0x7fc0);
}

Test(dev_bf16, widening_is_exact_and_every_value_round_trips)
{
    const uint16_t pi = 0x4049; /* 0x40490000 = 3.140625 */
    float f = 0;
    dev_bf16_to_float(&f, &pi, 1);
    cr_expect_eq(f, 3.140625f);
    static uint16_t all[65536], back[65536];
    static float wide[65536];
    for (uint32_t i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    dev_bf16_to_float(wide, all, 65536);
    dev_float_to_bf16(back, wide, 65536);
    int mismatches = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        uint32_t u;
        memcpy(&u, &wide[i], sizeof(u));
        const bool nan = (i & 0x7fffu) > 0x7f80u;
        mismatches += u != i << 16 || back[i] != (nan ? 0x7fc0 : i);
    }
    cr_expect_eq(mismatches, 0, "%d bf16 values did not widen exactly or round-trip", mismatches);
}

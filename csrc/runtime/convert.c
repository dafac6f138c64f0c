/*
 * convert.c: element conversion between scalar dtypes on the host, used by
 * copy-in, copy-out, copyto and fill.
 *
 * Rules (documented in docs/architecture.md): the same dtype is a memcpy; to bool is
 * "nonzero"; integer to integer wraps modulo 2^bits like a C cast through the
 * unsigned type; float to integer truncates toward zero, saturates at the target's
 * range and maps NaN to 0, because a C cast of an out-of-range float is undefined
 * behaviour; integer and float to float round to nearest.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

/* IEEE half <-> single, by hand: C11 has no portable half type. */
float
tack__half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        }
        else {
            /* Subnormal half: normalise into a float. */
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    }
    else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    }
    else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t
tack__float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) {
        /* Inf stays Inf; NaN stays a quiet NaN. */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    }
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f) {
        return (uint16_t)(sign | 0x7c00u);
    }
    if (e <= 0) {
        if (e < -10) {
            return sign;
        }
        /* Subnormal half, round to nearest even. */
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half_mant = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_mant & 1u))) {
            half_mant++;
        }
        return (uint16_t)(sign | half_mant);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) {
        half++; /* may carry into the exponent, which rounds up to Inf correctly */
    }
    return (uint16_t)(sign | half);
}

uint16_t
tack__double_to_half(double d)
{
    uint64_t x;
    memcpy(&x, &d, sizeof x);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t exp = (x >> 52) & 0x7ffu;
    uint64_t mant = x & 0xfffffffffffffull;
    if (exp == 0x7ff) {
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    }
    int64_t e = (int64_t)exp - 1023 + 15;
    if (e >= 0x1f) {
        return (uint16_t)(sign | 0x7c00u);
    }
    if (e <= 0) {
        if (e < -10) {
            return sign; /* below half the smallest subnormal */
        }
        /* Subnormal half: value = mant53 * 2^(e - 67) = m * 2^-24. */
        mant |= 1ull << 52;
        uint64_t shift = (uint64_t)(43 - e);
        uint64_t half_mant = mant >> shift;
        uint64_t rem = mant & ((1ull << shift) - 1u);
        uint64_t halfway = 1ull << (shift - 1u);
        if (rem > halfway || (rem == halfway && (half_mant & 1u))) {
            half_mant++;
        }
        return (uint16_t)(sign | half_mant);
    }
    uint64_t half = ((uint64_t)e << 10) | (mant >> 42);
    uint64_t rem = mant & ((1ull << 42) - 1u);
    uint64_t halfway = 1ull << 41;
    if (rem > halfway || (rem == halfway && (half & 1u))) {
        half++; /* may carry into the exponent, which rounds up to Inf correctly */
    }
    return (uint16_t)(sign | half);
}

/* A scalar read in its widest form. */
typedef struct {
    char kind; /* 'i' (and bool), 'u' or 'f' */
    int64_t i;
    uint64_t u;
    double f;
} wide;

static wide
load(const void *p, tack_dtype dt)
{
    wide w = {'i', 0, 0, 0.0};
    switch (dt) {
    case TACK_BOOL: w.i = *(const uint8_t *)p != 0; break;
    case TACK_INT8:
        /* Sign extension of int8 is the point here. */
        // NOLINTNEXTLINE(bugprone-signed-char-misuse,cert-str34-c)
        w.i = *(const int8_t *)p;
        break;
    case TACK_INT16: w.i = *(const int16_t *)p; break;
    case TACK_INT32: w.i = *(const int32_t *)p; break;
    case TACK_INT64: w.i = *(const int64_t *)p; break;
    case TACK_UINT8:
        w.kind = 'u';
        w.u = *(const uint8_t *)p;
        break;
    case TACK_UINT16:
        w.kind = 'u';
        w.u = *(const uint16_t *)p;
        break;
    case TACK_UINT32:
        w.kind = 'u';
        w.u = *(const uint32_t *)p;
        break;
    case TACK_UINT64:
        w.kind = 'u';
        w.u = *(const uint64_t *)p;
        break;
    case TACK_FLOAT16:
        w.kind = 'f';
        w.f = tack__half_to_float(*(const uint16_t *)p);
        break;
    case TACK_FLOAT32:
    case TACK_VEC2F:
    case TACK_VEC3F:
    case TACK_VEC4F:
        w.kind = 'f';
        w.f = *(const float *)p;
        break;
    case TACK_FLOAT64:
        w.kind = 'f';
        w.f = *(const double *)p;
        break;
    default: break;
    }
    return w;
}

static double
wide_as_double(wide w)
{
    switch (w.kind) {
    case 'u': return (double)w.u;
    case 'f': return w.f;
    default: return (double)w.i;
    }
}

/* The value as an unsigned 64-bit pattern, for integer targets. */
static uint64_t
wide_as_bits(wide w, int64_t lo, uint64_t hi)
{
    if (w.kind == 'u') {
        return w.u;
    }
    if (w.kind == 'i') {
        return (uint64_t)w.i;
    }
    /* Float: truncate, saturate to [lo, hi], NaN -> 0. */
    double f = w.f;
    if (isnan(f)) {
        return 0;
    }
    if (f <= (double)lo) {
        return (uint64_t)lo;
    }
    if (f >= (double)hi) {
        return hi;
    }
    f = trunc(f);
    return f < 0 ? (uint64_t)(int64_t)f : (uint64_t)f;
}

/* 64-bit integers to float with one rounding. Through double alone they would round
 * twice (to 53 bits, then to 24). From 2^53 up, the bits below the top 53 are
 * folded into one sticky bit first, so the double is exact and only its conversion to
 * float rounds, to nearest even. (Done by hand rather than by a C cast, which some
 * emulators also carry out through double.) */
static float
uint64_to_float(uint64_t u)
{
    if (u < (UINT64_C(1) << 53)) {
        return (float)(double)u;
    }
    unsigned shift = 0;
    while ((u >> shift) >= (UINT64_C(1) << 53)) {
        shift++;
    }
    uint64_t sticky = (u & ((UINT64_C(1) << shift) - 1u)) != 0;
    uint64_t top = (u >> shift) | sticky;
    return (float)ldexp((double)top, (int)shift);
}

static float
int64_to_float(int64_t i)
{
    /* 0 - (uint64_t)i is |i| even for INT64_MIN. */
    return i < 0 ? -uint64_to_float(UINT64_C(0) - (uint64_t)i)
                 : uint64_to_float((uint64_t)i);
}

static void
store(void *p, tack_dtype dt, wide w)
{
    switch (dt) {
    case TACK_BOOL: {
        int nz = w.kind == 'f' ? w.f != 0.0 : (w.kind == 'u' ? w.u != 0 : w.i != 0);
        *(uint8_t *)p = (uint8_t)nz;
        break;
    }
    case TACK_INT8:
        *(int8_t *)p = (int8_t)(uint8_t)wide_as_bits(w, INT8_MIN, INT8_MAX);
        break;
    case TACK_INT16:
        *(int16_t *)p = (int16_t)(uint16_t)wide_as_bits(w, INT16_MIN, INT16_MAX);
        break;
    case TACK_INT32:
        *(int32_t *)p = (int32_t)(uint32_t)wide_as_bits(w, INT32_MIN, INT32_MAX);
        break;
    case TACK_INT64:
        *(int64_t *)p = (int64_t)wide_as_bits(w, INT64_MIN, INT64_MAX);
        break;
    case TACK_UINT8: *(uint8_t *)p = (uint8_t)wide_as_bits(w, 0, UINT8_MAX); break;
    case TACK_UINT16: *(uint16_t *)p = (uint16_t)wide_as_bits(w, 0, UINT16_MAX); break;
    case TACK_UINT32: *(uint32_t *)p = (uint32_t)wide_as_bits(w, 0, UINT32_MAX); break;
    case TACK_UINT64: *(uint64_t *)p = wide_as_bits(w, 0, UINT64_MAX); break;
    case TACK_FLOAT16:
        /* Straight from double: through float would round twice. */
        *(uint16_t *)p = tack__double_to_half(wide_as_double(w));
        break;
    case TACK_FLOAT32:
    case TACK_VEC2F:
    case TACK_VEC3F:
    case TACK_VEC4F:
        *(float *)p = w.kind == 'i'   ? int64_to_float(w.i)
                      : w.kind == 'u' ? uint64_to_float(w.u)
                                      : (float)w.f;
        break;
    case TACK_FLOAT64: *(double *)p = wide_as_double(w); break;
    default: break;
    }
}

/* Pairs where a C cast is exactly the rule above (value-preserving widening, and
 * float conversions that round once), as tight loops the compiler vectorises.
 * Returns false for every other pair, which takes the general path. */
/* DT and ST are type names, which cannot be parenthesised. */
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TACK__CAST_LOOP(DT, ST)             \
    do {                                    \
        DT *d_ = dst;                       \
        const ST *s_ = src;                 \
        for (size_t k_ = 0; k_ < n; k_++) { \
            d_[k_] = (DT)s_[k_];            \
        }                                   \
        return true;                        \
    } while (0)
// NOLINTEND(bugprone-macro-parentheses)

/* clang-tidy counts each pair's TACK__CAST_LOOP, expanded, as this function's
 * statements. */
static bool
// NOLINTNEXTLINE(readability-function-size)
convert_direct(void *dst, tack_dtype dt, const void *src, tack_dtype st, size_t n)
{
    switch (dt) {
    case TACK_FLOAT64:
        switch (st) {
        case TACK_FLOAT32: TACK__CAST_LOOP(double, float);
        case TACK_INT8: TACK__CAST_LOOP(double, int8_t);
        case TACK_INT16: TACK__CAST_LOOP(double, int16_t);
        case TACK_INT32: TACK__CAST_LOOP(double, int32_t);
        case TACK_UINT8: TACK__CAST_LOOP(double, uint8_t);
        case TACK_UINT16: TACK__CAST_LOOP(double, uint16_t);
        case TACK_UINT32: TACK__CAST_LOOP(double, uint32_t);
        default: return false;
        }
    case TACK_FLOAT32:
        switch (st) {
        case TACK_FLOAT64: TACK__CAST_LOOP(float, double);
        case TACK_INT8: TACK__CAST_LOOP(float, int8_t);
        case TACK_INT16: TACK__CAST_LOOP(float, int16_t);
        case TACK_UINT8: TACK__CAST_LOOP(float, uint8_t);
        case TACK_UINT16: TACK__CAST_LOOP(float, uint16_t);
        default: return false;
        }
    case TACK_INT64:
        switch (st) {
        case TACK_INT8: TACK__CAST_LOOP(int64_t, int8_t);
        case TACK_INT16: TACK__CAST_LOOP(int64_t, int16_t);
        case TACK_INT32: TACK__CAST_LOOP(int64_t, int32_t);
        case TACK_UINT8: TACK__CAST_LOOP(int64_t, uint8_t);
        case TACK_UINT16: TACK__CAST_LOOP(int64_t, uint16_t);
        case TACK_UINT32: TACK__CAST_LOOP(int64_t, uint32_t);
        default: return false;
        }
    case TACK_INT32:
        switch (st) {
        case TACK_INT8: TACK__CAST_LOOP(int32_t, int8_t);
        case TACK_INT16: TACK__CAST_LOOP(int32_t, int16_t);
        case TACK_UINT8: TACK__CAST_LOOP(int32_t, uint8_t);
        case TACK_UINT16: TACK__CAST_LOOP(int32_t, uint16_t);
        default: return false;
        }
    default: return false;
    }
}
#undef TACK__CAST_LOOP

void
tack_convert(void *dst, tack_dtype dst_dtype, const void *src, tack_dtype src_dtype,
             size_t n)
{
    const tack_dtype_info *di = tack_dtype_get(dst_dtype);
    const tack_dtype_info *si = tack_dtype_get(src_dtype);
    if (n == 0 || !dst || !src || !di || !si) {
        return; /* nothing to convert, or nothing valid to convert with */
    }
    dst_dtype = di->scalar;
    src_dtype = si->scalar;
    size_t dsize = tack_dtype_get(dst_dtype)->itemsize;
    size_t ssize = tack_dtype_get(src_dtype)->itemsize;
    if (dst_dtype == src_dtype) {
        memmove(dst, src, n * dsize);
        return;
    }
    if (convert_direct(dst, dst_dtype, src, src_dtype, n)) {
        return;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t k = 0; k < n; k++) {
        store(d + k * dsize, dst_dtype, load(s + k * ssize, src_dtype));
    }
}

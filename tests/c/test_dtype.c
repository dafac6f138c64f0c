/* test_dtype.c: the dtype table and element conversion. */
#include <math.h>

#include "harness.h"
#include "internal.h"

TACK_TEST(dtype_table_has_sizes_dlpack_codes_and_numpy_strings)
{
    const tack_dtype_info *f32 = tack_dtype_get(TACK_FLOAT32);
    CHECK_EQ_INT(f32->itemsize, 4);
    CHECK_EQ_INT(f32->dlpack_code, 2);
    CHECK_EQ_INT(f32->dlpack_bits, 32);
    CHECK(strcmp(f32->numpy_str, "<f4") == 0);
    const tack_dtype_info *v3 = tack_dtype_get(TACK_VEC3F);
    CHECK_EQ_INT(v3->itemsize, 12);
    CHECK_EQ_INT(v3->ncomponents, 3);
    CHECK_EQ_INT(v3->scalar, TACK_FLOAT32);
    CHECK_EQ_INT(tack_dtype_get(TACK_BOOL)->dlpack_code, 6);
    CHECK_EQ_INT(tack_dtype_get(TACK_UINT16)->dlpack_code, 1);
    CHECK(tack_dtype_get((tack_dtype)TACK_DTYPE_COUNT) == NULL);
}

TACK_TEST(dtype_lookup_by_name_alias_and_dlpack)
{
    tack_dtype dt;
    CHECK_OK(tack_dtype_from_name("float64", &dt));
    CHECK_EQ_INT(dt, TACK_FLOAT64);
    CHECK_OK(tack_dtype_from_name("i32", &dt));
    CHECK_EQ_INT(dt, TACK_INT32);
    CHECK_STATUS(tack_dtype_from_name("complex64", &dt), TACK_ERR_BAD_DTYPE);
    CHECK_OK(tack_dtype_from_dlpack(1, 8, &dt));
    CHECK_EQ_INT(dt, TACK_UINT8);
    CHECK_OK(tack_dtype_from_dlpack(2, 16, &dt));
    CHECK_EQ_INT(dt, TACK_FLOAT16);
    CHECK_STATUS(tack_dtype_from_dlpack(5, 64, &dt), TACK_ERR_DLPACK_DTYPE);
    CHECK_STATUS(tack_dtype_from_dlpack(4, 16, &dt), TACK_ERR_DLPACK_DTYPE);
}

TACK_TEST(conversion_saturates_floats_and_maps_nan_to_zero)
{
    double src[] = {1e10, -1e10, NAN, 3.9, -3.9, INFINITY};
    int32_t dst[6];
    tack_convert(dst, TACK_INT32, src, TACK_FLOAT64, 6);
    CHECK_EQ_INT(dst[0], INT32_MAX);
    CHECK_EQ_INT(dst[1], INT32_MIN);
    CHECK_EQ_INT(dst[2], 0);
    CHECK_EQ_INT(dst[3], 3);
    CHECK_EQ_INT(dst[4], -3);
    CHECK_EQ_INT(dst[5], INT32_MAX);
    uint8_t u[2];
    double neg[] = {-5.0, 300.0};
    tack_convert(u, TACK_UINT8, neg, TACK_FLOAT64, 2);
    CHECK_EQ_INT(u[0], 0);
    CHECK_EQ_INT(u[1], 255);
}

TACK_TEST(conversion_between_integers_wraps_and_keeps_int64_exact)
{
    int64_t big[] = {INT64_MAX, 300, -1};
    int64_t back[3];
    tack_convert(back, TACK_INT64, big, TACK_INT64, 3);
    CHECK_EQ_INT(back[0], INT64_MAX);
    uint8_t w[3];
    tack_convert(w, TACK_UINT8, big, TACK_INT64, 3);
    CHECK_EQ_INT(w[1], 44);
    CHECK_EQ_INT(w[2], 255);
    uint8_t b[3];
    double d[] = {0.0, -0.5, 2.0};
    tack_convert(b, TACK_BOOL, d, TACK_FLOAT64, 3);
    CHECK_EQ_INT(b[0], 0);
    CHECK_EQ_INT(b[1], 1);
    CHECK_EQ_INT(b[2], 1);
}

TACK_TEST(half_precision_round_trips_and_rounds_to_nearest_even)
{
    float values[] = {
        0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        CHECK_EQ_DBL(tack__half_to_float(tack__float_to_half(values[k])), values[k]);
    }
    CHECK(isinf(tack__half_to_float(tack__float_to_half(70000.0f))));
    CHECK(isnan(tack__half_to_float(tack__float_to_half(NAN))));
    /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even (1.0). */
    CHECK_EQ_DBL(tack__half_to_float(tack__float_to_half(1.0f + 0x1p-11f)), 1.0f);
    CHECK_EQ_DBL(tack__half_to_float(tack__float_to_half(1.0f + 0x1.8p-10f)),
                 1.0f + 0x1p-9f);
}

TACK_TEST(float64_to_float16_rounds_once)
{
    /* 1 + 2^-11 + 2^-40 is just above the halfway point between 1 and 1 + 2^-10:
     * rounding through float32 would lose the 2^-40 and tie down to 1. */
    double d = 1.0 + 0x1p-11 + 0x1p-40;
    uint16_t h;
    tack_convert(&h, TACK_FLOAT16, &d, TACK_FLOAT64, 1);
    CHECK_EQ_DBL(tack__half_to_float(h), 1.0 + 0x1p-10);
    double sub = 0x1.8p-24; /* 1.5 smallest subnormals: ties to even (2) */
    tack_convert(&h, TACK_FLOAT16, &sub, TACK_FLOAT64, 1);
    CHECK_EQ_DBL(tack__half_to_float(h), 0x1p-23);
    double big = 65520.0; /* halfway to the next power: rounds to Inf */
    tack_convert(&h, TACK_FLOAT16, &big, TACK_FLOAT64, 1);
    CHECK(isinf(tack__half_to_float(h)));
}

TACK_TEST(int64_to_float32_rounds_once)
{
    /* 2^60 + 2^36 + 1 is just above halfway between two floats; through double the
     * +1 is lost and the tie goes down. */
    int64_t v = (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1;
    float f;
    tack_convert(&f, TACK_FLOAT32, &v, TACK_INT64, 1);
    CHECK_EQ_DBL(f, 0x1.000002p60);
    v = -v;
    tack_convert(&f, TACK_FLOAT32, &v, TACK_INT64, 1);
    CHECK_EQ_DBL(f, -0x1.000002p60);
    v = INT64_MIN;
    tack_convert(&f, TACK_FLOAT32, &v, TACK_INT64, 1);
    CHECK_EQ_DBL(f, -0x1p63);
    uint64_t u = UINT64_MAX; /* rounds up to 2^64 */
    tack_convert(&f, TACK_FLOAT32, &u, TACK_UINT64, 1);
    CHECK_EQ_DBL(f, 0x1p64);
}

TACK_TEST(direct_conversion_pairs_follow_the_general_rules)
{
    /* The fast loops (float widening and narrowing, integer widening) must give what
     * the general element-by-element path gives: compare both for each pair. */
    int16_t i16[4] = {-32768, -1, 0, 32767};
    uint32_t u32[4] = {0, 1, 4000000000u, UINT32_MAX};
    double f64[4] = {0.1, -1e30, 3.4028235677973366e38, 1e-45};
    float f32[4];
    int64_t i64[4];
    double back[4];
    tack_convert(f32, TACK_FLOAT32, i16, TACK_INT16, 4);
    CHECK_EQ_DBL(f32[0], -32768.0);
    CHECK_EQ_DBL(f32[3], 32767.0);
    tack_convert(i64, TACK_INT64, u32, TACK_UINT32, 4);
    CHECK_EQ_INT(i64[2], 4000000000LL);
    CHECK_EQ_INT(i64[3], 4294967295LL);
    tack_convert(f32, TACK_FLOAT32, f64, TACK_FLOAT64, 4);
    CHECK_EQ_DBL(f32[0], 0.1f);
    CHECK_EQ_DBL(f32[1], -1e30f);
    CHECK_EQ_DBL(f32[3], 1e-45f); /* the smallest subnormal float */
    tack_convert(back, TACK_FLOAT64, f32, TACK_FLOAT32, 4);
    CHECK_EQ_DBL(back[0], (double)0.1f);
    tack_convert(back, TACK_FLOAT64, u32, TACK_UINT32, 4);
    CHECK_EQ_DBL(back[3], 4294967295.0);
}

TACK_TEST(dtype_strings_follow_numpy_or_are_refused)
{
    static const struct {
        const char *s;
        tack_dtype want;
    } ok[] = {
        {"i8", TACK_INT64},    {"u8", TACK_UINT64},      {"i1", TACK_INT8},
        {"u2", TACK_UINT16},   {"f2", TACK_FLOAT16},     {"<f8", TACK_FLOAT64},
        {"=f4", TACK_FLOAT32}, {"|b1", TACK_BOOL},       {"float", TACK_FLOAT64},
        {"int", TACK_INT64},   {"double", TACK_FLOAT64}, {"half", TACK_FLOAT16},
        {"?", TACK_BOOL},      {"b", TACK_INT8},         {"B", TACK_UINT8},
        {"d", TACK_FLOAT64},   {"q", TACK_INT64},        {"float32", TACK_FLOAT32},
        {"f32", TACK_FLOAT32}, {"i16", TACK_INT16},      {"u64", TACK_UINT64},
        {"vec3", TACK_VEC3F},  {"bool", TACK_BOOL},      {"uintp", TACK_UINT64},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        tack_dtype dt = TACK_DTYPE_COUNT;
        CHECK_OK(tack_dtype_from_name(ok[k].s, &dt));
        if (dt != ok[k].want) {
            tack_test_fail(__FILE__, __LINE__, "'%s' read as %d, want %d", ok[k].s,
                           (int)dt, (int)ok[k].want);
        }
    }
    static const char *const refused[] = {"f16",     "float128", "longdouble", "c8",
                                          "complex", ">f8",      "g",          "O",
                                          "",        "i3",       "f4 ",        "<f32"};
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        tack_dtype dt = TACK_INT8;
        CHECK_STATUS(tack_dtype_from_name(refused[k], &dt), TACK_ERR_BAD_DTYPE);
        CHECK_EQ_INT(dt, TACK_INT8); /* out untouched on failure */
    }
    tack_dtype dt;
    CHECK_STATUS(tack_dtype_from_name("f16", &dt), TACK_ERR_BAD_DTYPE);
    CHECK(strstr(tack_last_error(), "NumPy") != NULL);
}

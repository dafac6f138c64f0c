/*
 * dtype.h: element types. Every dtype has an item size, the DLPack (code, bits) of its
 * scalar and a NumPy type string. The vector types vec2/vec3/vec4 are packed float32
 * tuples; DLPack and NumPy see them as a trailing dimension of float32 (lanes stay 1).
 */
#ifndef TACK_DTYPE_H
#define TACK_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/export.h"
#include "tack/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum, name, alias, C type, item size, DLPack code, DLPack bits, components,
 *   NumPy type string, class) -- class: 'b' bool, 'i' signed, 'u' unsigned, 'f' float
 */
#define TACK_DTYPE_LIST(X)                                                             \
    X(TACK_BOOL, "bool", "b1", uint8_t, 1, 6, 8, 1, "|b1", 'b', TACK_BOOL)             \
    X(TACK_INT8, "int8", "i8", int8_t, 1, 0, 8, 1, "|i1", 'i', TACK_INT8)              \
    X(TACK_INT16, "int16", "i16", int16_t, 2, 0, 16, 1, "<i2", 'i', TACK_INT16)        \
    X(TACK_INT32, "int32", "i32", int32_t, 4, 0, 32, 1, "<i4", 'i', TACK_INT32)        \
    X(TACK_INT64, "int64", "i64", int64_t, 8, 0, 64, 1, "<i8", 'i', TACK_INT64)        \
    X(TACK_UINT8, "uint8", "u8", uint8_t, 1, 1, 8, 1, "|u1", 'u', TACK_UINT8)          \
    X(TACK_UINT16, "uint16", "u16", uint16_t, 2, 1, 16, 1, "<u2", 'u', TACK_UINT16)    \
    X(TACK_UINT32, "uint32", "u32", uint32_t, 4, 1, 32, 1, "<u4", 'u', TACK_UINT32)    \
    X(TACK_UINT64, "uint64", "u64", uint64_t, 8, 1, 64, 1, "<u8", 'u', TACK_UINT64)    \
    X(TACK_FLOAT16, "float16", "f16", uint16_t, 2, 2, 16, 1, "<f2", 'f', TACK_FLOAT16) \
    X(TACK_FLOAT32, "float32", "f32", float, 4, 2, 32, 1, "<f4", 'f', TACK_FLOAT32)    \
    X(TACK_FLOAT64, "float64", "f64", double, 8, 2, 64, 1, "<f8", 'f', TACK_FLOAT64)   \
    X(TACK_VEC2F, "vec2", "vec2", float, 8, 2, 32, 2, "<f4", 'f', TACK_FLOAT32)        \
    X(TACK_VEC3F, "vec3", "vec3", float, 12, 2, 32, 3, "<f4", 'f', TACK_FLOAT32)       \
    X(TACK_VEC4F, "vec4", "vec4", float, 16, 2, 32, 4, "<f4", 'f', TACK_FLOAT32)

typedef enum tack_dtype {
#define TACK__DTYPE_ENUM(e, name, alias, ctype, size, code, bits, ncomp, np, cls, sc) e,
    TACK_DTYPE_LIST(TACK__DTYPE_ENUM)
#undef TACK__DTYPE_ENUM
        TACK_DTYPE_COUNT
} tack_dtype;

/* What is known about one dtype. All strings are static. */
typedef struct tack_dtype_info {
    const char *name;      /* "float32" */
    const char *alias;     /* "f32": tack.f32 in Python */
    size_t itemsize;       /* bytes per element, vec3 = 12 */
    uint8_t dlpack_code;   /* DLPack type code of the scalar (kDLFloat = 2) */
    uint8_t dlpack_bits;   /* bits of the scalar */
    uint8_t ncomponents;   /* 1 for scalars, 2..4 for vec types */
    const char *numpy_str; /* NumPy type string of the scalar: "<f4" */
    char kind;             /* 'b' bool, 'i' signed int, 'u' unsigned int, 'f' float */
    tack_dtype scalar;     /* the scalar dtype: TACK_FLOAT32 for the vec types */
} tack_dtype_info;

/* The info of a dtype, or NULL for a value outside the enum. Borrowed: static. */
TACK_API const tack_dtype_info *tack_dtype_get(tack_dtype dt);

/* Looks a dtype up by name or alias ("float32", "f32"). Out: *out on success;
 * TACK_ERR_BAD_DTYPE otherwise. */
TACK_API tack_status tack_dtype_from_name(const char *name, tack_dtype *out);

/* The scalar dtype of a DLPack (code, bits) pair with lanes 1. Out: *out on success;
 * TACK_ERR_DLPACK_DTYPE for a pair Tack has no dtype for. */
TACK_API tack_status tack_dtype_from_dlpack(uint8_t code, uint8_t bits,
                                            tack_dtype *out);

/*
 * Converts n scalars of src_dtype at src into dst_dtype at dst, both host memory (vec
 * dtypes count as their float32 scalars). Rules: the same dtype copies; to bool is
 * "nonzero"; integer to integer wraps modulo 2^bits; float to integer truncates
 * toward zero, saturates at the target's range and maps NaN to 0; to float rounds
 * to nearest.
 */
TACK_API void tack_convert(void *dst, tack_dtype dst_dtype, const void *src,
                           tack_dtype src_dtype, size_t n);

/* A host scalar of one of the four kinds a caller's language has. */
typedef enum tack_scalar_kind {
    TACK_SCALAR_BOOL,
    TACK_SCALAR_INT,  /* v.i: a signed 64-bit integer */
    TACK_SCALAR_UINT, /* v.u: an unsigned 64-bit integer (above INT64_MAX) */
    TACK_SCALAR_FLOAT /* v.f: a double */
} tack_scalar_kind;

typedef struct tack_scalar {
    tack_scalar_kind kind;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
    } v;
} tack_scalar;

/*
 * Converts a host scalar into one element of dtype at out (itemsize bytes; a vec
 * dtype gets it in every component). An integer stored in an integer dtype must fit
 * its range, as in NumPy (TACK_ERR_VALUE_OVERFLOW: np.int8(300) is refused, not
 * wrapped); into bool it is "nonzero"; into a float it rounds to nearest. A float
 * converts as tack_convert does. Out: *out only on success.
 */
TACK_API tack_status tack_scalar_to_element(const tack_scalar *s, tack_dtype dtype,
                                            void *out);

/* Reads component (0 for scalars) of the element of dtype at p: a BOOL, INT (signed
 * dtypes), UINT (unsigned) or FLOAT (float dtypes, widened to double) scalar. */
TACK_API tack_status tack_element_to_scalar(const void *p, tack_dtype dtype,
                                            uint32_t component, tack_scalar *out);

#ifdef __cplusplus
}
#endif

#endif /* TACK_DTYPE_H */

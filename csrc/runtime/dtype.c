/*
 * dtype.c: the dtype table, generated from TACK_DTYPE_LIST.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const tack_dtype_info tack__dtype_table[TACK_DTYPE_COUNT] = {
#define TACK__DTYPE_ROW(e, name, alias, ctype, size, code, bits, ncomp, np, cls, sc) \
    {name, alias, size, code, bits, ncomp, np, cls, sc},
    TACK_DTYPE_LIST(TACK__DTYPE_ROW)
#undef TACK__DTYPE_ROW
};

/* The C type sizes must agree with the table: conversion code relies on it. */
#define TACK__DTYPE_SIZE_CHECK(e, name, alias, ctype, size, code, bits, ncomp, np, \
                               cls, sc)                                            \
    _Static_assert(sizeof(ctype) * (ncomp) == (size), "item size of " name);
TACK_DTYPE_LIST(TACK__DTYPE_SIZE_CHECK)
#undef TACK__DTYPE_SIZE_CHECK

const tack_dtype_info *
tack_dtype_get(tack_dtype dt)
{
    if ((unsigned)dt >= (unsigned)TACK_DTYPE_COUNT) {
        return NULL;
    }
    return &tack__dtype_table[dt];
}

/*
 * Dtype strings. One rule for the C API and for Python: a string NumPy understands
 * means what NumPy means, or is refused; Tack's own names ("float32", "vec3") and the
 * short aliases NumPy has no meaning for ("f32", "i32", "u64") keep theirs. So "i8"
 * is int64 and "u8" uint64 (NumPy counts bytes), "f16" (float128) is refused, and
 * "float" and "int" are float64 and the pointer-sized int, as in NumPy 2.
 */

/* A dtype of a NumPy kind ('b', 'i', 'u', 'f') and item size, or TACK_DTYPE_COUNT. */
static tack_dtype
kind_and_size(char kind, size_t size)
{
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        const tack_dtype_info *info = &tack__dtype_table[i];
        if (info->ncomponents == 1 && info->kind == kind && info->itemsize == size) {
            return (tack_dtype)i;
        }
    }
    return TACK_DTYPE_COUNT;
}

/* NumPy's names of C types and its one-character codes, with their item sizes as
 * this platform's C compiler (and so NumPy) sees them. */
typedef struct {
    const char *name;
    char kind;
    size_t size;
} numpy_name;

static const numpy_name numpy_names[] = {
    {"bool_", 'b', 1},
    {"byte", 'i', 1},
    {"ubyte", 'u', 1},
    {"short", 'i', sizeof(short)},
    {"ushort", 'u', sizeof(short)},
    {"intc", 'i', sizeof(int)},
    {"uintc", 'u', sizeof(int)},
    {"long", 'i', sizeof(long)},
    {"ulong", 'u', sizeof(long)},
    {"longlong", 'i', sizeof(long long)},
    {"ulonglong", 'u', sizeof(long long)},
    {"int", 'i', sizeof(intptr_t)}, /* NumPy 2: the default int is intp */
    {"int_", 'i', sizeof(intptr_t)},
    {"intp", 'i', sizeof(intptr_t)},
    {"uint", 'u', sizeof(uintptr_t)},
    {"uintp", 'u', sizeof(uintptr_t)},
    {"half", 'f', 2},
    {"single", 'f', 4},
    {"float", 'f', 8},
    {"double", 'f', 8},
    {"?", 'b', 1},
    {"b", 'i', 1},
    {"B", 'u', 1},
    {"h", 'i', sizeof(short)},
    {"H", 'u', sizeof(short)},
    {"i", 'i', sizeof(int)},
    {"I", 'u', sizeof(int)},
    {"l", 'i', sizeof(long)},
    {"L", 'u', sizeof(long)},
    {"q", 'i', sizeof(long long)},
    {"Q", 'u', sizeof(long long)},
    {"p", 'i', sizeof(intptr_t)},
    {"P", 'u', sizeof(uintptr_t)},
    {"e", 'f', 2},
    {"f", 'f', 4},
    {"d", 'f', 8},
};

/* NumPy types Tack has no dtype for, named so the refusal can say what they are. */
static const char *const numpy_foreign[] = {
    "longdouble",  "float128",   "float96",    "g",          "clongdouble", "complex",
    "complex64",   "complex128", "complex256", "cdouble",    "csingle",     "F",
    "D",           "G",          "object",     "object_",    "O",           "str",
    "str_",        "unicode",    "U",          "bytes",      "bytes_",      "S",
    "a",           "void",       "V",          "datetime64", "M",           "M8",
    "timedelta64", "m",          "m8",
};

static bool
little_endian(void)
{
    const uint16_t probe = 1;
    return *(const unsigned char *)&probe == 1;
}

static tack_status
refuse_string(const char *name, const char *numpy_reading)
{
    if (numpy_reading) {
        return tack__fail(TACK_ERR_BAD_DTYPE,
                          "dtype '%.64s' is %s in NumPy, which Tack has no dtype for: "
                          "use one of bool, int8..int64, uint8..uint64, float16, "
                          "float32, float64, vec2, vec3, vec4",
                          name, numpy_reading);
    }
    return tack__fail(TACK_ERR_BAD_DTYPE,
                      "unknown dtype '%.64s': use one of bool, int8..int64, "
                      "uint8..uint64, float16, float32, float64, vec2, vec3, vec4 (or "
                      "a NumPy spelling of one, such as 'f4' or 'int')",
                      name);
}

/* A NumPy type string: an optional byte order, then a one-character code or a kind
 * and an item size in bytes ("<f8", "i4", "=d", "|b1"). Returns 1 and sets *out when
 * s is one, 0 when s is not NumPy's, and -1 (failure recorded) when NumPy reads it as
 * a type Tack does not have. */
static int
numpy_type_string(const char *s, tack_dtype *out)
{
    const char *name = s;
    char order = 0;
    if (*s == '<' || *s == '>' || *s == '=' || *s == '|') {
        order = *s++;
    }
    char kind = 0;
    size_t size = 0;
    for (size_t k = 0; k < sizeof numpy_names / sizeof numpy_names[0]; k++) {
        if (numpy_names[k].name[1] == '\0' && strcmp(numpy_names[k].name, s) == 0) {
            kind = numpy_names[k].kind;
            size = numpy_names[k].size;
        }
    }
    if (!kind && s[0] && strchr("biufc", s[0]) && s[1] >= '1' && s[1] <= '9') {
        char *end = NULL;
        unsigned long n = strtoul(s + 1, &end, 10);
        if (*end != '\0' || n > 64) {
            return 0;
        }
        kind = s[0];
        size = (size_t)n;
    }
    if (!kind) {
        return 0;
    }
    /* NumPy knows these sizes only: anything else ("i16", "f32") is not its own
     * string and may still be a Tack alias. */
    bool numpy_size =
        (kind == 'b' && size == 1) ||
        ((kind == 'i' || kind == 'u') &&
         (size == 1 || size == 2 || size == 4 || size == 8)) ||
        (kind == 'f' &&
         (size == 2 || size == 4 || size == 8 || size == 12 || size == 16)) ||
        (kind == 'c' && (size == 8 || size == 16 || size == 24 || size == 32));
    if (!numpy_size) {
        return 0;
    }
    tack_dtype dt = kind == 'c' ? TACK_DTYPE_COUNT : kind_and_size(kind, size);
    if (dt == TACK_DTYPE_COUNT) {
        refuse_string(name, kind == 'c'   ? "a complex type"
                            : kind == 'f' ? "an extended-precision float"
                                          : "a type of another size");
        return -1;
    }
    /* Another byte order than this machine's cannot be read in place. */
    bool foreign_order = size > 1 && ((order == '>' && little_endian()) ||
                                      (order == '<' && !little_endian()));
    if (foreign_order) {
        tack__fail(TACK_ERR_BAD_DTYPE,
                   "dtype '%.64s' has the other byte order than this machine: convert "
                   "the data to native byte order first",
                   name);
        return -1;
    }
    *out = dt;
    return 1;
}

tack_status
tack_dtype_from_name(const char *name, tack_dtype *out)
{
    TACK__CHECK_ARG(out);
    if (!name) {
        return refuse_string("(null)", NULL);
    }
    /* Tack's own names ("float32", "bool", "vec3") are also NumPy's where both exist.
     */
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        if (strcmp(name, tack__dtype_table[i].name) == 0) {
            *out = (tack_dtype)i;
            return TACK_OK;
        }
    }
    for (size_t k = 0; k < sizeof numpy_names / sizeof numpy_names[0]; k++) {
        if (numpy_names[k].name[1] != '\0' && strcmp(numpy_names[k].name, name) == 0) {
            *out = kind_and_size(numpy_names[k].kind, numpy_names[k].size);
            return TACK_OK;
        }
    }
    for (size_t k = 0; k < sizeof numpy_foreign / sizeof numpy_foreign[0]; k++) {
        if (strcmp(numpy_foreign[k], name) == 0) {
            return refuse_string(name, "a type");
        }
    }
    tack_dtype dt = TACK_DTYPE_COUNT;
    int rc = numpy_type_string(name, &dt);
    if (rc > 0) {
        *out = dt;
        return TACK_OK;
    }
    if (rc < 0) {
        return TACK_ERR_BAD_DTYPE;
    }
    /* Tack's short aliases NumPy has no meaning for ("f32", "i64", "vec3"). */
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        if (strcmp(name, tack__dtype_table[i].alias) == 0) {
            *out = (tack_dtype)i;
            return TACK_OK;
        }
    }
    return refuse_string(name, NULL);
}

tack_status
tack_dtype_from_dlpack(uint8_t code, uint8_t bits, tack_dtype *out)
{
    TACK__CHECK_ARG(out);
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        const tack_dtype_info *info = &tack__dtype_table[i];
        if (info->ncomponents == 1 && info->dlpack_code == code &&
            info->dlpack_bits == bits) {
            *out = (tack_dtype)i;
            return TACK_OK;
        }
    }
    return tack__fail(TACK_ERR_DLPACK_DTYPE,
                      "DLPack dtype (code %u, bits %u) has no Tack equivalent: convert "
                      "the tensor to bool, an integer or a float16/32/64 type first",
                      (unsigned)code, (unsigned)bits);
}

/*
 * dtype.c: the dtype table, generated from TACK_DTYPE_LIST.
 */
#include <string.h>

#include "internal.h"

static const tack_dtype_info dtype_table[] = {
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
    return &dtype_table[dt];
}

tack_status
tack_dtype_from_name(const char *name, tack_dtype *out)
{
    TACK__CHECK_ARG(out);
    if (name) {
        for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
            if (strcmp(name, dtype_table[i].name) == 0 ||
                strcmp(name, dtype_table[i].alias) == 0) {
                *out = (tack_dtype)i;
                return TACK_OK;
            }
        }
    }
    return tack__fail(
        TACK_ERR_BAD_DTYPE,
        "unknown dtype '%s': use one of bool, int8..int64, uint8..uint64, "
        "float16, float32, float64, vec2, vec3, vec4",
        name ? name : "(null)");
}

tack_status
tack_dtype_from_dlpack(uint8_t code, uint8_t bits, tack_dtype *out)
{
    TACK__CHECK_ARG(out);
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        const tack_dtype_info *info = &dtype_table[i];
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

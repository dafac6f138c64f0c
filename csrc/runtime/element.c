/*
 * element.c: single elements: host scalars in and out of a dtype, and reading or
 * writing one element of an array wherever its memory is.
 *
 * The scalar rules are NumPy's for Python scalars: an integer stored in an integer
 * dtype must fit its range (np.int8(300) is an OverflowError, not 44); into bool it
 * is "nonzero"; into a float it rounds to nearest, once (float16 included). A float
 * follows tack_convert (truncation toward zero, saturation, NaN to 0). A vec dtype
 * takes one scalar in every component.
 */
#include <string.h>

#include "internal.h"

/* Bytes of the largest element (vec4: four float32). */
#define TACK__ELEMENT_CAP 16

static tack_status
out_of_range(const tack_scalar *s, const tack_dtype_info *info)
{
    if (s->kind == TACK_SCALAR_UINT) {
        return tack__fail(TACK_ERR_VALUE_OVERFLOW,
                          "integer %llu is out of bounds for %s",
                          (unsigned long long)s->v.u, info->name);
    }
    return tack__fail(TACK_ERR_VALUE_OVERFLOW, "integer %lld is out of bounds for %s",
                      (long long)s->v.i, info->name);
}

/* Whether an integer scalar fits the range of the integer dtype info. */
static bool
int_fits(const tack_scalar *s, const tack_dtype_info *info)
{
    unsigned bits = (unsigned)info->itemsize * 8u;
    if (s->kind == TACK_SCALAR_UINT) {
        uint64_t max = info->kind == 'u'
                           ? (bits == 64 ? UINT64_MAX : (1ULL << bits) - 1)
                           : (1ULL << (bits - 1)) - 1;
        return s->v.u <= max;
    }
    int64_t v = s->v.i;
    if (info->kind == 'u') {
        return v >= 0 && (bits == 64 || (uint64_t)v <= (1ULL << bits) - 1);
    }
    int64_t lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
    int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    return v >= lo && v <= hi;
}

tack_status
tack_scalar_to_element(const tack_scalar *s, tack_dtype dtype, void *out)
{
    TACK__CHECK_ARG(s);
    TACK__CHECK_ARG(out);
    tack_status st = tack__check_dtype(dtype);
    if (st != TACK_OK) {
        return st;
    }
    const tack_dtype_info *info = tack_dtype_get(dtype);
    const tack_dtype_info *sinfo = tack_dtype_get(info->scalar);
    bool integer_target = sinfo->kind == 'i' || sinfo->kind == 'u';
    switch (s->kind) {
    case TACK_SCALAR_BOOL: {
        uint8_t b = s->v.b ? 1 : 0;
        tack_convert(out, info->scalar, &b, TACK_BOOL, 1);
        break;
    }
    case TACK_SCALAR_INT:
    case TACK_SCALAR_UINT:
        if (integer_target && !int_fits(s, sinfo)) {
            return out_of_range(s, sinfo);
        }
        if (s->kind == TACK_SCALAR_INT) {
            tack_convert(out, info->scalar, &s->v.i, TACK_INT64, 1);
        }
        else {
            tack_convert(out, info->scalar, &s->v.u, TACK_UINT64, 1);
        }
        break;
    case TACK_SCALAR_FLOAT:
        tack_convert(out, info->scalar, &s->v.f, TACK_FLOAT64, 1);
        break;
    default:
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "scalar kind %d is not a Tack scalar", (int)s->kind);
    }
    /* Vec types repeat the scalar in every component. */
    for (size_t c = 1; c < info->ncomponents; c++) {
        memcpy((unsigned char *)out + c * sinfo->itemsize, out, sinfo->itemsize);
    }
    return TACK_OK;
}

tack_status
tack_element_to_scalar(const void *p, tack_dtype dtype, uint32_t component,
                       tack_scalar *out)
{
    TACK__CHECK_ARG(p);
    TACK__CHECK_ARG(out);
    const tack_dtype_info *info = tack_dtype_get(dtype);
    if (!info || component >= info->ncomponents) {
        return tack__fail(TACK_ERR_INVALID_ARGUMENT,
                          "component %u of dtype value %d does not exist",
                          (unsigned)component, (int)dtype);
    }
    const tack_dtype_info *sinfo = tack_dtype_get(info->scalar);
    const void *q = (const unsigned char *)p + component * sinfo->itemsize;
    tack_scalar s;
    switch (sinfo->kind) {
    case 'b':
        s.kind = TACK_SCALAR_BOOL;
        s.v.b = *(const uint8_t *)q != 0;
        break;
    case 'u':
        s.kind = TACK_SCALAR_UINT;
        tack_convert(&s.v.u, TACK_UINT64, q, info->scalar, 1);
        break;
    case 'i':
        s.kind = TACK_SCALAR_INT;
        tack_convert(&s.v.i, TACK_INT64, q, info->scalar, 1);
        break;
    default:
        s.kind = TACK_SCALAR_FLOAT;
        tack_convert(&s.v.f, TACK_FLOAT64, q, info->scalar, 1);
        break;
    }
    *out = s;
    return TACK_OK;
}

tack_status
tack_array_element_offset(const tack_array *arr, int32_t nindex, const int64_t *index,
                          size_t *offset)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(offset);
    if (nindex > 0) {
        TACK__CHECK_ARG(index);
    }
    if (nindex != arr->ndim) {
        return tack__fail(TACK_ERR_INDEX,
                          "a %d-d array takes %d indices, not %d (Tack arrays have no "
                          "slicing: every index picks one element)",
                          (int)arr->ndim, (int)arr->ndim, (int)nindex);
    }
    size_t off = 0;
    for (int32_t k = 0; k < nindex; k++) {
        int64_t i = index[k], extent = arr->shape[k];
        if (i < 0) {
            i += extent; /* from the end, as in Python */
        }
        if (i < 0 || i >= extent) {
            return tack__fail(
                TACK_ERR_INDEX,
                "index %lld is out of range for dimension %d of extent %lld",
                (long long)index[k], (int)k, (long long)extent);
        }
        off = off * (size_t)extent + (size_t)i;
    }
    *offset = off;
    return TACK_OK;
}

static tack_status
check_offset(const tack_array *arr, size_t offset)
{
    if (offset >= arr->nelem) {
        return tack__fail(TACK_ERR_INDEX,
                          "element %zu is out of range for an array of %zu elements",
                          offset, arr->nelem);
    }
    return TACK_OK;
}

/* Copies one element between host memory and the array, wherever its memory is:
 * store writes host into the array, otherwise the array's element goes to host.
 * Launches that use the array finish first, on every backend. */
static tack_status
element_copy(const tack_array *arr, size_t offset, void *host, bool store)
{
    tack_status st = tack__check_live(arr, store ? "element store" : "element read");
    if (st == TACK_OK) {
        st = check_offset(arr, offset);
    }
    if (st != TACK_OK) {
        return st;
    }
    tack_device *dev = arr->buffer->device;
    st = tack_device_synchronize(dev);
    if (st != TACK_OK) {
        return st;
    }
    size_t itemsize = tack_dtype_get(arr->dtype)->itemsize;
    assert(itemsize <= TACK__ELEMENT_CAP);
    unsigned char *element = (unsigned char *)arr->buffer->data + offset * itemsize;
    if (tack__device_is_host(dev)) {
        memcpy(store ? element : host, store ? host : element, itemsize);
        return TACK_OK;
    }
    return store ? dev->backend->copy(dev->state, element, host, itemsize,
                                      TACK_COPY_HOST_TO_DEVICE)
                 : dev->backend->copy(dev->state, host, element, itemsize,
                                      TACK_COPY_DEVICE_TO_HOST);
}

tack_status
tack_array_get_element(const tack_array *arr, size_t offset, void *out)
{
    TACK__CHECK_ARG(arr);
    TACK__CHECK_ARG(out);
    return element_copy(arr, offset, out, false);
}

tack_status
tack_array_set_element(tack_array *arr, size_t offset, const void *value)
{
    TACK__CHECK_ARG(arr);
    if (!arr->writable) {
        return tack__fail_remedy(TACK_ERR_READ_ONLY, TACK_REMEDY_WRITABLE_COPY,
                                 "element store: the array is read-only (a read-only "
                                 "import or view)");
    }
    TACK__CHECK_ARG(value);
    return element_copy(arr, offset, (void *)(uintptr_t)value, true);
}

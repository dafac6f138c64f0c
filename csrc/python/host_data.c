/*
 * host_data.c: host data in and out of arrays: contiguous host buffers from anything
 * NumPy can read, and NumPy copies of arrays.
 */
#include "tackpy.h"
#include <math.h>
#include <string.h>

/* The dtype of a struct-module format with the given item size. */
static int
dtype_from_format(const char *fmt, Py_ssize_t itemsize, tack_dtype *out)
{
    if (!fmt) {
        fmt = "B";
    }
    if (*fmt == '@' || *fmt == '=' || *fmt == '<' || *fmt == '|') {
        fmt++;
    }
    if (fmt[0] == '\0' || fmt[1] != '\0') {
        return -1;
    }
    char c = fmt[0];
    switch (c) {
    case '?': *out = TACK_BOOL; return 0;
    case 'e': *out = TACK_FLOAT16; return 0;
    case 'f': *out = TACK_FLOAT32; return 0;
    case 'd': *out = TACK_FLOAT64; return 0;
    default: break;
    }
    static const tack_dtype sints[] = {TACK_INT8, TACK_INT16, TACK_INT32, TACK_INT64};
    static const tack_dtype uints[] = {TACK_UINT8, TACK_UINT16, TACK_UINT32,
                                       TACK_UINT64};
    int slot = itemsize == 1   ? 0
               : itemsize == 2 ? 1
               : itemsize == 4 ? 2
               : itemsize == 8 ? 3
                               : -1;
    if (slot < 0) {
        return -1;
    }
    if (strchr("bhilq", c)) {
        *out = sints[slot];
        return 0;
    }
    if (strchr("BHILQ", c)) {
        *out = uints[slot];
        return 0;
    }
    return -1;
}

/* Reads obj's buffer as C-contiguous data of a Tack dtype. Returns 0; 1 when the
 * buffer is usable only after NumPy's help (not C-contiguous, another byte order, no
 * Tack dtype for its format), with no exception set; -1 on another error. */
static int
host_from_buffer(tackpy_state *st, PyObject *obj, tackpy_host *out)
{
    if (PyObject_GetBuffer(obj, &out->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        /* Exporters refuse with BufferError or (NumPy) ValueError. */
        if (PyErr_ExceptionMatches(PyExc_BufferError) ||
            PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            return 1;
        }
        return -1;
    }
    if (dtype_from_format(out->view.format, out->view.itemsize, &out->dtype) < 0) {
        PyBuffer_Release(&out->view);
        return 1;
    }
    out->ndim = out->view.ndim;
    if (out->ndim > TACK_MAX_NDIM) {
        PyBuffer_Release(&out->view);
        tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                         "data has more than %d dimensions", TACK_MAX_NDIM);
        return -1;
    }
    out->nscalars = 1;
    for (int k = 0; k < out->ndim; k++) {
        out->shape[k] = (int64_t)out->view.shape[k];
        out->nscalars *= (size_t)out->view.shape[k];
    }
    out->owner = Py_NewRef(obj);
    return 0;
}

/* NumPy's reading of obj: a C-ordered array in native byte order (0-d stays 0-d).
 * Returns: new reference, or NULL with an exception set. */
static PyObject *
numpy_native(tackpy_state *st, PyObject *obj)
{
    PyObject *np = tackpy_numpy(st);
    if (!np) {
        return NULL;
    }
    PyObject *kw = Py_BuildValue("{s:s}", "order", "C");
    PyObject *args = PyTuple_Pack(1, obj);
    PyObject *asarray = PyObject_GetAttrString(np, "asarray");
    PyObject *arr = kw && args && asarray ? PyObject_Call(asarray, args, kw) : NULL;
    Py_XDECREF(asarray);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    if (!arr) {
        return NULL;
    }
    /* Another byte order: convert, so that '>i4' data arrives as its values. */
    PyObject *dt = PyObject_GetAttrString(arr, "dtype");
    PyObject *native = dt ? PyObject_CallMethod(dt, "newbyteorder", "s", "=") : NULL;
    Py_XDECREF(dt);
    PyObject *out = native ? PyObject_CallMethod(arr, "astype", "O", native) : NULL;
    Py_XDECREF(native);
    Py_DECREF(arr);
    return out;
}

int
tackpy_host_get(tackpy_state *st, PyObject *obj, tackpy_host *out)
{
    memset(out, 0, sizeof *out);
    if (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj) && !PyByteArray_Check(obj)) {
        int rc = host_from_buffer(st, obj, out);
        if (rc <= 0) {
            return rc;
        }
    }
    PyObject *arr = numpy_native(st, obj);
    if (!arr) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) ||
            PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                             "%.100s cannot be read as an array of numbers: %S",
                             Py_TYPE(obj)->tp_name, value ? value : Py_None);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        return -1;
    }
    int rc = host_from_buffer(st, arr, out);
    if (rc == 1) {
        PyObject *dt = PyObject_GetAttrString(arr, "dtype");
        tackpy_raise_fmt(
            st, TACK_ERR_BAD_TYPE,
            "elements of dtype %S have no Tack dtype: convert the data to bool, "
            "an integer or a float type first",
            dt ? dt : Py_None);
        Py_XDECREF(dt);
        rc = -1;
    }
    Py_DECREF(arr);
    return rc;
}

void
tackpy_host_release(tackpy_host *h)
{
    PyBuffer_Release(&h->view);
    Py_CLEAR(h->owner);
}

PyObject *
tackpy_scalar_shape(const tack_array *arr)
{
    const tack_dtype_info *info = tack_dtype_get(tack_array_dtype(arr));
    int ndim = tack_array_ndim(arr);
    int extra = info->ncomponents > 1;
    PyObject *shape = PyTuple_New(ndim + extra);
    if (!shape) {
        return NULL;
    }
    for (int k = 0; k < ndim + extra; k++) {
        PyObject *v = k < ndim ? PyLong_FromLongLong(tack_array_shape(arr)[k])
                               : PyLong_FromLong(info->ncomponents);
        if (!v) {
            Py_DECREF(shape);
            return NULL;
        }
        PyTuple_SET_ITEM(shape, k, v);
    }
    return shape;
}

PyObject *
tackpy_array_to_numpy(tackpy_state *st, const tack_array *arr, PyObject *dtype)
{
    PyObject *np = tackpy_numpy(st);
    if (!np) {
        return NULL;
    }
    const tack_dtype_info *info = tack_dtype_get(tack_array_dtype(arr));
    PyObject *shape = tackpy_scalar_shape(arr);
    if (!shape) {
        return NULL;
    }
    PyObject *out = PyObject_CallMethod(np, "empty", "Os", shape, info->numpy_str);
    Py_DECREF(shape);
    if (!out) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    tack_status status;
    Py_BEGIN_ALLOW_THREADS
        status = tack_array_copy_to_host(arr, view.buf, info->scalar);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (status != TACK_OK) {
        Py_DECREF(out);
        return tackpy_raise(st, status);
    }
    if (dtype && dtype != Py_None) {
        PyObject *cast = PyObject_CallMethod(out, "astype", "O", dtype);
        Py_DECREF(out);
        return cast;
    }
    return out;
}

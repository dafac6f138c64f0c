/*
 * scalars.c: Python scalars in and out of array elements. A binding only: it reads a
 * Python or NumPy bool, int or float into a tack_scalar and back (a complex number
 * is refused, never truncated to its real part); the range checks and
 * conversions are the runtime's (tack_scalar_to_element, tack_element_to_scalar).
 */
#include "tackpy.h"
#include <string.h>

/* A Python int as a tack_scalar: INT when it fits int64, UINT when it fits uint64.
 * Returns 0; 1 (no exception) when it fits neither; -1 with an exception. */
static int
int_scalar(PyObject *obj, tack_scalar *out)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (!overflow) {
        out->kind = TACK_SCALAR_INT;
        out->v.i = (int64_t)v;
        return 0;
    }
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(obj);
        if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
            out->kind = TACK_SCALAR_UINT;
            out->v.u = (uint64_t)u;
            return 0;
        }
        PyErr_Clear();
    }
    return 1;
}

/* A Python int (or __index__ object, index already taken) into one element. */
static int
int_to_element(tackpy_state *st, PyObject *obj, tack_dtype dtype, void *out)
{
    tack_scalar s;
    int rc = int_scalar(obj, &s);
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        /* Beyond 64 bits: a float dtype takes it as a double (OverflowError past
         * float64's range, as NumPy); an integer dtype cannot hold it. */
        const tack_dtype_info *info = tack_dtype_get(tack_dtype_get(dtype)->scalar);
        if (info->kind != 'f') {
            return tackpy_raise_fmt_int(st, TACK_ERR_VALUE_OVERFLOW,
                                        "Python integer %R is out of bounds for %s",
                                        obj, info->name);
        }
        s.kind = TACK_SCALAR_FLOAT;
        s.v.f = PyLong_AsDouble(obj);
        if (s.v.f == -1.0 && PyErr_Occurred()) {
            return -1;
        }
    }
    tack_status status = tack_scalar_to_element(&s, dtype, out);
    return status == TACK_OK ? 0 : tackpy_raise_int(st, status);
}

bool
tackpy_is_numpy_bool(PyObject *obj)
{
    const char *name = Py_TYPE(obj)->tp_name;
    return strcmp(name, "numpy.bool") == 0 || strcmp(name, "numpy.bool_") == 0;
}

bool
tackpy_is_complex(PyObject *obj)
{
    if (PyComplex_Check(obj)) {
        return true;
    }
    if (PyLong_Check(obj) || PyFloat_Check(obj)) {
        return false; /* the common numbers, without a lookup */
    }
    PyObject *m = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__complex__");
    Py_XDECREF(m);
    PyErr_Clear();
    return m != NULL;
}

int
tackpy_scalar_to_element(tackpy_state *st, PyObject *obj, tack_dtype dtype, void *out)
{
    const tack_dtype_info *info = tack_dtype_get(dtype);
    if (info->ncomponents > 1 && PySequence_Check(obj) && !PyUnicode_Check(obj)) {
        /* A vec element given component by component. */
        Py_ssize_t n = PySequence_Size(obj);
        if (n != (Py_ssize_t)info->ncomponents) {
            return n < 0
                       ? -1
                       : tackpy_raise_fmt_int(st, TACK_ERR_INVALID_ARGUMENT,
                                              "a %s element has %d components, not %zd",
                                              info->name, (int)info->ncomponents, n);
        }
        size_t ssize = tack_dtype_get(info->scalar)->itemsize;
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *item = PySequence_GetItem(obj, k);
            if (!item) {
                return -1;
            }
            int rc = tackpy_scalar_to_element(st, item, info->scalar,
                                              (unsigned char *)out + (size_t)k * ssize);
            Py_DECREF(item);
            if (rc < 0) {
                return -1;
            }
        }
        return 0;
    }
    tack_scalar s;
    if (PyBool_Check(obj)) {
        s.kind = TACK_SCALAR_BOOL;
        s.v.b = obj == Py_True;
    }
    else if (tackpy_is_numpy_bool(obj)) {
        int truth = PyObject_IsTrue(obj);
        if (truth < 0) {
            return -1;
        }
        s.kind = TACK_SCALAR_BOOL;
        s.v.b = truth == 1;
    }
    else if (tackpy_is_complex(obj)) {
        return tackpy_raise_fmt_int(
            st, TACK_ERR_BAD_TYPE,
            "cannot store a complex number (%.100s) in a %s array: Tack has no "
            "complex dtype; store z.real and z.imag separately",
            Py_TYPE(obj)->tp_name, info->name);
    }
    else if (PyLong_Check(obj)) {
        return int_to_element(st, obj, dtype, out);
    }
    else if (PyIndex_Check(obj) && !PyFloat_Check(obj)) {
        PyObject *index = PyNumber_Index(obj);
        if (!index) {
            return -1;
        }
        int rc = int_to_element(st, index, dtype, out);
        Py_DECREF(index);
        return rc;
    }
    else if (PyFloat_Check(obj) || PyNumber_Check(obj)) {
        s.kind = TACK_SCALAR_FLOAT;
        s.v.f = PyFloat_AsDouble(obj);
        if (s.v.f == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            goto bad;
        }
    }
    else {
        goto bad;
    }
    tack_status status = tack_scalar_to_element(&s, dtype, out);
    return status == TACK_OK ? 0 : tackpy_raise_int(st, status);
bad:
    return tackpy_raise_fmt_int(
        st, TACK_ERR_BAD_TYPE,
        "cannot store a %.100s in a %s array: give a bool, int or "
        "float",
        Py_TYPE(obj)->tp_name, info->name);
}

static PyObject *
scalar_object(const tack_scalar *s)
{
    switch (s->kind) {
    case TACK_SCALAR_BOOL: return PyBool_FromLong(s->v.b);
    case TACK_SCALAR_INT: return PyLong_FromLongLong(s->v.i);
    case TACK_SCALAR_UINT: return PyLong_FromUnsignedLongLong(s->v.u);
    default: return PyFloat_FromDouble(s->v.f);
    }
}

PyObject *
tackpy_element_to_object(const void *p, tack_dtype dtype)
{
    const tack_dtype_info *info = tack_dtype_get(dtype);
    tack_scalar s;
    if (info->ncomponents == 1) {
        tack_element_to_scalar(p, dtype, 0, &s);
        return scalar_object(&s);
    }
    PyObject *t = PyTuple_New(info->ncomponents);
    for (uint32_t k = 0; t && k < info->ncomponents; k++) {
        tack_element_to_scalar(p, dtype, k, &s);
        PyObject *v = scalar_object(&s);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

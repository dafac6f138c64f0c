/*
 * kernel_request_py.c: what the front end hands _kernel_build (C source as a str, or
 * a tack.kernel.request.BuildRequest) as the runtime's tack_kernel_request. This is
 * conversion only: the runtime's GPU layer checks the facts and the names.
 */
#include "tackpy.h" /* Python.h first */

#include <limits.h>
#include <string.h>

/* Attribute n of obj as an int (a bool is one). Returns 0, or -1 with an exception. */
static int
read_int(tackpy_state *st, PyObject *obj, tackpy_name n, int *out)
{
    PyObject *v = PyObject_GetAttr(obj, st->names[n]);
    if (!v) {
        return -1;
    }
    int overflow = 0;
    long x = PyLong_Check(v) ? PyLong_AsLongAndOverflow(v, &overflow) : 0;
    int rc = 0;
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "a build request's %U must be an int, not %.100s",
                     st->names[n], Py_TYPE(v)->tp_name);
        rc = -1;
    }
    else if (x == -1 && PyErr_Occurred()) {
        rc = -1;
    }
    else if (overflow || x < INT_MIN || x > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "a build request's %U is out of range",
                     st->names[n]);
        rc = -1;
    }
    Py_DECREF(v);
    if (rc == 0) {
        *out = (int)x;
    }
    return rc;
}

/* The UTF-8 of str attribute n of obj, Borrowed from *keep (a new reference the
 * caller releases), or NULL with an exception. */
static const char *
read_str(tackpy_state *st, PyObject *obj, tackpy_name n, PyObject **keep)
{
    PyObject *v = PyObject_GetAttr(obj, st->names[n]);
    if (v && !PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "a build request's %U must be a str, not %.100s",
                     st->names[n], Py_TYPE(v)->tp_name);
        Py_CLEAR(v);
    }
    const char *s = v ? PyUnicode_AsUTF8(v) : NULL;
    if (!s) {
        Py_XDECREF(v);
        return NULL;
    }
    *keep = v;
    return s;
}

/* The names attribute, as a tuple kept in r (no other thread can change it while the
 * build runs without the GIL) and an array of its strings. */
static int
read_names(tackpy_state *st, PyObject *obj, tackpy_kernel_request *r)
{
    PyObject *v = PyObject_GetAttr(obj, st->names[TACKPY_NAME_names]);
    r->names = v ? PySequence_Tuple(v) : NULL;
    Py_XDECREF(v);
    if (!r->names) {
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(r->names);
    if (n > TACK_KERNEL_MAX_NAMES) {
        PyErr_Format(PyExc_ValueError,
                     "a build request has %zd names, more than the %d a kernel may "
                     "have",
                     n, TACK_KERNEL_MAX_NAMES);
        return -1;
    }
    r->strings = PyMem_Calloc((size_t)n + 1, sizeof *r->strings);
    if (!r->strings) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(r->names, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError,
                         "a build request's names must be str, not %.100s",
                         Py_TYPE(item)->tp_name);
            return -1;
        }
        if (!(r->strings[i] = PyUnicode_AsUTF8(item))) {
            return -1;
        }
    }
    r->req.names = r->strings;
    r->req.nnames = (int)n;
    return 0;
}

/* The image attribute: bytes, kept in r; empty bytes are no image. */
static int
read_image(tackpy_state *st, PyObject *obj, tackpy_kernel_request *r)
{
    PyObject *v = PyObject_GetAttr(obj, st->names[TACKPY_NAME_image]);
    if (v && !PyBytes_Check(v)) {
        PyErr_Format(PyExc_TypeError,
                     "a build request's image must be bytes, not %.100s",
                     Py_TYPE(v)->tp_name);
        Py_CLEAR(v);
    }
    if (!v) {
        return -1;
    }
    r->image = v;
    if (PyBytes_GET_SIZE(v) > 0) {
        r->req.image = PyBytes_AS_STRING(v);
        r->req.image_nbytes = (size_t)PyBytes_GET_SIZE(v);
    }
    return 0;
}

int
tackpy_kernel_request_from(tackpy_state *st, PyObject *source, tackpy_kernel_request *r)
{
    memset(r, 0, sizeof *r);
    if (PyUnicode_Check(source)) {
        r->req.source = PyUnicode_AsUTF8(source);
        return r->req.source ? 0 : -1;
    }
    if (!(r->req.source = read_str(st, source, TACKPY_NAME_source, &r->source)) ||
        !(r->req.twin_source =
              read_str(st, source, TACKPY_NAME_twin_source, &r->twin_source)) ||
        read_int(st, source, TACKPY_NAME_parallel, &r->req.parallel) < 0 ||
        read_int(st, source, TACKPY_NAME_host_trips, &r->req.host_trips) < 0 ||
        read_int(st, source, TACKPY_NAME_needs_ctx, &r->req.needs_ctx) < 0 ||
        read_int(st, source, TACKPY_NAME_restrict_body, &r->req.restrict_body) < 0 ||
        read_int(st, source, TACKPY_NAME_partial_size, &r->req.partial_size) < 0 ||
        read_int(st, source, TACKPY_NAME_result_kind, &r->req.result_kind) < 0 ||
        read_names(st, source, r) < 0 || read_image(st, source, r) < 0) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "source must be C source (a str) or a "
                         "tack.kernel.request.BuildRequest, not %.100s",
                         Py_TYPE(source)->tp_name);
        }
        tackpy_kernel_request_clear(r);
        return -1;
    }
    return 0;
}

void
tackpy_kernel_request_clear(tackpy_kernel_request *r)
{
    PyMem_Free(r->strings);
    Py_CLEAR(r->names);
    Py_CLEAR(r->source);
    Py_CLEAR(r->twin_source);
    Py_CLEAR(r->image);
    memset(r, 0, sizeof *r);
}

/*
 * array_type.c: tack.Array and the functions that make arrays (empty, zeros, full,
 * array, copyto).
 *
 * A tack.Array owns one reference to a C tack_array; everything about memory lives
 * there, so a DLPack export or a kernel launch holds the C array, not this object.
 * numpy() and np.asarray() give independent copies; np.from_dlpack(a) is the
 * zero-copy way out.
 */
#include "tackpy.h"
#include <string.h>

#include <structmember.h>

#define ARR(self) TACKPY_ARR(self)

PyObject *
tackpy_array_wrap(tackpy_state *st, tack_array *arr)
{
    tackpy_Array *obj = PyObject_New(tackpy_Array, st->Array_type);
    if (!obj) {
        tack_array_release(arr);
        return NULL;
    }
    obj->arr = arr;
    obj->weakreflist = NULL;
    return (PyObject *)obj;
}

int
tackpy_array_check(tackpy_state *st, PyObject *obj)
{
    return Py_IS_TYPE(obj, st->Array_type);
}

/* ---- creation ----------------------------------------------------------------- */

typedef enum { MAKE_EMPTY, MAKE_ZEROS, MAKE_FULL } make_kind;

static PyObject *
make_array(PyObject *module, const char *fname, make_kind kind, PyObject *const *args,
           Py_ssize_t nargs, PyObject *kwnames)
{
    tackpy_state *st = PyModule_GetState(module);
    int full = kind == MAKE_FULL;
    const tackpy_signature sig_empty = {fname,
                                        4,
                                        3,
                                        0,
                                        1,
                                        {TACKPY_NAME_shape, TACKPY_NAME_dtype,
                                         TACKPY_NAME_device, TACKPY_NAME_exportable}};
    const tackpy_signature sig_full = {
        fname,
        5,
        4,
        0,
        2,
        {TACKPY_NAME_shape, TACKPY_NAME_fill_value, TACKPY_NAME_dtype,
         TACKPY_NAME_device, TACKPY_NAME_exportable}};
    PyObject *a[5];
    if (tackpy_parse(st, full ? &sig_full : &sig_empty, args, nargs, kwnames, NULL, a,
                     NULL) < 0) {
        return NULL;
    }
    PyObject *shape_obj = a[0];
    PyObject *value = full ? a[1] : NULL;
    PyObject *dtype_obj = a[full + 1], *device_obj = a[full + 2];
    PyObject *exportable_obj = a[full + 3];
    int64_t shape[TACK_MAX_NDIM];
    int ndim = tackpy_parse_shape(st, shape_obj, shape);
    if (ndim < 0) {
        return NULL;
    }
    tack_dtype dtype = TACK_FLOAT32;
    if (dtype_obj && dtype_obj != Py_None &&
        tackpy_dtype_from_object(st, dtype_obj, &dtype) < 0) {
        return NULL;
    }
    int exportable = exportable_obj ? PyObject_IsTrue(exportable_obj) : 0;
    if (exportable < 0) {
        return NULL;
    }
    unsigned char element[16];
    if (value && tackpy_scalar_to_element(st, value, dtype, element) < 0) {
        return NULL;
    }
    tack_device *dev = NULL;
    if (tackpy_device_from_object(st, device_obj, &dev) < 0) {
        return NULL;
    }
    unsigned flags = TACK_BUFFER_WRITABLE | (exportable ? TACK_BUFFER_EXPORTABLE : 0u);
    tack_array *arr;
    tack_status status = kind == MAKE_ZEROS
                             ? tack_array_zeros(dev, dtype, ndim, shape, flags, &arr)
                             : tack_array_empty(dev, dtype, ndim, shape, flags, &arr);
    tack_device_release(dev);
    if (status == TACK_OK && value) {
        status = tack_array_fill(arr, element, dtype);
        if (status != TACK_OK) {
            tack_array_release(arr);
        }
    }
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    return tackpy_array_wrap(st, arr);
}

PyObject *
tackpy_empty_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    return make_array(module, "empty", MAKE_EMPTY, args, nargs, kwnames);
}

PyObject *
tackpy_zeros_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    return make_array(module, "zeros", MAKE_ZEROS, args, nargs, kwnames);
}

PyObject *
tackpy_full_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames)
{
    return make_array(module, "full", MAKE_FULL, args, nargs, kwnames);
}

PyObject *
tackpy_array_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    tackpy_state *st = PyModule_GetState(module);
    static const tackpy_signature sig = {
        "array", 3, 3, 0, 1, {TACKPY_NAME_obj, TACKPY_NAME_dtype, TACKPY_NAME_device}};
    PyObject *a[3];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, a, NULL) < 0) {
        return NULL;
    }
    tack_device *dev = NULL;
    if (tackpy_device_from_object(st, a[2], &dev) < 0) {
        return NULL;
    }
    tack_status status;
    tack_array *arr = NULL;
    if (tackpy_array_check(st, a[0])) {
        /* A Tack array: copy it, converting dtype and moving device as asked. */
        tack_array *src = ARR(a[0]);
        tack_dtype dtype = tack_array_dtype(src);
        if (a[1] && a[1] != Py_None && tackpy_dtype_from_object(st, a[1], &dtype) < 0) {
            tack_device_release(dev);
            return NULL;
        }
        status = tack_array_empty(dev, dtype, tack_array_ndim(src),
                                  tack_array_shape(src), TACK_BUFFER_WRITABLE, &arr);
        if (status == TACK_OK) {
            Py_BEGIN_ALLOW_THREADS
                status = tack_array_copyto(arr, src);
            Py_END_ALLOW_THREADS
        }
        tack_device_release(dev);
        if (status != TACK_OK) {
            tack_array_release(arr);
            return tackpy_raise(st, status);
        }
        return tackpy_array_wrap(st, arr);
    }
    PyObject *result = tackpy_array_from_host(st, a[0], a[1], dev);
    tack_device_release(dev);
    return result;
}

PyObject *
tackpy_array_from_host(tackpy_state *st, PyObject *obj, PyObject *dtype_obj,
                       tack_device *dev)
{
    tackpy_host h;
    if (tackpy_host_get(st, obj, &h) < 0) {
        return NULL;
    }
    tack_dtype dtype = h.dtype;
    int64_t shape[TACK_MAX_NDIM];
    int32_t ndim = 0;
    tack_array *arr = NULL;
    if (dtype_obj && dtype_obj != Py_None &&
        tackpy_dtype_from_object(st, dtype_obj, &dtype) < 0) {
        tackpy_host_release(&h);
        return NULL;
    }
    tack_status status =
        tack_array_shape_of_scalars(dtype, h.ndim, h.shape, &ndim, shape);
    if (status == TACK_OK) {
        status = tack_array_empty(dev, dtype, ndim, shape, TACK_BUFFER_WRITABLE, &arr);
    }
    if (status == TACK_OK) {
        Py_BEGIN_ALLOW_THREADS
            status = tack_array_copy_from_host(arr, h.view.buf, h.dtype, h.nscalars);
        Py_END_ALLOW_THREADS
    }
    tackpy_host_release(&h);
    if (status != TACK_OK) {
        tack_array_release(arr);
        return tackpy_raise(st, status);
    }
    return tackpy_array_wrap(st, arr);
}

/* Whether host data has dst's scalar shape, the one its DLPack description gives
 * (vec arrays: a trailing component axis). */
static int
host_has_scalar_shape(const tackpy_host *h, const tack_array *dst)
{
    DLTensor t;
    tack_dlpack_describe(dst, &t);
    if (h->ndim != t.ndim) {
        return 0;
    }
    for (int k = 0; k < t.ndim; k++) {
        if (h->shape[k] != t.shape[k]) {
            return 0;
        }
    }
    return 1;
}

/* numpy.broadcast_to(src, dst's scalar shape), or NULL with ValueError set. */
static PyObject *
broadcast_to_scalar_shape(tackpy_state *st, PyObject *src, const tack_array *dst)
{
    PyObject *shape = tackpy_scalar_shape(dst);
    if (!shape) {
        return NULL;
    }
    PyObject *np = tackpy_numpy(st);
    PyObject *b = np ? PyObject_CallMethod(np, "broadcast_to", "OO", src, shape) : NULL;
    if (!b && PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                         "copyto: the source cannot be broadcast to the destination's "
                         "shape %R: give data of that shape",
                         shape);
    }
    Py_DECREF(shape);
    return b;
}

PyObject *
tackpy_copyto_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    tackpy_state *st = PyModule_GetState(module);
    static const tackpy_signature sig = {
        "copyto", 2, 2, 0, 2, {TACKPY_NAME_dst, TACKPY_NAME_src}};
    PyObject *a[2];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, a, NULL) < 0) {
        return NULL;
    }
    if (!tackpy_array_check(st, a[0])) {
        return tackpy_raise_fmt(
            st, TACK_ERR_BAD_TYPE,
            "copyto(dst, src): dst must be a tack array, not %.100s",
            Py_TYPE(a[0])->tp_name);
    }
    tack_array *dst = ARR(a[0]);
    tack_status status;
    if (tackpy_array_check(st, a[1])) {
        Py_BEGIN_ALLOW_THREADS
            status = tack_array_copyto(dst, ARR(a[1]));
        Py_END_ALLOW_THREADS
        if (status != TACK_OK) {
            return tackpy_raise(st, status);
        }
        Py_RETURN_NONE;
    }
    if (PyBool_Check(a[1]) || PyLong_Check(a[1]) || PyFloat_Check(a[1])) {
        /* A Python scalar broadcasts, as in numpy.copyto. */
        unsigned char element[16];
        if (tackpy_scalar_to_element(st, a[1], tack_array_dtype(dst), element) < 0) {
            return NULL;
        }
        status = tack_array_fill(dst, element, tack_array_dtype(dst));
        if (status != TACK_OK) {
            return tackpy_raise(st, status);
        }
        Py_RETURN_NONE;
    }
    tackpy_host h;
    if (tackpy_host_get(st, a[1], &h) < 0) {
        return NULL;
    }
    if (!host_has_scalar_shape(&h, dst)) {
        /* Broadcast as numpy.copyto does (a 0-d value fills; rows repeat). */
        tackpy_host_release(&h);
        PyObject *b = broadcast_to_scalar_shape(st, a[1], dst);
        if (!b) {
            return NULL;
        }
        int rc = tackpy_host_get(st, b, &h);
        Py_DECREF(b);
        if (rc < 0) {
            return NULL;
        }
    }
    Py_BEGIN_ALLOW_THREADS
        status = tack_array_copy_from_host(dst, h.view.buf, h.dtype, h.nscalars);
    Py_END_ALLOW_THREADS
    tackpy_host_release(&h);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    Py_RETURN_NONE;
}

/* ---- attributes ---------------------------------------------------------------- */

static PyObject *
shape_tuple(const tack_array *arr)
{
    int ndim = tack_array_ndim(arr);
    PyObject *t = PyTuple_New(ndim);
    if (!t) {
        return NULL;
    }
    for (int k = 0; k < ndim; k++) {
        PyObject *v = PyLong_FromLongLong(tack_array_shape(arr)[k]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

static PyObject *
array_get_shape(PyObject *self, void *c)
{
    (void)c;
    return shape_tuple(ARR(self));
}

static PyObject *
array_get_dtype(PyObject *self, void *c)
{
    (void)c;
    return Py_NewRef(
        tackpy_dtype_object(tackpy_state_of(self), tack_array_dtype(ARR(self))));
}

/* What NumPy 2.4's numpy.dtype() (and so np.result_type, np.can_cast and JAX's
 * dtype lookup) reads from an array-like whose .dtype is not a numpy.dtype. A vec
 * array answers float32, as an ndarray does (NumPy turns a subarray dtype into a
 * trailing dimension): the dtype np.asarray() and DLPack give it. */
static PyObject *
array_get_numpy_dtype(PyObject *self, void *c)
{
    (void)c;
    tack_dtype scalar = tack_dtype_get(tack_array_dtype(ARR(self)))->scalar;
    return tackpy_dtype_to_numpy(tackpy_state_of(self), scalar);
}

static PyObject *
array_get_ndim(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(tack_array_ndim(ARR(self)));
}

static PyObject *
array_get_size(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(tack_array_nelem(ARR(self)));
}

static PyObject *
array_get_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(tack_array_nbytes(ARR(self)));
}

static PyObject *
array_get_writable(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(tack_array_writable(ARR(self)));
}

static PyObject *
array_get_device(PyObject *self, void *c)
{
    (void)c;
    tack_device *dev = tack_array_device(ARR(self));
    tack_device_retain(dev);
    return tackpy_device_wrap(tackpy_state_of(self), dev);
}

static PyObject *
array_get_ptr(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(tack_array_data(ARR(self)));
}

static PyObject *array_get_cuda_array_interface(PyObject *self, void *c);

static PyGetSetDef array_getset[] = {
    {"shape", array_get_shape, NULL, "The extents, a tuple of ints.", NULL},
    {"dtype", array_get_dtype, NULL, "The element type.", NULL},
    {"__numpy_dtype__", array_get_numpy_dtype, NULL,
     "The element type as a numpy.dtype.", NULL},
    {"ndim", array_get_ndim, NULL, "The number of dimensions.", NULL},
    {"size", array_get_size, NULL, "The number of elements.", NULL},
    {"nbytes", array_get_nbytes, NULL, "The size of the elements in bytes.", NULL},
    {"writable", array_get_writable, NULL,
     "Whether host and kernel writes are allowed.", NULL},
    {"device", array_get_device, NULL, "The device holding the memory.", NULL},
    {"ptr", array_get_ptr, NULL, "The address of the first element, as an int.", NULL},
    {"__cuda_array_interface__", array_get_cuda_array_interface, NULL,
     "The CUDA Array Interface (version 3) of a CUDA array; shares it first.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- methods -------------------------------------------------------------------- */

static PyObject *
array_numpy(PyObject *self, PyObject *unused)
{
    (void)unused;
    return tackpy_array_to_numpy(tackpy_state_of(self), ARR(self), NULL);
}

static PyObject *
array_dunder_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames)
{
    static const tackpy_signature sig = {
        "__array__", 2, 2, 0, 0, {TACKPY_NAME_dtype, TACKPY_NAME_copy}};
    PyObject *a[2];
    if (tackpy_parse(tackpy_state_of(self), &sig, args, nargs, kwnames, NULL, a, NULL) <
        0) {
        return NULL;
    }
    if (a[1] == Py_False) {
        return tackpy_raise_fmt(
            tackpy_state_of(self), TACK_ERR_INVALID_ARGUMENT,
            "a Tack array cannot become a NumPy array without a copy "
            "here: use np.from_dlpack(a) to share its memory");
    }
    return tackpy_array_to_numpy(tackpy_state_of(self), ARR(self), a[0]);
}

static PyObject *
array_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    tackpy_state *st = tackpy_state_of(self);
    int64_t shape[TACK_MAX_NDIM];
    int ndim;
    if (nargs == 0) {
        return tackpy_raise_fmt(
            st, TACK_ERR_BAD_TYPE,
            "reshape() needs the new shape, e.g. a.reshape(2, 3) or "
            "a.reshape((2, -1))");
    }
    if (nargs == 1) {
        ndim = tackpy_parse_shape(st, args[0], shape);
    }
    else {
        PyObject *t = PyTuple_New(nargs);
        if (!t) {
            return NULL;
        }
        for (Py_ssize_t k = 0; k < nargs; k++) {
            PyTuple_SET_ITEM(t, k, Py_NewRef(args[k]));
        }
        ndim = tackpy_parse_shape(st, t, shape);
        Py_DECREF(t);
    }
    if (ndim < 0) {
        return NULL;
    }
    tack_array *out;
    tack_status status = tack_array_reshape(ARR(self), ndim, shape, &out);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    return tackpy_array_wrap(st, out);
}

static PyObject *
array_fill(PyObject *self, PyObject *value)
{
    tackpy_state *st = tackpy_state_of(self);
    tack_array *arr = ARR(self);
    if (!tack_array_writable(arr)) {
        return tackpy_raise(st, tack_array_fill(arr, NULL, tack_array_dtype(arr)));
    }
    unsigned char element[16];
    if (tackpy_scalar_to_element(st, value, tack_array_dtype(arr), element) < 0) {
        return NULL;
    }
    tack_status status;
    Py_BEGIN_ALLOW_THREADS
        status = tack_array_fill(arr, element, tack_array_dtype(arr));
    Py_END_ALLOW_THREADS
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    Py_RETURN_NONE;
}

static PyObject *
array_to_device(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    tackpy_state *st = tackpy_state_of(self);
    static const tackpy_signature sig = {
        "to_device", 2, 1, 0, 1, {TACKPY_NAME_device, TACKPY_NAME_stream}};
    PyObject *a[2];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, a, NULL) < 0) {
        return NULL;
    }
    bool has_stream = false;
    int64_t stream = -1;
    tack_device *dev = NULL;
    if (tackpy_stream_arg(st, a[1], &has_stream, &stream) < 0 ||
        tackpy_device_from_object(st, a[0], &dev) < 0) {
        return NULL;
    }
    tack_array *out;
    tack_status status;
    Py_BEGIN_ALLOW_THREADS
        /* No stream: the copy is ordered on Tack's own stream only. */
        status = has_stream
                     ? tack_array_to_device_on_stream(ARR(self), dev, stream, &out)
                     : tack_array_to_device(ARR(self), dev, &out);
    Py_END_ALLOW_THREADS
    tack_device_release(dev);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    return tackpy_array_wrap(st, out);
}

static PyObject *
array_export_memory(PyObject *self, PyObject *unused)
{
    (void)unused;
    tackpy_state *st = tackpy_state_of(self);
    tack_exported_memory m;
    tack_status status;
    Py_BEGIN_ALLOW_THREADS /* it may wait for the device */
        status = tack_array_export_memory(ARR(self), &m);
    Py_END_ALLOW_THREADS
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    /* ExportedMemory is a plain dataclass of the package
     * (src/tack/_exported_memory.py). */
    PyObject *mod = PyImport_ImportModule("tack._exported_memory");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "ExportedMemory") : NULL;
    Py_XDECREF(mod);
    if (!cls) {
        return NULL;
    }
    PyObject *result = PyObject_CallFunction(
        cls, "snnKsy#", m.backend, (Py_ssize_t)m.size, (Py_ssize_t)m.allocation_size,
        (unsigned long long)m.handle, m.handle_type, (const char *)m.device_uuid,
        (Py_ssize_t)sizeof m.device_uuid);
    Py_DECREF(cls);
    return result;
}

/* __cuda_array_interface__ (version 3), for CUDA arrays only: a consumer that finds
 * the attribute takes the pointer. The buffer is shared first, as for a DLPack
 * export, so there is nothing left to wait for and no `stream` key: with one, CuPy
 * would synchronize that stream on every access, and it would not protect later
 * launches anyway (docs/cuda.md). */
static PyObject *
array_get_cuda_array_interface(PyObject *self, void *c)
{
    (void)c;
    tackpy_state *st = tackpy_state_of(self);
    tack_array *arr = ARR(self);
    tack_device *dev = tack_array_device(arr);
    if (tack_device_dlpack_type(dev) != kDLCUDA) {
        PyErr_Format(PyExc_AttributeError,
                     "__cuda_array_interface__ exists for CUDA arrays only; this one "
                     "is on %s:%d: use __dlpack__ or numpy()",
                     tack_device_backend_name(dev), tack_device_ordinal(dev));
        return NULL;
    }
    tack_status status;
    Py_BEGIN_ALLOW_THREADS
        status = tack_buffer_share(tack_array_buffer(arr));
    Py_END_ALLOW_THREADS
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    const tack_dtype_info *info = tack_dtype_get(tack_array_dtype(arr));
    PyObject *shape = shape_tuple(arr);
    if (shape && info->ncomponents > 1) {
        /* A vec element is a trailing dimension of its scalar, as in DLPack. */
        PyObject *comp = Py_BuildValue("(i)", (int)info->ncomponents);
        PyObject *joined = comp ? PySequence_Concat(shape, comp) : NULL;
        Py_XDECREF(comp);
        Py_SETREF(shape, joined);
    }
    if (!shape) {
        return NULL;
    }
    void *data = tack_array_data(arr);
    PyObject *ptr = PyLong_FromVoidPtr(data);
    if (!ptr) {
        Py_DECREF(shape);
        return NULL;
    }
    return Py_BuildValue("{s:N,s:s,s:(N,O),s:O,s:i}", "shape", shape, "typestr",
                         info->numpy_str, "data", ptr,
                         tack_array_writable(arr) ? Py_False : Py_True, "strides",
                         Py_None, "version", 3);
}

/* Reads a full index (an int or a tuple of ints) into a flat element offset; the
 * index rules (count, range, negative entries) are the runtime's. */
static int
flat_index(tackpy_state *st, const tack_array *arr, PyObject *key, size_t *offset)
{
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!items) {
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int64_t index[TACK_MAX_NDIM];
    int rc = -1;
    /* Past TACK_MAX_NDIM entries the count alone is wrong: the runtime refuses it
     * before reading any entry. */
    for (Py_ssize_t k = 0; k < n && k < TACK_MAX_NDIM; k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k);
        if (!PyIndex_Check(item)) {
            tackpy_raise_fmt(st, TACK_ERR_INDEX,
                             "only integer indices are supported, not %.100s: Tack "
                             "arrays have no slicing; use numpy() for a copy you can "
                             "slice",
                             Py_TYPE(item)->tp_name);
            goto done;
        }
        Py_ssize_t i = PyNumber_AsSsize_t(item, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred()) {
            goto done;
        }
        index[k] = (int64_t)i;
    }
    int32_t count = n > INT32_MAX ? INT32_MAX : (int32_t)n;
    tack_status status = tack_array_element_offset(arr, count, index, offset);
    rc = status == TACK_OK ? 0 : tackpy_raise_int(st, status);
done:
    Py_DECREF(items);
    return rc;
}

static PyObject *
array_getitem(PyObject *self, PyObject *key)
{
    tackpy_state *st = tackpy_state_of(self);
    tack_array *arr = ARR(self);
    size_t off;
    if (flat_index(st, arr, key, &off) < 0) {
        return NULL;
    }
    unsigned char element[16];
    tack_status status = tack_array_get_element(arr, off, element);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    return tackpy_element_to_object(element, tack_array_dtype(arr));
}

static int
array_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    tackpy_state *st = tackpy_state_of(self);
    tack_array *arr = ARR(self);
    if (!value) {
        return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                    "Tack array elements cannot be deleted");
    }
    if (!tack_array_writable(arr)) {
        /* Refused before the value is read, whatever it is. */
        return tackpy_raise_int(st, tack_array_set_element(arr, 0, NULL));
    }
    size_t off;
    unsigned char element[16];
    if (flat_index(st, arr, key, &off) < 0 ||
        tackpy_scalar_to_element(st, value, tack_array_dtype(arr), element) < 0) {
        return -1;
    }
    tack_status status = tack_array_set_element(arr, off, element);
    return status == TACK_OK ? 0 : tackpy_raise_int(st, status);
}

/* Iteration (the sequence protocol) over a 1-D array yields its elements; there are
 * no sub-array views to yield for more dimensions. */
static PyObject *
array_sq_item(PyObject *self, Py_ssize_t i)
{
    tack_array *arr = ARR(self);
    if (tack_array_ndim(arr) != 1) {
        return tackpy_raise_fmt(tackpy_state_of(self), TACK_ERR_BAD_TYPE,
                                "only 1-D arrays can be iterated (this one is %d-d): "
                                "iterate over a.reshape(-1) or a.numpy()",
                                (int)tack_array_ndim(arr));
    }
    if (i < 0 || i >= tack_array_shape(arr)[0]) {
        return tackpy_raise_fmt(tackpy_state_of(self), TACK_ERR_INDEX,
                                "index out of range");
    }
    PyObject *key = PyLong_FromSsize_t(i);
    if (!key) {
        return NULL;
    }
    PyObject *v = array_getitem(self, key);
    Py_DECREF(key);
    return v;
}

static Py_ssize_t
array_len(PyObject *self)
{
    tack_array *arr = ARR(self);
    if (tack_array_ndim(arr) == 0) {
        return tackpy_raise_fmt_int(tackpy_state_of(self), TACK_ERR_BAD_TYPE,
                                    "len() of a 0-d array");
    }
    return (Py_ssize_t)tack_array_shape(arr)[0];
}

static PyObject *
array_repr(PyObject *self)
{
    tack_array *arr = ARR(self);
    PyObject *shape = shape_tuple(arr);
    if (!shape) {
        return NULL;
    }
    tack_device *dev = tack_array_device(arr);
    PyObject *r = PyUnicode_FromFormat(
        "tack.Array(shape=%R, dtype=tack.%s, device='%s:%d'%s)", shape,
        tack_dtype_get(tack_array_dtype(arr))->name, tack_device_backend_name(dev),
        tack_device_ordinal(dev), tack_array_writable(arr) ? "" : ", writable=False");
    Py_DECREF(shape);
    return r;
}

static PyObject *
array_class_getitem(PyObject *cls, PyObject *args)
{
    return Py_GenericAlias(cls, args);
}

static PyMethodDef array_methods[] = {
    {"numpy", array_numpy, METH_NOARGS,
     "numpy($self, /)\n--\n\nAn independent NumPy copy of the array."},
    {"__array__", (PyCFunction)(void (*)(void))array_dunder_array,
     METH_FASTCALL | METH_KEYWORDS,
     "__array__($self, /, dtype=None, copy=None)\n--\n\nA NumPy copy (never a view)."},
    {"reshape", (PyCFunction)(void (*)(void))array_reshape, METH_FASTCALL,
     "reshape($self, /, *shape)\n--\n\nA view with another shape over the same "
     "memory."},
    {"fill", array_fill, METH_O,
     "fill($self, value, /)\n--\n\nSet every element to value."},
    {"to_device", (PyCFunction)(void (*)(void))array_to_device,
     METH_FASTCALL | METH_KEYWORDS,
     "to_device($self, /, device, *, stream=None)\n--\n\nA copy of the array on "
     "device, ordered after the work queued on stream (DLPack's stream values)."},
    {"export_memory", array_export_memory, METH_NOARGS,
     "export_memory($self, /)\n--\n\nThe memory as an OS handle for another API."},
    /* DLPack (dlpack_py.c) */
    {"__dlpack__", (PyCFunction)(void (*)(void))tackpy_array_dlpack,
     METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, "
     "copy=None)\n--\n\n"
     "The array as a DLPack capsule: legacy unless max_version is (1, x) or later;\n"
     "copy=True exports a private copy."},
    {"__dlpack_device__", tackpy_array_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\nThe (DLPack device type, device id) pair."},
    {"__class_getitem__", array_class_getitem, METH_O | METH_CLASS, NULL},
    {NULL, NULL, 0, NULL},
};

static void
array_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (((tackpy_Array *)self)->weakreflist) {
        PyObject_ClearWeakRefs(self);
    }
    tack_array_release(ARR(self));
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMemberDef array_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(tackpy_Array, weakreflist), READONLY,
     NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot array_slots[] = {
    {Py_tp_repr, array_repr},
    {Py_tp_getset, array_getset},
    {Py_tp_methods, array_methods},
    {Py_tp_members, array_members},
    {Py_mp_subscript, array_getitem},
    {Py_mp_ass_subscript, array_setitem},
    {Py_mp_length, array_len},
    {Py_sq_length, array_len},
    {Py_sq_item, array_sq_item},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_doc,
     "A C-contiguous array on a device. Make one with tack.empty, zeros, "
     "full, array, from_dlpack or array_from_ptr."},
    {0, NULL},
};

static PyType_Spec array_spec = {
    .name = "tack.Array",
    .basicsize = sizeof(tackpy_Array),
    /* Immutable once module.c has set the DLPack exchange attributes. */
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = array_slots,
};

int
tackpy_array_init(PyObject *module, tackpy_state *st)
{
    st->Array_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &array_spec, NULL);
    if (!st->Array_type || PyModule_AddType(module, st->Array_type) < 0) {
        return -1;
    }
    return 0;
}

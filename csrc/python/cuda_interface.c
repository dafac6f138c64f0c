/*
 * cuda_interface.c: importing an object that describes its memory with the CUDA
 * Array Interface (version 2 or 3) instead of DLPack: Numba device arrays, older
 * libraries. The export side is the Array getter in array_type.c.
 *
 * The memory is wrapped without a copy and shared from birth, like every foreign
 * pointer; the object stays referenced until the last array over the memory goes.
 * A `stream` key names the stream the producer's writes are queued on: Tack's stream
 * is made to wait for it, as the interface asks of a consumer, without blocking.
 * The memory is CUDA memory, as a kDLCUDA tensor's is: another device gets it only
 * as a copy (copy=True), made on Tack's stream after that wait. Strided memory is
 * never wrapped: with copy=None or copy=True it is copied into a contiguous array
 * on the device, as the DLPack import copies a strided kDLCUDA tensor.
 */
#include "tackpy.h"
#include <stdlib.h>
#include <string.h>

static PyObject *
refuse(tackpy_state *st, PyObject *obj, const char *what)
{
    return tackpy_raise_fmt(st, TACK_ERR_DLPACK_INVALID,
                            "%.100s's __cuda_array_interface__ %s",
                            Py_TYPE(obj)->tp_name, what);
}

/* Reads shape (a tuple of ints). Returns ndim, or -1 with an exception. */
static int
read_shape(tackpy_state *st, PyObject *obj, PyObject *cai, int64_t *shape)
{
    PyObject *v = PyDict_GetItemString(cai, "shape"); /* borrowed from the copy */
    if (!v || !PyTuple_Check(v) || PyTuple_GET_SIZE(v) > TACK_MAX_NDIM) {
        tackpy_raise_fmt(st, TACK_ERR_DLPACK_INVALID,
                         "%.100s's __cuda_array_interface__ has no shape tuple of at "
                         "most %d ints",
                         Py_TYPE(obj)->tp_name, TACK_MAX_NDIM);
        return -1;
    }
    int ndim = (int)PyTuple_GET_SIZE(v);
    for (int k = 0; k < ndim; k++) {
        shape[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(v, k));
        if (shape[k] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return ndim;
}

/* Reads strides: absent or None mean C-contiguous. Out: *strided, and el[] (the
 * strides in elements) when the memory is strided; byte strides that are not whole
 * elements are refused. */
static int
read_strides(tackpy_state *st, PyObject *obj, PyObject *cai, int ndim,
             const int64_t *shape, size_t itemsize, bool *strided, int64_t *el)
{
    *strided = false;
    PyObject *v = PyDict_GetItemString(cai, "strides");
    if (!v || v == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != ndim) {
        refuse(st, obj, "has strides that are not a tuple of one int per dimension");
        return -1;
    }
    int64_t expect = (int64_t)itemsize;
    for (int k = ndim - 1; k >= 0; k--) {
        long long s = PyLong_AsLongLong(PyTuple_GET_ITEM(v, k));
        if (s == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (s % (long long)itemsize != 0) {
            refuse(st, obj, "has a stride that is not a whole number of elements");
            return -1;
        }
        el[k] = s / (long long)itemsize;
        *strided = *strided || (shape[k] > 1 && s != expect);
        expect *= shape[k];
    }
    return 0;
}

/* A strided interface as the DLPack tensor it describes, which the DLPack import
 * validates and copies (gathered on the device); the deleter releases the object. */
typedef struct strided_tensor {
    DLManagedTensorVersioned mt;
    int64_t shape[TACK_MAX_NDIM];
    int64_t strides[TACK_MAX_NDIM];
} strided_tensor;

static void
delete_strided(DLManagedTensorVersioned *mt)
{
    tackpy_release_object(mt->manager_ctx);
    free(mt); /* the first member of its strided_tensor */
}

/* Copies strided interface memory on dev (after the interface's stream) to target,
 * or dev. Returns: new reference, or NULL with an exception. */
static PyObject *
import_strided(tackpy_state *st, PyObject *obj, tack_device *dev, void *ptr,
               tack_dtype dtype, int ndim, const int64_t *shape, const int64_t *el,
               uintptr_t stream, const tack_dlpack_import_options *opts,
               tack_device *target)
{
    if (opts->copy == TACK_DLPACK_COPY_NEVER) {
        return refuse(st, obj,
                      "describes strided memory, and Tack arrays are C-contiguous: "
                      "pass copy=None or copy=True for a contiguous copy");
    }
    strided_tensor *b = calloc(1, sizeof *b);
    if (!b) {
        return PyErr_NoMemory();
    }
    const tack_dtype_info *info = tack_dtype_get(dtype);
    b->mt.version.major = 1;
    b->mt.manager_ctx = obj;
    b->mt.deleter = delete_strided;
    b->mt.flags = DLPACK_FLAG_BITMASK_READ_ONLY; /* only read: it is copied */
    b->mt.dl_tensor.data = ptr;
    b->mt.dl_tensor.device.device_type = kDLCUDA;
    b->mt.dl_tensor.device.device_id = tack_device_ordinal(dev);
    b->mt.dl_tensor.ndim = ndim;
    b->mt.dl_tensor.dtype.code = info->dlpack_code;
    b->mt.dl_tensor.dtype.bits = info->dlpack_bits;
    b->mt.dl_tensor.dtype.lanes = 1;
    memcpy(b->shape, shape, (size_t)ndim * sizeof *shape);
    memcpy(b->strides, el, (size_t)ndim * sizeof *el);
    b->mt.dl_tensor.shape = b->shape;
    b->mt.dl_tensor.strides = b->strides;
    tack_dlpack_import_options o = {target ? target : dev, opts->copy, true};
    tack_array *arr = NULL;
    tack_status status;
    Py_INCREF(obj); /* released by the deleter, which the import runs */
    Py_BEGIN_ALLOW_THREADS
        status = stream ? tack_device_wait_for_stream(dev, stream) : TACK_OK;
        if (status == TACK_OK) {
            status = tack_dlpack_import_versioned(&b->mt, &o, &arr);
        }
        else {
            delete_strided(&b->mt);
        }
    Py_END_ALLOW_THREADS
    return status == TACK_OK ? tackpy_array_wrap(st, arr) : tackpy_raise(st, status);
}

/* The stream key: absent or None means nothing to wait for. Out: *stream (0: none). */
static int
read_stream(tackpy_state *st, PyObject *obj, PyObject *cai, uintptr_t *stream)
{
    *stream = 0;
    PyObject *v = PyDict_GetItemString(cai, "stream");
    if (!v || v == Py_None) {
        return 0;
    }
    unsigned long long s = PyLong_Check(v) ? PyLong_AsUnsignedLongLong(v) : 0;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        s = 0;
    }
    if (s == 0) {
        refuse(st, obj,
               "has a stream that is not a positive int (0 is ambiguous and "
               "disallowed by the interface): give 1, 2 or a stream handle, or none");
        return -1;
    }
    *stream = (uintptr_t)s;
    return 0;
}

/* The importing device. Returns: new reference, or NULL with an exception. */
static tack_device *
import_device(tackpy_state *st, tack_device *given)
{
    tack_device *dev = NULL;
    tack_status status = TACK_OK;
    if (given) {
        tack_device_retain(given);
        dev = given;
    }
    else {
        status = tack_default_device(&dev);
        if (status == TACK_OK && tack_device_dlpack_type(dev) != kDLCUDA) {
            tack_device_release(dev);
            dev = NULL;
            status = tack_device_open(tack_dlpack_backend_name(kDLCUDA), 0, NULL, &dev);
        }
    }
    if (status != TACK_OK) {
        tackpy_raise(st, status);
        return NULL;
    }
    return dev;
}

/* cai: a private copy of the interface dict, so its items stay alive however the
 * code they run (__index__, __bool__) changes the producer's dict. */
static PyObject *
from_interface(tackpy_state *st, PyObject *obj, PyObject *cai,
               const tack_dlpack_import_options *opts)
{
    /* A device that is not a CUDA device never wraps CUDA memory: it gets a copy, or
     * the refusal a kDLCUDA tensor gets, before anything is read from the object. */
    tack_device *given = opts->device;
    tack_device *target = NULL;
    if (given && tack_device_dlpack_type(given) != kDLCUDA) {
        if (opts->copy == TACK_DLPACK_COPY_NEVER) {
            return tackpy_raise_fmt(
                st, TACK_ERR_DLPACK_DEVICE,
                "%.100s's __cuda_array_interface__ describes CUDA memory, which "
                "%s:%d cannot wrap: import it on a CUDA device, or pass copy=True "
                "for a copy",
                Py_TYPE(obj)->tp_name, tack_device_backend_name(given),
                tack_device_ordinal(given));
        }
        target = given;
        given = NULL;
    }
    else if (opts->copy == TACK_DLPACK_COPY_ALWAYS) {
        target = given; /* NULL: the device it is wrapped on */
    }
    PyObject *version = PyDict_GetItemString(cai, "version");
    long ver = version && PyLong_Check(version) ? PyLong_AsLong(version) : -1;
    if (ver < 2 || ver > 3) {
        PyErr_Clear();
        return refuse(st, obj, "has a version other than 2 or 3");
    }
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    if (mask && mask != Py_None) {
        return refuse(st, obj, "has a mask, which Tack arrays cannot carry");
    }
    int64_t shape[TACK_MAX_NDIM];
    int ndim = read_shape(st, obj, cai, shape);
    if (ndim < 0) {
        return NULL;
    }
    PyObject *typestr = PyDict_GetItemString(cai, "typestr");
    tack_dtype dtype = TACK_FLOAT32;
    if (!typestr || tackpy_dtype_from_object(st, typestr, &dtype) < 0) {
        return typestr ? NULL : refuse(st, obj, "has no typestr");
    }
    PyObject *data = PyDict_GetItemString(cai, "data");
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) {
        return refuse(st, obj, "has no data tuple (pointer, read_only)");
    }
    if (!PyLong_Check(PyTuple_GET_ITEM(data, 0))) {
        return refuse(st, obj, "has a data pointer that is not an int");
    }
    void *ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
    if (!ptr && PyErr_Occurred()) {
        return NULL;
    }
    int read_only = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (read_only < 0) {
        return NULL;
    }
    uintptr_t stream = 0;
    bool strided = false;
    int64_t el[TACK_MAX_NDIM];
    if (read_strides(st, obj, cai, ndim, shape, tack_dtype_get(dtype)->itemsize,
                     &strided, el) < 0 ||
        read_stream(st, obj, cai, &stream) < 0) {
        return NULL;
    }
    tack_device *dev = import_device(st, given);
    if (!dev) {
        return NULL;
    }
    if (strided) {
        PyObject *copy = import_strided(st, obj, dev, ptr, dtype, ndim, shape, el,
                                        stream, opts, target);
        tack_device_release(dev);
        return copy;
    }
    tack_array *arr = NULL;
    tack_status status;
    Py_INCREF(obj); /* released by tackpy_release_object, even on failure */
    Py_BEGIN_ALLOW_THREADS
        status = tack_array_wrap_memory(dev, ptr, dtype, ndim, shape, !read_only,
                                        tackpy_release_object, obj, &arr);
        if (status == TACK_OK && stream) {
            status = tack_device_wait_for_stream(dev, stream);
        }
        if (status == TACK_OK && (target || opts->copy == TACK_DLPACK_COPY_ALWAYS)) {
            tack_array *copy = NULL;
            status = tack_array_to_device(arr, target ? target : dev, &copy);
            tack_array_release(arr);
            arr = copy;
        }
    Py_END_ALLOW_THREADS
    tack_device_release(dev);
    if (status != TACK_OK) {
        tack_array_release(arr);
        return tackpy_raise(st, status);
    }
    return tackpy_array_wrap(st, arr);
}

PyObject *
tackpy_from_cuda_array_interface(tackpy_state *st, PyObject *obj, PyObject *cai,
                                 const tack_dlpack_import_options *opts)
{
    if (!PyDict_Check(cai)) {
        return refuse(st, obj, "is not a dict");
    }
    /* Reading an item may run the producer's code, which may clear or refill its
     * dict and free every item only the dict held. The shallow copy holds a
     * reference to each item (the tuples among them are immutable), so every
     * borrowed pointer taken below stays valid until the copy goes. */
    PyObject *own = PyDict_Copy(cai);
    if (!own) {
        return NULL;
    }
    PyObject *result = from_interface(st, obj, own, opts);
    Py_DECREF(own);
    return result;
}

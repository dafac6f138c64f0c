/*
 * array_from_ptr.c: tack.array_from_ptr, an array over memory Tack does not own: an
 * address (anything with __index__; the caller keeps the memory alive) or an object
 * exposing its memory through the buffer protocol (held while any array over it
 * lives). The size, alignment and address-range rules are the runtime's
 * (tack_array_wrap_memory, tack_array_wrap_region).
 */
#include "tackpy.h"

int
tackpy_python_gone(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    int finalizing = Py_IsFinalizing();
#else
    int finalizing = _Py_IsFinalizing();
#endif
    /* While finalizing, only the thread that holds the lock may still take it. */
    return !Py_IsInitialized() || (finalizing && !PyGILState_Check());
}

void
tackpy_release_object(void *ctx)
{
    if (tackpy_python_gone()) {
        return; /* leak: nothing of Python may be touched any more */
    }
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)ctx);
    PyGILState_Release(g);
}

/* The Py_buffer behind an array over an exporter's memory (array_from_ptr over an
 * object, a JAX array read by buffer_direct.c) is released when the last array over
 * the memory goes: possibly on another thread, possibly after Python has finalized,
 * when the buffer is leaked rather than touched. */
void
tackpy_release_buffer(void *ctx)
{
    tackpy_buffer_hold *hold = ctx;
    if (tackpy_python_gone()) {
        return; /* leak: nothing of Python may be touched any more */
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(&hold->view);
    PyGILState_Release(g);
    PyMem_RawFree(hold);
}

static int
shape_like(PyObject *obj)
{
    return PyTuple_Check(obj) || PyList_Check(obj) ||
           (PyIndex_Check(obj) && !PyType_Check(obj));
}

/* Wraps the buffer obj exports. Consumes nothing; returns a new array or NULL. */
static PyObject *
wrap_buffer_object(tackpy_state *st, PyObject *obj, tack_device *dev, tack_dtype dtype,
                   int ndim, const int64_t *shape, int writable)
{
    tackpy_buffer_hold *hold = PyMem_RawMalloc(sizeof *hold);
    if (!hold) {
        return tackpy_raise_fmt(st, TACK_ERR_NO_MEMORY,
                                "out of memory holding the %.100s's buffer",
                                Py_TYPE(obj)->tp_name);
    }
    /* C order only: a Fortran-ordered block read as a Tack array would be read
     * transposed. */
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &hold->view, flags) < 0) {
        PyMem_RawFree(hold);
        /* Exporters refuse with BufferError or (NumPy) ValueError. */
        if (!PyErr_ExceptionMatches(PyExc_BufferError) &&
            !PyErr_ExceptionMatches(PyExc_ValueError)) {
            return NULL;
        }
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        /* Tell a read-only exporter apart from one that is not C-contiguous, and
         * both from one that exports nothing at all (a released memoryview). */
        Py_buffer probe;
        int readable = PyObject_GetBuffer(obj, &probe, PyBUF_C_CONTIGUOUS) == 0;
        int strided = readable;
        if (readable) {
            PyBuffer_Release(&probe);
        }
        else {
            PyErr_Clear();
            strided = PyObject_GetBuffer(obj, &probe, PyBUF_FULL_RO) == 0;
            if (strided) {
                PyBuffer_Release(&probe);
            }
        }
        PyErr_Clear();
        PyObject *result =
            readable ? tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                                        "writable=True, but the %.100s's memory is "
                                        "read-only: pass writable=False",
                                        Py_TYPE(obj)->tp_name)
            : strided
                ? tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                                   "the %.100s's memory is not one C-contiguous "
                                   "block: wrap a C-contiguous object, or copy it "
                                   "with tack.array",
                                   Py_TYPE(obj)->tp_name)
                : tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                                   "the %.100s exports no memory (%S): wrap an object "
                                   "whose memory is still there",
                                   Py_TYPE(obj)->tp_name, value ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return result;
    }
    /* The size and alignment rules are the runtime's; it consumes the hold. */
    tack_array *arr;
    tack_status status =
        tack_array_wrap_region(dev, hold->view.buf, (size_t)hold->view.len, dtype, ndim,
                               shape, writable, tackpy_release_buffer, hold, &arr);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    return tackpy_array_wrap(st, arr);
}

PyObject *
tackpy_array_from_ptr_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames)
{
    tackpy_state *st = PyModule_GetState(module);
    static const tackpy_signature sig = {
        "array_from_ptr",
        4,
        4,
        0,
        3,
        {TACKPY_NAME_ptr, TACKPY_NAME_shape, TACKPY_NAME_dtype, TACKPY_NAME_writable}};
    /* shape and dtype may come in either order: the second and third positionals
     * go by their type (a shape is an int or a sequence, anything else a dtype). */
    int slots[4] = {0, 1, 2, 3};
    for (Py_ssize_t k = 1; k < nargs && k < 3; k++) {
        slots[k] = shape_like(args[k]) ? 1 : 2;
    }
    PyObject *a[4];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, slots, a, NULL) < 0) {
        return NULL;
    }
    int64_t shape[TACK_MAX_NDIM];
    int ndim = tackpy_parse_shape(st, a[1], shape);
    if (ndim < 0) {
        return NULL;
    }
    tack_dtype dtype;
    if (tackpy_dtype_from_object(st, a[2], &dtype) < 0) {
        return NULL;
    }
    int writable = a[3] ? PyObject_IsTrue(a[3]) : 0;
    if (writable < 0) {
        return NULL;
    }
    tack_device *dev;
    if (tackpy_device_from_object(st, NULL, &dev) < 0) {
        return NULL;
    }
    PyObject *result;
    /* Anything with __index__ is an address (np.uintp, ctypes values converted by
     * the caller, C-level handles), even when it also exposes a buffer: a NumPy
     * integer scalar's own eight bytes are never what the caller means. */
    PyObject *index = NULL;
    if (PyIndex_Check(a[0])) {
        index = PyNumber_Index(a[0]);
        if (!index) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError) ||
                !PyObject_CheckBuffer(a[0])) {
                tack_device_release(dev);
                return NULL;
            }
            PyErr_Clear(); /* e.g. a NumPy array of several ints: its memory */
        }
    }
    if (index) {
        unsigned long long address = PyLong_AsUnsignedLongLong(index);
        Py_DECREF(index);
        if (address == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            tack_device_release(dev);
            return tackpy_raise_fmt(st, TACK_ERR_INVALID_ARGUMENT,
                                    "ptr=%R is not an address: pass a non-negative "
                                    "int below 2**64",
                                    a[0]);
        }
        tack_array *arr;
        tack_status status =
            tack_array_wrap_memory(dev, (void *)(uintptr_t)address, dtype, ndim, shape,
                                   writable, NULL, NULL, &arr);
        result =
            status == TACK_OK ? tackpy_array_wrap(st, arr) : tackpy_raise(st, status);
    }
    else if (PyObject_CheckBuffer(a[0])) {
        result = wrap_buffer_object(st, a[0], dev, dtype, ndim, shape, writable);
    }
    else {
        result = tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                                  "ptr must be an int address or an object exposing "
                                  "its memory (buffer protocol), not %.100s",
                                  Py_TYPE(a[0])->tp_name);
    }
    tack_device_release(dev);
    return result;
}

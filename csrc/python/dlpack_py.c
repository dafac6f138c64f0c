/*
 * dlpack_py.c: the Python face of DLPack capsules: Array.__dlpack__,
 * Array.__dlpack_device__ and tack.from_dlpack.
 *
 * A binding only: capsules, argument conversion and the interpreter lock live here;
 * what a consumer may ask of an export (tack_dlpack_export_prepare), building it,
 * validating a foreign tensor and owning memory are the C runtime's
 * (csrc/runtime/dlpack_*.c). The exchange API is in dlpack_exchange_py.c.
 *
 * Capsule discipline (the DLPack Python specification):
 *   - an exported capsule is named "dltensor" or "dltensor_versioned"; its destructor
 *     calls the deleter only if the capsule still has that name, i.e. nobody adopted
 *     it. Our deleters are pure C, so the destructor touches no other Python state;
 *   - an import renames the capsule to its used_ name BEFORE the runtime takes the
 *     managed tensor, and nothing that can fail happens in between: from then on the
 *     runtime calls the deleter exactly once and the capsule's destructor does
 *     nothing.
 */
#include "tackpy.h"
#include <string.h>

#define ARR(self) TACKPY_ARR(self)

/* ---- export ------------------------------------------------------------------- */

static void
capsule_destructor_versioned(PyObject *capsule)
{
    /* IsValid is false for a renamed (adopted) capsule and sets no exception. */
    if (PyCapsule_IsValid(capsule, TACK_DLPACK_CAPSULE_VERSIONED)) {
        DLManagedTensorVersioned *mt =
            PyCapsule_GetPointer(capsule, TACK_DLPACK_CAPSULE_VERSIONED);
        if (mt->deleter) {
            mt->deleter(mt);
        }
    }
}

static void
capsule_destructor_legacy(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, TACK_DLPACK_CAPSULE_LEGACY)) {
        DLManagedTensor *mt = PyCapsule_GetPointer(capsule, TACK_DLPACK_CAPSULE_LEGACY);
        if (mt->deleter) {
            mt->deleter(mt);
        }
    }
}

/* Reads a (int, int) pair. Returns 0, or -1 with TypeError set. */
static int
int_pair(tackpy_state *st, PyObject *obj, const char *what, long long *a, long long *b)
{
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(obj, 0)) ||
        !PyLong_Check(PyTuple_GET_ITEM(obj, 1))) {
        tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                         "%s must be None or a tuple of two ints, not %R", what, obj);
        return -1;
    }
    long long first = PyLong_AsLongLong(PyTuple_GET_ITEM(obj, 0));
    long long second = first == -1 && PyErr_Occurred()
                           ? -1
                           : PyLong_AsLongLong(PyTuple_GET_ITEM(obj, 1));
    if (PyErr_Occurred()) {
        /* Only an int past 64 bits fails here: no version or device is that. */
        PyErr_Clear();
        tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                         "%s=%R has an int that does not fit in 64 bits", what, obj);
        return -1;
    }
    *a = first;
    *b = second;
    return 0;
}

int
tackpy_stream_arg(tackpy_state *st, PyObject *stream, bool *given, int64_t *value)
{
    *given = false;
    if (!stream || stream == Py_None) {
        return 0;
    }
    int overflow = 0;
    long long v =
        PyLong_Check(stream) ? PyLong_AsLongLongAndOverflow(stream, &overflow) : 0;
    if (!PyLong_Check(stream) || overflow) {
        return tackpy_raise_fmt_int(st, TACK_ERR_DLPACK_INVALID,
                                    "stream=%R is not a stream: pass None or an int",
                                    stream);
    }
    *given = true;
    *value = v;
    return 0;
}

/* A max_version that is a tuple of two ints of 64 bits, major >= 1: a request for a
 * versioned tensor. Anything else (legacy, or not a version at all) is false, and
 * the general path decides or raises. Sets no exception. */
static bool
versioned_request(PyObject *max_version, long long *major, long long *minor)
{
    if (!max_version || !PyTuple_CheckExact(max_version) ||
        PyTuple_GET_SIZE(max_version) != 2) {
        return false;
    }
    PyObject *first = PyTuple_GET_ITEM(max_version, 0);
    PyObject *second = PyTuple_GET_ITEM(max_version, 1);
    if (!PyLong_CheckExact(first) || !PyLong_CheckExact(second)) {
        return false;
    }
    int overflow_major = 0, overflow_minor = 0;
    *major = PyLong_AsLongLongAndOverflow(first, &overflow_major);
    *minor = PyLong_AsLongLongAndOverflow(second, &overflow_minor);
    return !overflow_major && !overflow_minor && *major >= 1;
}

/* The capsule owning a versioned export; on failure the export is deleted. */
static PyObject *
versioned_capsule(DLManagedTensorVersioned *mt)
{
    PyObject *capsule =
        PyCapsule_New(mt, TACK_DLPACK_CAPSULE_VERSIONED, capsule_destructor_versioned);
    if (!capsule) {
        mt->deleter(mt);
    }
    return capsule;
}

PyObject *
tackpy_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    tackpy_state *st = tackpy_state_of(self);
    static const tackpy_signature sig = {"__dlpack__",
                                         4,
                                         0,
                                         0,
                                         0,
                                         {TACKPY_NAME_stream, TACKPY_NAME_max_version,
                                          TACKPY_NAME_dl_device, TACKPY_NAME_copy}};
    PyObject *a[4];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, a, NULL) < 0) {
        return NULL;
    }
    PyObject *stream = a[0], *max_version = a[1], *dl_device = a[2], *copy = a[3];
    tack_array *arr = ARR(self);
    /* What NumPy's and PyTorch's from_dlpack ask: a version and nothing else that
     * changes the export. One runtime call makes the same tensor the general path
     * below would, without building a request to decide. */
    long long read_major, read_minor;
    if ((!stream || stream == Py_None) && (!dl_device || dl_device == Py_None) &&
        (!copy || copy == Py_None || copy == Py_False) &&
        versioned_request(max_version, &read_major, &read_minor)) {
        DLManagedTensorVersioned *mt;
        tack_status own = tack_dlpack_export_own(arr, read_major, read_minor, &mt);
        return own == TACK_OK ? versioned_capsule(mt) : tackpy_raise(st, own);
    }
    /* The keywords as values; what they may be is the runtime's rule. */
    tack_dlpack_export_request req;
    memset(&req, 0, sizeof req);
    if (copy && copy != Py_None) {
        if (!PyBool_Check(copy)) {
            return tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                                    "copy must be None, True or False, not %R", copy);
        }
        req.has_copy = true;
        req.copy = copy == Py_True;
    }
    if (max_version && max_version != Py_None) {
        long long major, minor;
        if (int_pair(st, max_version, "max_version", &major, &minor) < 0) {
            return NULL;
        }
        req.has_max_version = true;
        req.max_major = major;
        req.max_minor = minor;
    }
    if (tackpy_stream_arg(st, stream, &req.has_stream, &req.stream) < 0) {
        return NULL;
    }
    if (dl_device && dl_device != Py_None) {
        long long type, id;
        if (int_pair(st, dl_device, "dl_device", &type, &id) < 0) {
            return NULL;
        }
        if (type < INT32_MIN || type > INT32_MAX || id < INT32_MIN || id > INT32_MAX) {
            PyObject *own = tackpy_array_dlpack_device(self, NULL);
            PyObject *none =
                own ? tackpy_raise_fmt(st, TACK_ERR_EXPORT_REFUSED,
                                       "dl_device=%R names no DLPack device (its type "
                                       "and id are 32-bit ints): request the array's "
                                       "own device %R",
                                       dl_device, own)
                    : NULL;
            Py_XDECREF(own);
            return none;
        }
        req.has_dl_device = true;
        req.device_type = (int32_t)type;
        req.device_id = (int32_t)id;
    }
    bool versioned = false;
    tack_dlpack_export_options opts;
    tack_status prep = tack_dlpack_export_prepare(arr, &req, &versioned, &opts);
    if (prep != TACK_OK) {
        return tackpy_raise(st, prep);
    }
    tack_device *want = opts.device;
    tack_status status;
    PyObject *capsule;
    if (versioned) {
        DLManagedTensorVersioned *mt;
        status = tack_dlpack_export_versioned(arr, &opts, &mt);
        tack_device_release(want);
        if (status != TACK_OK) {
            return tackpy_raise(st, status);
        }
        capsule = versioned_capsule(mt);
    }
    else {
        DLManagedTensor *mt;
        status = tack_dlpack_export_legacy(arr, &opts, &mt);
        tack_device_release(want);
        if (status != TACK_OK) {
            return tackpy_raise(st, status);
        }
        capsule =
            PyCapsule_New(mt, TACK_DLPACK_CAPSULE_LEGACY, capsule_destructor_legacy);
        if (!capsule) {
            mt->deleter(mt);
        }
    }
    return capsule;
}

PyObject *
tackpy_array_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)unused;
    tack_device *dev = tack_array_device(ARR(self));
    return Py_BuildValue("(ii)", tack_device_dlpack_type(dev),
                         tack_device_ordinal(dev));
}

/* ---- import ------------------------------------------------------------------- */

/* Adopts a DLPack capsule: checks its name, renames it to the used_ name and hands
 * the managed tensor to the runtime, which consumes it. */
static PyObject *
import_capsule(tackpy_state *st, PyObject *capsule,
               const tack_dlpack_import_options *opts)
{
    if (!PyCapsule_CheckExact(capsule)) {
        return tackpy_raise_fmt(st, TACK_ERR_DLPACK_DTYPE,
                                "__dlpack__() returned %.100s, not a DLPack capsule",
                                Py_TYPE(capsule)->tp_name);
    }
    const char *name = PyCapsule_GetName(capsule);
    if (!name && PyErr_Occurred()) {
        return NULL;
    }
    int versioned;
    if (name && strcmp(name, TACK_DLPACK_CAPSULE_VERSIONED) == 0) {
        versioned = 1;
    }
    else if (name && strcmp(name, TACK_DLPACK_CAPSULE_LEGACY) == 0) {
        versioned = 0;
    }
    else if (name && (strcmp(name, TACK_DLPACK_CAPSULE_VERSIONED_USED) == 0 ||
                      strcmp(name, TACK_DLPACK_CAPSULE_LEGACY_USED) == 0)) {
        return tackpy_raise_fmt(st, TACK_ERR_DLPACK_INVALID,
                                "the DLPack capsule was already consumed (its name is "
                                "'%s'): a capsule can be imported once; ask the "
                                "producer for a new one",
                                name);
    }
    else {
        return tackpy_raise_fmt(st, TACK_ERR_DLPACK_INVALID,
                                "a capsule named '%s' is not a DLPack tensor: expected "
                                "'dltensor' or 'dltensor_versioned'",
                                name ? name : "(null)");
    }
    void *mt = PyCapsule_GetPointer(capsule, name);
    if (!mt) {
        return NULL;
    }
    /* Rename first: from here the runtime owns the tensor and the producer's capsule
     * destructor must do nothing. */
    if (PyCapsule_SetName(capsule, versioned ? TACK_DLPACK_CAPSULE_VERSIONED_USED
                                             : TACK_DLPACK_CAPSULE_LEGACY_USED) < 0) {
        return NULL;
    }
    tack_array *arr;
    tack_status status = versioned ? tack_dlpack_import_versioned(mt, opts, &arr)
                                   : tack_dlpack_import_legacy(mt, opts, &arr);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    return tackpy_array_wrap(st, arr);
}

/* Drops a reference to a producer's capsule. Its destructor may run Python (ctypes
 * and cffi producers write it in Python), which must neither see nor erase the
 * refusal already set for the caller: the exception is set aside meanwhile. */
static void
release_keeping_error(PyObject *capsule)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    Py_DECREF(capsule);
    if (type) {
        PyErr_Restore(type, value, tb);
    }
}

/* Tack's stream on the device x lives on (from x.__dlpack_device__()), as the int to
 * pass as stream=, or NULL with no error where there is no stream to pass. */
static PyObject *
consumer_stream(tackpy_state *st, PyObject *x, bool host_only)
{
    /* NumPy arrays, the commonest producer, live in host memory: no stream to pass,
     * and the import's hot path is spared a method call. */
    if (host_only) {
        return NULL;
    }
    PyObject *args[1] = {x};
    PyObject *where =
        PyObject_VectorcallMethod(st->names[TACKPY_NAME___dlpack_device__], args,
                                  1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (!where) {
        PyErr_Clear(); /* __dlpack__ alone still works; it reports its own errors */
        return NULL;
    }
    long type = -1, id = -1;
    if (PyTuple_Check(where) && PyTuple_GET_SIZE(where) == 2) {
        type = PyLong_AsLong(PyTuple_GET_ITEM(where, 0));
        id = PyLong_AsLong(PyTuple_GET_ITEM(where, 1));
    }
    Py_DECREF(where);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (type < INT32_MIN || type > INT32_MAX) {
        return NULL; /* no DLPack device type */
    }
    uintptr_t stream = tack_dlpack_consumer_stream((int32_t)type, id);
    return stream ? PyLong_FromUnsignedLongLong((unsigned long long)stream) : NULL;
}

/* x.__dlpack__(max_version=(1, 3)), and x.__dlpack__() for a producer that predates
 * DLPack 1.0 and raises TypeError at the keyword. copy is never passed: Tack makes
 * its own copies, so the fallback cannot drop a copy request. */
static PyObject *
request_capsule(tackpy_state *st, PyObject *x, bool host_only)
{
    PyObject *dunder = st->names[TACKPY_NAME___dlpack__];
    PyObject *stream = consumer_stream(st, x, host_only);
    PyObject *capsule;
    if (stream) {
        /* A producer on a device with streams orders its pending writes before
         * Tack's stream (the Array API's consumer rule): without stream= it may
         * assume the legacy default stream, which Tack's stream does not follow. */
        PyObject *sargs[3] = {x, st->dlpack_max_version, stream};
        capsule =
            PyObject_VectorcallMethod(dunder, sargs, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      st->dlpack_kw_max_version_stream);
        Py_DECREF(stream);
    }
    else {
        PyObject *margs[2] = {x, st->dlpack_max_version};
        capsule =
            PyObject_VectorcallMethod(dunder, margs, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      st->dlpack_kw_max_version);
    }
    PyObject *args[2] = {x, NULL};
    if (capsule) {
        return capsule;
    }
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        return PyObject_VectorcallMethod(dunder, args,
                                         1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    if (PyErr_ExceptionMatches(PyExc_AttributeError) && !PyObject_HasAttr(x, dunder)) {
        PyErr_Clear();
        PyErr_Format(PyExc_AttributeError,
                     "%.100s has no __dlpack__ method, so it cannot be shared: copy "
                     "it with tack.array(x), or wrap its memory with "
                     "tack.array_from_ptr",
                     Py_TYPE(x)->tp_name);
    }
    return NULL;
}

PyObject *
tackpy_from_dlpack_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames)
{
    tackpy_state *st = PyModule_GetState(module);
    static const tackpy_signature sig = {
        "from_dlpack",
        3,
        1,
        1,
        1,
        {TACKPY_NAME_x, TACKPY_NAME_device, TACKPY_NAME_copy}};
    PyObject *all[3];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, all, NULL) < 0) {
        return NULL;
    }
    PyObject *x = all[0];
    PyObject *const *a = all + 1; /* device, copy */
    tack_dlpack_import_options opts = {NULL, TACK_DLPACK_COPY_NEVER, false};
    if (a[1] == Py_True) {
        opts.copy = TACK_DLPACK_COPY_ALWAYS;
    }
    else if (a[1] == Py_None) {
        opts.copy = TACK_DLPACK_COPY_IF_NEEDED;
    }
    else if (a[1] && a[1] != Py_False) {
        return tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                                "copy must be None, True or False, not %R", a[1]);
    }
    /* The device is resolved before anything is taken from x, so a bad device
     * consumes nothing. */
    if (a[0] && a[0] != Py_None &&
        tackpy_device_from_object(st, a[0], &opts.device) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (PyCapsule_CheckExact(x)) {
        result = import_capsule(st, x, &opts);
        goto done;
    }
    bool host_only = false, numpy_direct = false;
    const DLPackExchangeAPI *api = tackpy_exchange_api_of(
        st, Py_TYPE(x), &opts.read_only, &host_only, &numpy_direct);
    if (numpy_direct && tackpy_numpy_direct_import(st, x, &opts, &result)) {
        goto done;
    }
    /* A JAX array in host memory: its buffer, without its Python __dlpack__. */
    if (!api && opts.read_only && tackpy_buffer_direct_import(st, x, &opts, &result)) {
        goto done;
    }
    if (api) {
        DLManagedTensorVersioned *mt = NULL;
        if (api->managed_tensor_from_py_object_no_sync(x, &mt) != 0 || !mt) {
            if (!PyErr_Occurred()) {
                tackpy_raise_fmt(st, TACK_ERR_DLPACK_INVALID,
                                 "%.100s's DLPack exchange API gave no tensor",
                                 Py_TYPE(x)->tp_name);
            }
            goto done;
        }
        if (!tackpy_exchange_pending_work(api, mt)) {
            tack_array *arr;
            tack_status status = tack_dlpack_import_versioned(mt, &opts, &arr);
            result = status == TACK_OK ? tackpy_array_wrap(st, arr)
                                       : tackpy_raise(st, status);
            goto done;
        }
        /* Work may be pending on the producer's stream: let __dlpack__ order it. */
        if (mt->deleter) {
            mt->deleter(mt);
        }
    }
    PyObject *capsule = request_capsule(st, x, host_only);
    if (!capsule && PyErr_ExceptionMatches(PyExc_AttributeError) &&
        !PyObject_HasAttr(x, st->names[TACKPY_NAME___dlpack__])) {
        /* An object that speaks only the CUDA Array Interface (Numba, older
         * libraries): wrapped without a copy, docs/cuda.md. */
        PyObject *cai =
            PyObject_GetAttr(x, st->names[TACKPY_NAME___cuda_array_interface__]);
        if (cai) {
            PyErr_Clear();
            result = tackpy_from_cuda_array_interface(st, x, cai, &opts);
            Py_DECREF(cai);
            goto done;
        }
        PyErr_Clear();
        PyErr_Format(PyExc_AttributeError,
                     "%.100s has neither __dlpack__ nor __cuda_array_interface__, so "
                     "it cannot be shared: copy it with tack.array(x), or wrap its "
                     "memory with tack.array_from_ptr",
                     Py_TYPE(x)->tp_name);
        goto done;
    }
    if (capsule) {
        result = import_capsule(st, capsule, &opts);
        if (result) {
            Py_DECREF(capsule);
        }
        else {
            release_keeping_error(capsule);
        }
    }
done:
    tack_device_release(opts.device);
    return result;
}

PyObject *
tackpy_dlpack_stats_fn(PyObject *module, PyObject *unused)
{
    (void)unused;
    tackpy_state *st = PyModule_GetState(module);
    return Py_BuildValue("{sKsK}", "numpy_direct", st->numpy_direct_imports,
                         "buffer_direct", st->buffer_direct_imports);
}

/* ---- module initialisation ----------------------------------------------------- */

int
tackpy_dlpack_init(PyObject *module, tackpy_state *st)
{
    (void)module;
    /* x.__dlpack__(max_version=(1, 3)) is called with these on every import. */
    st->dlpack_kw_max_version = PyTuple_Pack(1, st->names[TACKPY_NAME_max_version]);
    st->dlpack_kw_max_version_stream = PyTuple_Pack(
        2, st->names[TACKPY_NAME_max_version], st->names[TACKPY_NAME_stream]);
    st->dlpack_max_version =
        Py_BuildValue("(ii)", TACK_DLPACK_MAJOR, TACK_DLPACK_MINOR);
    return st->dlpack_kw_max_version && st->dlpack_kw_max_version_stream &&
                   st->dlpack_max_version
               ? 0
               : -1;
}

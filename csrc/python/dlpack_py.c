/*
 * dlpack_py.c: the Python face of DLPack: Array.__dlpack__, Array.__dlpack_device__,
 * tack.from_dlpack, tack.array_from_ptr and the DLPack C exchange API table.
 *
 * A binding only: capsules, argument parsing and the interpreter lock live here;
 * building an export, validating a foreign tensor and owning memory are the C
 * runtime's (csrc/runtime/dlpack_*.c).
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

#define ARR(self) (((tackpy_Array *)(self))->arr)

/* Indices into st->dlpack_consts. */
enum {
    C_DLPACK,         /* "__dlpack__" */
    C_KW_MAX_VERSION, /* ("max_version",) */
    C_MAX_VERSION,    /* (1, 3) */
    C_API_13,         /* "__dlpack_c_exchange_api__" */
    C_API_12,         /* "__c_dlpack_exchange_api__" */
    C_COUNT
};

#define CONST(st, k) PyTuple_GET_ITEM((st)->dlpack_consts, (k))

static tackpy_state *
state_of(PyObject *self)
{
    return tackpy_state_of_type(Py_TYPE(self));
}

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
        return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE,
                                    "%s must be None or a tuple of two ints, not %R",
                                    what, obj);
    }
    *a = PyLong_AsLongLong(PyTuple_GET_ITEM(obj, 0));
    if (*a == -1 && PyErr_Occurred()) {
        return -1;
    }
    *b = PyLong_AsLongLong(PyTuple_GET_ITEM(obj, 1));
    return *b == -1 && PyErr_Occurred() ? -1 : 0;
}

PyObject *
tackpy_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    tackpy_state *st = state_of(self);
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
    if (stream && stream != Py_None) {
        int overflow = 0;
        long long v =
            PyLong_Check(stream) ? PyLong_AsLongLongAndOverflow(stream, &overflow) : 0;
        if (!PyLong_Check(stream) || overflow) {
            return tackpy_raise_fmt(st, TACK_ERR_DLPACK_INVALID,
                                    "stream=%R is not a stream: pass None or an int",
                                    stream);
        }
        req.has_stream = true;
        req.stream = v;
    }
    if (dl_device && dl_device != Py_None) {
        long long type, id;
        if (int_pair(st, dl_device, "dl_device", &type, &id) < 0) {
            return NULL;
        }
        req.has_dl_device = true;
        req.device_type = type < INT32_MIN || type > INT32_MAX ? -1 : (int32_t)type;
        req.device_id = id < INT32_MIN || id > INT32_MAX ? -1 : (int32_t)id;
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
        capsule = PyCapsule_New(mt, TACK_DLPACK_CAPSULE_VERSIONED,
                                capsule_destructor_versioned);
        if (!capsule) {
            mt->deleter(mt);
        }
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

/* ---- the C exchange API (producer side) ------------------------------------------ */

static void
exchange_set_error(tack_status status, void *error_ctx,
                   void (*SetError)(void *, const char *, const char *))
{
    if (!SetError) {
        return;
    }
    const char *kind = tackpy_kind_builtin_name(tack_status_kind(status));
    SetError(error_ctx, kind, tack_last_error());
}

/* Pure C: callable without the interpreter lock. */
static int
exchange_allocator(DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
                   void (*SetError)(void *error_ctx, const char *kind,
                                    const char *message))
{
    tack_status status = tack_dlpack_allocate(prototype, out);
    if (status != TACK_OK) {
        exchange_set_error(status, error_ctx, SetError);
        return -1;
    }
    return 0;
}

/* The Tack state behind obj's type, or NULL with TypeError when obj is no Tack
 * array. */
static tackpy_state *
exchange_array_state(PyObject *obj)
{
    PyObject *module = PyType_GetModuleByDef(Py_TYPE(obj), &tackpy_module_def);
    tackpy_state *st = module ? PyModule_GetState(module) : NULL;
    if (st && !tackpy_array_check(st, obj)) {
        st = NULL;
    }
    if (!st) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "the Tack DLPack exchange API takes a tack.Array, not %.100s",
                     Py_TYPE(obj)->tp_name);
    }
    return st;
}

static int
exchange_from_py(void *py_object, DLManagedTensorVersioned **out)
{
    tackpy_state *st = exchange_array_state(py_object);
    if (!st) {
        return -1;
    }
    tack_status status = tack_dlpack_export_versioned(ARR(py_object), NULL, out);
    return status == TACK_OK ? 0 : tackpy_raise_int(st, status);
}

static int
exchange_dltensor_from_py(void *py_object, DLTensor *out)
{
    if (!exchange_array_state(py_object)) {
        return -1;
    }
    tack_dlpack_describe(ARR(py_object), out);
    return 0;
}

static int
exchange_to_py(DLManagedTensorVersioned *tensor, void **out_py_object)
{
    /* The table is static, so the module comes from the import system rather than
     * from a C global. */
    PyObject *module = PyImport_ImportModule("tack._tack");
    if (!module) {
        if (tensor && tensor->deleter) {
            tensor->deleter(tensor); /* ownership was stolen */
        }
        return -1;
    }
    tackpy_state *st = PyModule_GetState(module);
    tack_array *arr;
    tack_status status = tack_dlpack_import_versioned(tensor, NULL, &arr);
    PyObject *obj =
        status == TACK_OK ? tackpy_array_wrap(st, arr) : tackpy_raise(st, status);
    Py_DECREF(module);
    if (!obj) {
        return -1;
    }
    *out_py_object = obj;
    return 0;
}

static int
exchange_current_work_stream(DLDeviceType device_type, int32_t device_id,
                             void **out_current_stream)
{
    /* Tack's launches on the CPU are synchronous: there is never pending work. */
    (void)device_type;
    (void)device_id;
    *out_current_stream = NULL;
    return 0;
}

/* One table for the process, shared by every tack.Array (DLPack 1.3). */
static const DLPackExchangeAPI exchange_api = {
    .header = {.version = {TACK_DLPACK_MAJOR, TACK_DLPACK_MINOR}, .prev_api = NULL},
    .managed_tensor_allocator = exchange_allocator,
    .managed_tensor_from_py_object_no_sync = exchange_from_py,
    .managed_tensor_to_py_object_no_sync = exchange_to_py,
    .dltensor_from_py_object_no_sync = exchange_dltensor_from_py,
    .current_work_stream = exchange_current_work_stream,
};

/* ---- the C exchange API (consumer side) ------------------------------------------ */

/* The major-1 table behind an attribute value, or NULL (then the producer is asked
 * through __dlpack__, which every producer has). Which addresses can be a table is
 * the runtime's rule (tack_dlpack_exchange_api_find): a forged int such as 1 or -1
 * is refused before anything is read from it. */
static const DLPackExchangeAPI *
exchange_table(PyObject *value)
{
    uintptr_t address = 0;
    if (PyCapsule_IsValid(value, TACK_DLPACK_CAPSULE_EXCHANGE_API)) {
        address =
            (uintptr_t)PyCapsule_GetPointer(value, TACK_DLPACK_CAPSULE_EXCHANGE_API);
    }
    else if (PyLong_Check(value)) {
        /* Negative values and values of 2**64 or more overflow: no table. */
        unsigned long long v = PyLong_AsUnsignedLongLong(value);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return NULL;
        }
        address = (uintptr_t)v;
    }
    const DLPackExchangeAPI *api = NULL;
    if (tack_dlpack_exchange_api_find(address, &api) != TACK_OK) {
        return NULL;
    }
    return api;
}

/* The exchange table of a producer type, or NULL; cached per (type, version tag),
 * so a type that changes its attributes is looked up again. */
static const DLPackExchangeAPI *
exchange_api_of(tackpy_state *st, PyTypeObject *tp)
{
    for (int k = 0; k < TACKPY_EXCHANGE_CACHE; k++) {
        tackpy_exchange_cache *c = &st->dlpack_cache[k];
        if (c->type == tp && c->tag == tp->tp_version_tag && c->tag != 0) {
            return c->api;
        }
    }
    const DLPackExchangeAPI *api = NULL;
    const int names[2] = {C_API_13, C_API_12};
    for (int k = 0; k < 2 && !api; k++) {
        PyObject *value = PyObject_GetAttr((PyObject *)tp, CONST(st, names[k]));
        if (!value) {
            PyErr_Clear();
            continue;
        }
        api = exchange_table(value);
        Py_DECREF(value);
    }
    /* The lookups gave the type a version tag if it can have one. A tag is never
     * reused by another type, so a borrowed type pointer is safe as a key. */
    tackpy_exchange_cache *c = &st->dlpack_cache[st->dlpack_cache_next];
    st->dlpack_cache_next = (st->dlpack_cache_next + 1) % TACKPY_EXCHANGE_CACHE;
    c->type = tp;
    c->tag = tp->tp_version_tag;
    c->api = api;
    return api;
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

/* Whether the producer's current stream on the tensor's device may still hold work
 * that we could not order after (we never have a stream to order). */
static int
exchange_pending_work(const DLPackExchangeAPI *api, const DLManagedTensorVersioned *mt)
{
    DLDeviceType type = mt->dl_tensor.device.device_type;
    if (mt->version.major != 1 || type == kDLCPU || type == kDLCUDAHost ||
        type == kDLROCMHost || !api->current_work_stream) {
        return 0;
    }
    void *stream = NULL;
    if (api->current_work_stream(type, mt->dl_tensor.device.device_id, &stream) != 0) {
        PyErr_Clear();
        return 1;
    }
    return stream != NULL;
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

/* x.__dlpack__(max_version=(1, 3)), and x.__dlpack__() for a producer that predates
 * DLPack 1.0 and raises TypeError at the keyword. copy is never passed: Tack makes
 * its own copies, so the fallback cannot drop a copy request. */
static PyObject *
request_capsule(tackpy_state *st, PyObject *x)
{
    PyObject *args[2] = {x, CONST(st, C_MAX_VERSION)};
    PyObject *capsule = PyObject_VectorcallMethod(CONST(st, C_DLPACK), args,
                                                  1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                  CONST(st, C_KW_MAX_VERSION));
    if (capsule) {
        return capsule;
    }
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        return PyObject_VectorcallMethod(CONST(st, C_DLPACK), args,
                                         1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    if (PyErr_ExceptionMatches(PyExc_AttributeError) &&
        !PyObject_HasAttr(x, CONST(st, C_DLPACK))) {
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
    tack_dlpack_import_options opts = {NULL, TACK_DLPACK_COPY_NEVER};
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
    const DLPackExchangeAPI *api = exchange_api_of(st, Py_TYPE(x));
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
        if (!exchange_pending_work(api, mt)) {
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
    PyObject *capsule = request_capsule(st, x);
    if (capsule) {
        result = import_capsule(st, capsule, &opts);
        release_keeping_error(capsule);
    }
done:
    tack_device_release(opts.device);
    return result;
}

/* ---- array_from_ptr ---------------------------------------------------------------
 */

/* The Py_buffer behind an array_from_ptr over an object, released when the last
 * array over the memory goes: possibly on another thread, possibly after Python has
 * finalized, when the buffer is leaked rather than touched. */
typedef struct {
    Py_buffer view;
} pybuffer_hold;

static int
python_gone(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    int finalizing = Py_IsFinalizing();
#else
    int finalizing = _Py_IsFinalizing();
#endif
    /* While finalizing, only the thread that holds the lock may still take it. */
    return !Py_IsInitialized() || (finalizing && !PyGILState_Check());
}

static void
release_pybuffer(void *ctx)
{
    pybuffer_hold *hold = ctx;
    if (python_gone()) {
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
    pybuffer_hold *hold = PyMem_RawMalloc(sizeof *hold);
    if (!hold) {
        return PyErr_NoMemory();
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
                               shape, writable, release_pybuffer, hold, &arr);
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

/* ---- module initialisation ----------------------------------------------------- */

int
tackpy_dlpack_init(PyObject *module, tackpy_state *st)
{
    (void)module;
    static const char *const strings[] = {"__dlpack__", "max_version", NULL,
                                          "__dlpack_c_exchange_api__",
                                          "__c_dlpack_exchange_api__"};
    PyObject *items[C_COUNT] = {NULL};
    int ok = 1;
    for (int k = 0; k < C_COUNT; k++) {
        if (strings[k]) {
            items[k] = PyUnicode_InternFromString(strings[k]);
            ok = ok && items[k];
        }
    }
    if (ok) {
        PyObject *name = items[C_KW_MAX_VERSION];
        items[C_KW_MAX_VERSION] = PyTuple_Pack(1, name);
        Py_DECREF(name);
        items[C_MAX_VERSION] =
            Py_BuildValue("(ii)", TACK_DLPACK_MAJOR, TACK_DLPACK_MINOR);
        ok = items[C_KW_MAX_VERSION] && items[C_MAX_VERSION];
    }
    st->dlpack_consts = ok ? PyTuple_New(C_COUNT) : NULL;
    for (int k = 0; k < C_COUNT; k++) {
        if (st->dlpack_consts) {
            PyTuple_SET_ITEM(st->dlpack_consts, k, items[k]);
        }
        else {
            Py_XDECREF(items[k]);
        }
    }
    if (!st->dlpack_consts) {
        return -1;
    }
    memset(st->dlpack_cache, 0, sizeof st->dlpack_cache);
    st->dlpack_cache_next = 0;
    /* The exchange table is a class attribute of the (immutable) Array type: set in
     * its dict before any instance exists, then the type caches are told. */
    PyObject *dict = st->Array_type->tp_dict;
    PyObject *capsule =
        PyCapsule_New((void *)&exchange_api, TACK_DLPACK_CAPSULE_EXCHANGE_API, NULL);
    PyObject *address = PyLong_FromVoidPtr((void *)&exchange_api);
    int rc =
        capsule && address &&
                PyDict_SetItemString(dict, "__dlpack_c_exchange_api__", capsule) == 0 &&
                PyDict_SetItemString(dict, "__c_dlpack_exchange_api__", address) == 0
            ? 0
            : -1;
    Py_XDECREF(capsule);
    Py_XDECREF(address);
    PyType_Modified(st->Array_type);
    return rc;
}

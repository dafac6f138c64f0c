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
    C_STREAM,         /* keyword names of __dlpack__, then of from_dlpack */
    C_MAX_VERSION_NAME,
    C_DL_DEVICE,
    C_COPY,
    C_DEVICE,
    C_DLPACK_DEVICE,         /* "__dlpack_device__" */
    C_KW_MAX_VERSION_STREAM, /* ("max_version", "stream") */
    C_COUNT
};

#define CONST(st, k) PyTuple_GET_ITEM((st)->dlpack_consts, (k))

static tackpy_state *
state_of(PyObject *self)
{
    return tackpy_state_of_type(Py_TYPE(self));
}

/* Keyword-only arguments: matched by identity (interned names), then by value. */
static int
parse_keywords(const char *fname, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames, PyObject *const *names, int n, PyObject **out)
{
    for (int j = 0; j < n; j++) {
        out[j] = NULL;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int j = 0; j < n && found < 0; j++) {
            if (key == names[j]) {
                found = j;
            }
        }
        for (int j = 0; j < n && found < 0; j++) {
            if (PyUnicode_Compare(key, names[j]) == 0) {
                found = j;
            }
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument '%U'", fname, key);
            return -1;
        }
        if (out[found]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'",
                         fname, names[found]);
            return -1;
        }
        out[found] = args[nargs + k];
    }
    return 0;
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
int_pair(PyObject *obj, const char *what, long *a, long *b)
{
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(obj, 0)) ||
        !PyLong_Check(PyTuple_GET_ITEM(obj, 1))) {
        PyErr_Format(PyExc_TypeError, "%s must be None or a tuple of two ints, not %R",
                     what, obj);
        return -1;
    }
    *a = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    if (*a == -1 && PyErr_Occurred()) {
        return -1;
    }
    *b = PyLong_AsLong(PyTuple_GET_ITEM(obj, 1));
    return *b == -1 && PyErr_Occurred() ? -1 : 0;
}

PyObject *
tackpy_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    tackpy_state *st = state_of(self);
    if (nargs) {
        PyErr_SetString(PyExc_TypeError,
                        "__dlpack__() takes keyword arguments only (stream, "
                        "max_version, dl_device, copy)");
        return NULL;
    }
    PyObject *a[4];
    PyObject *const names[4] = {CONST(st, C_STREAM), CONST(st, C_MAX_VERSION_NAME),
                                CONST(st, C_DL_DEVICE), CONST(st, C_COPY)};
    if (parse_keywords("__dlpack__", args, nargs, kwnames, names, 4, a) < 0) {
        return NULL;
    }
    PyObject *stream = a[0], *max_version = a[1], *dl_device = a[2], *copy = a[3];
    tack_array *arr = ARR(self);
    tack_device *own = tack_array_device(arr);
    tack_dlpack_export_options opts = {false, NULL, false, 0, false, 0};
    if (copy && copy != Py_None) {
        if (!PyBool_Check(copy)) {
            PyErr_Format(PyExc_TypeError, "copy must be None, True or False, not %R",
                         copy);
            return NULL;
        }
        opts.copy = copy == Py_True;
    }
    int versioned = 0;
    if (max_version && max_version != Py_None) {
        long major, minor;
        if (int_pair(max_version, "max_version", &major, &minor) < 0) {
            return NULL;
        }
        versioned = major >= 1;
        if (major == 1) {
            opts.limit_minor = true;
            opts.max_minor = minor < 0                  ? 0u
                             : minor > (long)UINT32_MAX ? UINT32_MAX
                                                        : (uint32_t)minor;
        }
    }
    {
        /* The stream rules (Array API meanings per device) live in the runtime. */
        bool given = stream && stream != Py_None;
        long long s = 0;
        if (given) {
            if (!PyLong_Check(stream)) {
                return tackpy_raise_kind(st, TACK_KIND_DLPACK_VALUE,
                                         "stream=%R: pass None or an int", stream);
            }
            s = PyLong_AsLongLong(stream);
            if (s == -1 && PyErr_Occurred()) {
                return NULL;
            }
        }
        tack_status status = tack_dlpack_export_stream(own, given, (int64_t)s, &opts);
        if (status != TACK_OK) {
            return tackpy_raise(st, status);
        }
    }
    tack_device *want = NULL;
    if (dl_device && dl_device != Py_None) {
        long type, id;
        if (int_pair(dl_device, "dl_device", &type, &id) < 0) {
            return NULL;
        }
        if (type != tack_device_dlpack_type(own) || id != tack_device_ordinal(own)) {
            /* Another device: only the host, and only as a copy. */
            tack_status status = TACK_ERR_EXPORT_REFUSED;
            if (type == kDLCPU && id == 0 && opts.copy) {
                status = tack_device_open("cpu", 0, NULL, &want);
            }
            if (status != TACK_OK) {
                return tackpy_raise_kind(
                    st, TACK_KIND_BUFFER,
                    "dl_device=(%ld, %ld): the array is on %s:%d (DLPack (%d, %d)); "
                    "request its own device, or the host (1, 0) with copy=True",
                    type, id, tack_device_backend_name(own), tack_device_ordinal(own),
                    tack_device_dlpack_type(own), tack_device_ordinal(own));
            }
        }
    }
    opts.device = want;
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
    const char *kind;
    switch (tack_status_kind(status)) {
    case TACK_KIND_MEMORY: kind = "MemoryError"; break;
    case TACK_KIND_TYPE:
    case TACK_KIND_DLPACK_TYPE: kind = "TypeError"; break;
    case TACK_KIND_VALUE:
    case TACK_KIND_DLPACK_VALUE: kind = "ValueError"; break;
    default: kind = "RuntimeError"; break;
    }
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
    /* NoSync: the consumer orders its stream after current_work_stream, which is
     * Tack's stream, so the export names that stream and the host does not wait;
     * the buffer is still marked shared, as every export does. */
    tack_dlpack_export_options opts = {false, NULL, false, 0, false, 0};
    opts.stream = tack_device_stream(tack_array_device(ARR(py_object)));
    opts.has_stream = opts.stream != 0;
    tack_status status = tack_dlpack_export_versioned(ARR(py_object), &opts, out);
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

/* The Tack device behind a DLPack device with streams (kDLCUDA, kDLCUDAManaged), or
 * NULL (no streams there, or the device cannot be opened: then the import reports
 * it). Returns: new reference. */
static tack_device *
stream_device(int32_t device_type, int32_t device_id)
{
    if (device_type != kDLCUDA && device_type != kDLCUDAManaged) {
        return NULL;
    }
    tack_device *dev = NULL;
    if (tack_device_open("cuda", device_id, NULL, &dev) != TACK_OK) {
        return NULL;
    }
    return dev;
}

static int
exchange_current_work_stream(DLDeviceType device_type, int32_t device_id,
                             void **out_current_stream)
{
    /* Tack's work on a GPU is queued on its own stream; on the CPU it is synchronous
     * and there is never pending work. */
    tack_device *dev = stream_device((int32_t)device_type, device_id);
    *out_current_stream = dev ? (void *)tack_device_stream(dev) : NULL;
    tack_device_release(dev);
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

/* The major-1 table behind an attribute value, or NULL. */
static const DLPackExchangeAPI *
exchange_table(PyObject *value)
{
    const DLPackExchangeAPIHeader *h = NULL;
    if (PyCapsule_IsValid(value, TACK_DLPACK_CAPSULE_EXCHANGE_API)) {
        h = PyCapsule_GetPointer(value, TACK_DLPACK_CAPSULE_EXCHANGE_API);
    }
    else if (PyLong_Check(value)) {
        h = PyLong_AsVoidPtr(value);
        if (!h) {
            PyErr_Clear();
        }
    }
    /* A newer table may chain to an older one we read. */
    for (int k = 0; h && k < 16; k++, h = h->prev_api) {
        if (h->version.major == 1) {
            const DLPackExchangeAPI *api = (const DLPackExchangeAPI *)h;
            return api->managed_tensor_from_py_object_no_sync ? api : NULL;
        }
    }
    return NULL;
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
        return tackpy_raise_kind(st, TACK_KIND_DLPACK_TYPE,
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
        return tackpy_raise_kind(st, TACK_KIND_DLPACK_VALUE,
                                 "the DLPack capsule was already consumed (its name is "
                                 "'%s'): a capsule can be imported once; ask the "
                                 "producer for a new one",
                                 name);
    }
    else {
        return tackpy_raise_kind(
            st, TACK_KIND_DLPACK_VALUE,
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
 * that Tack could not order its own stream after. On CUDA Tack's stream is made to
 * wait for the producer's current stream (NULL there is the legacy default stream),
 * so nothing is pending; elsewhere Tack has no stream and any producer stream may. */
static int
exchange_pending_work(const DLPackExchangeAPI *api, const DLManagedTensorVersioned *mt)
{
    DLDeviceType type = mt->dl_tensor.device.device_type;
    if (mt->version.major != 1 || type == kDLCPU || type == kDLCUDAHost ||
        type == kDLROCMHost) {
        return 0;
    }
    if (!api->current_work_stream) {
        return 1;
    }
    void *stream = NULL;
    if (api->current_work_stream(type, mt->dl_tensor.device.device_id, &stream) != 0) {
        PyErr_Clear();
        return 1;
    }
    tack_device *dev = stream_device((int32_t)type, mt->dl_tensor.device.device_id);
    if (!dev) {
        return stream != NULL;
    }
    uintptr_t foreign = stream ? (uintptr_t)stream : 1u; /* CU_STREAM_LEGACY */
    tack_status status = tack_device_wait_for_stream(dev, foreign);
    tack_device_release(dev);
    return status != TACK_OK;
}

/* Tack's stream on the device x lives on (from x.__dlpack_device__()), as the int to
 * pass as stream=, or NULL with no error where there is no stream to pass. */
static PyObject *
consumer_stream(tackpy_state *st, PyObject *x)
{
    /* NumPy arrays, the commonest producer, live in host memory: no stream to pass,
     * and the import's hot path is spared a method call. */
    if (strcmp(Py_TYPE(x)->tp_name, "numpy.ndarray") == 0) {
        return NULL;
    }
    PyObject *args[1] = {x};
    PyObject *where = PyObject_VectorcallMethod(
        CONST(st, C_DLPACK_DEVICE), args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
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
    if ((type != kDLCUDA && type != kDLCUDAManaged) || id < 0 || id > INT32_MAX) {
        return NULL; /* the host, or a device without streams here */
    }
    tack_device *dev = stream_device((int32_t)type, (int32_t)id);
    if (!dev) {
        return NULL;
    }
    uintptr_t stream = tack_device_stream(dev);
    tack_device_release(dev);
    /* The legacy default stream when Tack has none of its own (never 0, which the
     * Array API forbids on CUDA). */
    return PyLong_FromUnsignedLongLong(stream ? (unsigned long long)stream : 1ull);
}

/* x.__dlpack__(max_version=(1, 3)), and x.__dlpack__() for a producer that predates
 * DLPack 1.0 and raises TypeError at the keyword. copy is never passed: Tack makes
 * its own copies, so the fallback cannot drop a copy request. */
static PyObject *
request_capsule(tackpy_state *st, PyObject *x)
{
    PyObject *stream = consumer_stream(st, x);
    if (!stream && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *capsule;
    if (stream) {
        /* A producer on a device with streams orders its pending writes before
         * Tack's stream (the Array API's consumer rule): without stream= it may
         * assume the legacy default stream, which Tack's stream does not follow. */
        PyObject *args[3] = {x, CONST(st, C_MAX_VERSION), stream};
        capsule = PyObject_VectorcallMethod(CONST(st, C_DLPACK), args,
                                            1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                            CONST(st, C_KW_MAX_VERSION_STREAM));
        Py_DECREF(stream);
    }
    else {
        PyObject *args[2] = {x, CONST(st, C_MAX_VERSION)};
        capsule = PyObject_VectorcallMethod(CONST(st, C_DLPACK), args,
                                            1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                            CONST(st, C_KW_MAX_VERSION));
    }
    PyObject *args[2] = {x, NULL};
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
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError,
                     "from_dlpack() takes exactly one positional argument (%zd given)",
                     nargs);
        return NULL;
    }
    PyObject *x = args[0];
    PyObject *a[2] = {NULL, NULL};
    if (kwnames) {
        PyObject *const names[2] = {CONST(st, C_DEVICE), CONST(st, C_COPY)};
        if (parse_keywords("from_dlpack", args, nargs, kwnames, names, 2, a) < 0) {
            return NULL;
        }
    }
    tack_dlpack_import_options opts = {NULL, TACK_DLPACK_COPY_NEVER};
    if (a[1] == Py_True) {
        opts.copy = TACK_DLPACK_COPY_ALWAYS;
    }
    else if (a[1] == Py_None) {
        opts.copy = TACK_DLPACK_COPY_IF_NEEDED;
    }
    else if (a[1] && a[1] != Py_False) {
        PyErr_Format(PyExc_TypeError, "copy must be None, True or False, not %R", a[1]);
        return NULL;
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
                tackpy_raise_kind(st, TACK_KIND_DLPACK_VALUE,
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
    if (!capsule && PyErr_ExceptionMatches(PyExc_AttributeError) &&
        !PyObject_HasAttr(x, CONST(st, C_DLPACK))) {
        /* An object that speaks only the CUDA Array Interface (Numba, older
         * libraries): wrapped without a copy, docs/cuda.md. */
        PyObject *cai = PyObject_GetAttrString(x, "__cuda_array_interface__");
        if (cai) {
            PyErr_Clear();
            result = tackpy_from_cuda_array_interface(st, x, cai, opts.device);
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
        Py_DECREF(capsule);
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

static void
release_pybuffer(void *ctx)
{
    pybuffer_hold *hold = ctx;
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
        PyErr_Clear();
        /* Tell a read-only exporter apart from one that is not C-contiguous. */
        Py_buffer probe;
        int readable = PyObject_GetBuffer(obj, &probe, PyBUF_C_CONTIGUOUS) == 0;
        if (readable) {
            PyBuffer_Release(&probe);
        }
        PyErr_Clear();
        return tackpy_raise_kind(
            st, TACK_KIND_VALUE,
            readable ? "writable=True, but the %.100s's memory is read-only: pass "
                       "writable=False"
                     : "the %.100s's memory is not one C-contiguous block: wrap a "
                       "C-contiguous object, or copy it with tack.array",
            Py_TYPE(obj)->tp_name);
    }
    size_t nelem = 0;
    size_t itemsize = tack_dtype_get(dtype)->itemsize;
    tack_status status = tack_shape_size(ndim, shape, itemsize, &nelem);
    Py_ssize_t have = hold->view.len;
    if (status == TACK_OK && nelem * itemsize > (size_t)have) {
        PyBuffer_Release(&hold->view);
        PyMem_RawFree(hold);
        return tackpy_raise_kind(st, TACK_KIND_VALUE,
                                 "the shape and dtype need %zu bytes but the %.100s "
                                 "holds %zd: give a shape and dtype that describe its "
                                 "memory",
                                 nelem * itemsize, Py_TYPE(obj)->tp_name, have);
    }
    tack_array *arr;
    if (status == TACK_OK) {
        /* Consumes the hold on every path. */
        status = tack_array_wrap_memory(dev, hold->view.buf, dtype, ndim, shape,
                                        writable, release_pybuffer, hold, &arr);
    }
    else {
        PyBuffer_Release(&hold->view);
        PyMem_RawFree(hold);
    }
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
    static const char *const names[] = {"ptr", "shape", "dtype", "writable"};
    PyObject *a[4] = {NULL, NULL, NULL, NULL};
    if (nargs > 4) {
        PyErr_Format(
            PyExc_TypeError,
            "array_from_ptr() takes at most 4 positional arguments (%zd given)", nargs);
        return NULL;
    }
    /* shape and dtype may come in either order: the second and third positionals
     * go by their type (a shape is an int or a sequence, anything else a dtype). */
    for (Py_ssize_t k = 0; k < nargs; k++) {
        int slot = (int)k;
        if (k == 1 || k == 2) {
            slot = shape_like(args[k]) ? 1 : 2;
        }
        if (a[slot]) {
            PyErr_Format(PyExc_TypeError,
                         "array_from_ptr() got two %ss: pass one shape and one dtype",
                         names[slot]);
            return NULL;
        }
        a[slot] = args[k];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int slot = -1;
        for (int j = 0; j < 4 && slot < 0; j++) {
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) {
                slot = j;
            }
        }
        if (slot < 0) {
            PyErr_Format(PyExc_TypeError,
                         "array_from_ptr() got an unexpected keyword argument '%U'",
                         key);
            return NULL;
        }
        if (a[slot]) {
            PyErr_Format(PyExc_TypeError,
                         "array_from_ptr() got multiple values for argument '%s'",
                         names[slot]);
            return NULL;
        }
        a[slot] = args[nargs + k];
    }
    if (!a[0] || !a[1] || !a[2]) {
        PyErr_SetString(PyExc_TypeError, "array_from_ptr() needs ptr, shape and dtype");
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
    if (PyLong_Check(a[0])) {
        unsigned long long address = PyLong_AsUnsignedLongLong(a[0]);
        if (address == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            tack_device_release(dev);
            return tackpy_raise_kind(st, TACK_KIND_VALUE,
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
        result = tackpy_raise_kind(st, TACK_KIND_TYPE,
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
    static const char *const strings[] = {"__dlpack__",
                                          "max_version",
                                          NULL,
                                          "__dlpack_c_exchange_api__",
                                          "__c_dlpack_exchange_api__",
                                          "stream",
                                          "max_version",
                                          "dl_device",
                                          "copy",
                                          "device",
                                          "__dlpack_device__",
                                          NULL};
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
        items[C_KW_MAX_VERSION_STREAM] =
            PyTuple_Pack(2, items[C_MAX_VERSION_NAME], items[C_STREAM]);
        ok = items[C_KW_MAX_VERSION] && items[C_MAX_VERSION] &&
             items[C_KW_MAX_VERSION_STREAM];
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

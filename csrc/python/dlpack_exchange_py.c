/*
 * dlpack_exchange_py.c: the DLPack C exchange API (DLPack 1.2/1.3) from both sides:
 * the table Tack publishes on tack.Array for C-level consumers, and the lookup of
 * other types' tables when Tack consumes. The rules of what an address may be are
 * the runtime's (tack_dlpack_exchange_api_find); the table's functions convert and
 * call the runtime.
 */
#include "tackpy.h"
#include <string.h>

#define ARR(self) TACKPY_ARR(self)

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

static int
exchange_current_work_stream(DLDeviceType device_type, int32_t device_id,
                             void **out_current_stream)
{
    /* Tack's work on a GPU is queued on its own stream; on the CPU it is synchronous
     * and there is never pending work. */
    tack_device *dev = tack_dlpack_stream_device((int32_t)device_type, device_id);
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

/* Whether a type's arrays are immutable by contract, so that memory shared with them
 * must not be written whatever their tensor says: a JAX array (jax.Array has no
 * in-place update, and JAX exports only legacy capsules, which cannot carry READ_ONLY).
 * Recognised without importing JAX: a class named Array or ArrayImpl from the
 * jaxlib or jax packages in type(x)'s MRO (jaxlib._jax.ArrayImpl, whose base is
 * jax.jaxlib._jax.Array). The answer is cached with the type's exchange table
 * (tackpy_exchange_api_of): a change to the type's __module__ or bases gives it a
 * new version tag, which asks again. Errors while asking mean no. */
static bool
immutable_producer(PyTypeObject *type)
{
    PyObject *mro = type->tp_mro;
    bool found = false;
    for (Py_ssize_t k = 0; mro && !found && k < PyTuple_GET_SIZE(mro); k++) {
        PyTypeObject *tp = (PyTypeObject *)PyTuple_GET_ITEM(mro, k); /* held by mro */
        const char *dot = strrchr(tp->tp_name, '.');
        const char *n = dot ? dot + 1 : tp->tp_name;
        if (strcmp(n, "Array") != 0 && strcmp(n, "ArrayImpl") != 0) {
            continue;
        }
        PyObject *mod = PyObject_GetAttrString((PyObject *)tp, "__module__");
        const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
        found = m && (strncmp(m, "jaxlib.", 7) == 0 || strncmp(m, "jax.", 4) == 0 ||
                      strcmp(m, "jaxlib") == 0 || strcmp(m, "jax") == 0);
        Py_XDECREF(mod);
        PyErr_Clear();
    }
    return found;
}

/* Whether a producer type's arrays live in host memory only. Only NumPy's ndarray
 * is known to: another type may hold device memory (a JAX or PyTorch array of one
 * type lives on the CPU or on a GPU), so its device is asked at every import. By
 * name, so that no NumPy import is needed. */
static bool
host_only_producer(PyTypeObject *type)
{
    return strcmp(type->tp_name, "numpy.ndarray") == 0;
}

/* The exchange table of a producer type, or NULL, in *immutable whether its arrays
 * are immutable by contract, in *host_only whether they live in host memory only and
 * in *numpy_direct whether they can be read through their fields; cached per (type,
 * version tag), so a type that changes its attributes is looked up again. */
const DLPackExchangeAPI *
tackpy_exchange_api_of(tackpy_state *st, PyTypeObject *tp, bool *immutable,
                       bool *host_only, bool *numpy_direct)
{
    for (int k = 0; k < TACKPY_EXCHANGE_CACHE; k++) {
        tackpy_exchange_cache *c = &st->dlpack_cache[k];
        if (c->type == tp && c->tag == tp->tp_version_tag && c->tag != 0) {
            *immutable = c->immutable;
            *host_only = c->host_only;
            *numpy_direct = c->numpy_direct;
            return c->api;
        }
    }
    const DLPackExchangeAPI *api = NULL;
    /* The capsule form first: its name is checked, an int is only plausible. */
    PyObject *const names[2] = {st->names[TACKPY_NAME___dlpack_c_exchange_api__],
                                st->names[TACKPY_NAME___c_dlpack_exchange_api__]};
    for (int k = 0; k < 2 && !api; k++) {
        PyObject *value = PyObject_GetAttr((PyObject *)tp, names[k]);
        if (!value) {
            PyErr_Clear();
            continue;
        }
        api = exchange_table(value);
        Py_DECREF(value);
    }
    *immutable = immutable_producer(tp);
    *host_only = host_only_producer(tp);
    *numpy_direct = *host_only && !api && tackpy_numpy_direct_type(tp);
    /* The lookups gave the type a version tag if it can have one. A tag is never
     * reused by another type, so a borrowed type pointer is safe as a key. */
    tackpy_exchange_cache *c = &st->dlpack_cache[st->dlpack_cache_next];
    st->dlpack_cache_next = (st->dlpack_cache_next + 1) % TACKPY_EXCHANGE_CACHE;
    c->type = tp;
    c->tag = tp->tp_version_tag;
    c->api = api;
    c->immutable = *immutable;
    c->host_only = *host_only;
    c->numpy_direct = *numpy_direct;
    return api;
}

/* The runtime's rule (tack_dlpack_exchange_pending_work); a Python producer's
 * current_work_stream that failed may have left its exception set, which this
 * import does not report: __dlpack__ is asked instead. */
int
tackpy_exchange_pending_work(const DLPackExchangeAPI *api,
                             const DLManagedTensorVersioned *mt)
{
    bool pending = tack_dlpack_exchange_pending_work(api, mt);
    if (pending) {
        PyErr_Clear();
    }
    return pending;
}

int
tackpy_exchange_init(PyObject *module, tackpy_state *st)
{
    (void)module;
    memset(st->dlpack_cache, 0, sizeof st->dlpack_cache);
    st->dlpack_cache_next = 0;
    /* Both forms are class attributes of tack.Array, set while the type is still
     * mutable (module.c freezes it afterwards). */
    PyObject *capsule =
        PyCapsule_New((void *)&exchange_api, TACK_DLPACK_CAPSULE_EXCHANGE_API, NULL);
    PyObject *address = PyLong_FromVoidPtr((void *)&exchange_api);
    PyObject *type = (PyObject *)st->Array_type;
    int rc =
        capsule && address &&
                PyObject_SetAttr(type, st->names[TACKPY_NAME___dlpack_c_exchange_api__],
                                 capsule) == 0 &&
                PyObject_SetAttr(type, st->names[TACKPY_NAME___c_dlpack_exchange_api__],
                                 address) == 0
            ? 0
            : -1;
    Py_XDECREF(capsule);
    Py_XDECREF(address);
    return rc;
}

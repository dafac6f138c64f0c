/*
 * counting_producer.c: a test-only DLPack producer and consumer, built by the test
 * session with the system C compiler (tests/python/producer/__init__.py).
 *
 * It is a real DLPack library of its own, independent of Tack's headers (its structs
 * are a second transcription of the standard): it makes legacy and versioned
 * capsules, well-formed or malformed in any field, whose deleter counts its calls;
 * it adopts capsules the way a consumer does and calls their deleters later, on
 * another thread or after the interpreter has finalized; and it drives a producer's
 * DLPack C exchange table from C. A type, Exchanger, publishes an exchange table of
 * its own, so a consumer's use of such tables can be observed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack_abi.h"

/* ---- counting tensors ---------------------------------------------------------- */

static atomic_long made, deleted;

/* One malloc block per tensor: the managed struct, shape, strides and the data. */
typedef struct {
    Versioned v;
    Legacy l;
    int64_t shape[80], strides[80];
    _Alignas(64) unsigned char data[];
} Block;

static void
delete_versioned(Versioned *self)
{
    atomic_fetch_add(&deleted, 1);
    free(self->ctx);
}

static void
delete_legacy(Legacy *self)
{
    atomic_fetch_add(&deleted, 1);
    free(self->ctx);
}

static void
capsule_destructor(PyObject *capsule)
{
    /* The standard destructor: do nothing once a consumer renamed the capsule. */
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        Versioned *v = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (v->deleter) {
            v->deleter(v);
        }
    }
    else if (PyCapsule_IsValid(capsule, "dltensor")) {
        Legacy *l = PyCapsule_GetPointer(capsule, "dltensor");
        if (l->deleter) {
            l->deleter(l);
        }
    }
}

/* Element k of the data holds the value k in the tensor's own dtype. */
static void
fill(unsigned char *data, size_t nbytes, DType dt)
{
    size_t isz = dt.bits / 8u;
    if (isz == 0 || dt.lanes != 1) {
        return;
    }
    for (size_t k = 0; (k + 1) * isz <= nbytes; k++) {
        unsigned char *p = data + k * isz;
        if (dt.code == 2 && dt.bits == 32) {
            float f = (float)k;
            memcpy(p, &f, 4);
        }
        else if (dt.code == 2 && dt.bits == 64) {
            double d = (double)k;
            memcpy(p, &d, 8);
        }
        else if (dt.code <= 1 || dt.code == 6) {
            uint64_t u = dt.code == 6 ? (k & 1) : k;
            memcpy(p, &u, isz); /* little-endian */
        }
    }
}

static int
read_ints(PyObject *seq, int64_t *out, Py_ssize_t cap, Py_ssize_t *n)
{
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of ints");
    if (!fast) {
        return -1;
    }
    *n = PySequence_Fast_GET_SIZE(fast);
    if (*n > cap) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "too many entries");
        return -1;
    }
    for (Py_ssize_t k = 0; k < *n; k++) {
        out[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, k));
        if (out[k] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* make(shape, *, versioned=True, strides=None, code=2, bits=32, lanes=1,
 *      device_type=1, device_id=0, byte_offset=0, flags=0, major=1, minor=3,
 *      ndim=None, null_data=False, null_shape=False, null_deleter=False,
 *      nbytes=None, name=None) -> capsule */
static PyObject *
make(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kw[] = {"shape",       "versioned", "strides",     "code",
                         "bits",        "lanes",     "device_type", "device_id",
                         "byte_offset", "flags",     "major",       "minor",
                         "ndim",        "null_data", "null_shape",  "null_deleter",
                         "nbytes",      "name",      NULL};
    PyObject *shape_obj, *strides_obj = Py_None, *ndim_obj = Py_None;
    PyObject *nbytes_obj = Py_None;
    int versioned = 1, code = 2, bits = 32, lanes = 1, device_type = 1, device_id = 0;
    unsigned long long byte_offset = 0, flags = 0;
    unsigned int major = 1, minor = 3;
    int null_data = 0, null_shape = 0, null_deleter = 0;
    const char *name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$pOiiiiiKKIIOpppOz", kw,
                                     &shape_obj, &versioned, &strides_obj, &code, &bits,
                                     &lanes, &device_type, &device_id, &byte_offset,
                                     &flags, &major, &minor, &ndim_obj, &null_data,
                                     &null_shape, &null_deleter, &nbytes_obj, &name)) {
        return NULL;
    }
    int64_t shape[80], strides[80];
    Py_ssize_t ndim, nstrides = 0;
    if (read_ints(shape_obj, shape, 80, &ndim) < 0) {
        return NULL;
    }
    if (strides_obj != Py_None && read_ints(strides_obj, strides, 80, &nstrides) < 0) {
        return NULL;
    }
    size_t nbytes = 4096;
    if (nbytes_obj != Py_None) {
        nbytes = PyLong_AsSize_t(nbytes_obj);
        if (nbytes == (size_t)-1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    Block *b = calloc(1, sizeof *b + nbytes + 64);
    if (!b) {
        return PyErr_NoMemory();
    }
    DType dt = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes};
    fill(b->data, nbytes, dt);
    memcpy(b->shape, shape, (size_t)ndim * sizeof(int64_t));
    memcpy(b->strides, strides, (size_t)nstrides * sizeof(int64_t));
    Tensor t;
    memset(&t, 0, sizeof t);
    t.data = null_data ? NULL : b->data;
    t.device.device_type = device_type;
    t.device.device_id = device_id;
    t.ndim = ndim_obj == Py_None ? (int32_t)ndim : (int32_t)PyLong_AsLong(ndim_obj);
    t.dtype = dt;
    t.shape = null_shape ? NULL : b->shape;
    t.strides = strides_obj == Py_None ? NULL : b->strides;
    t.byte_offset = byte_offset;
    void *managed;
    if (versioned) {
        b->v.version.major = major;
        b->v.version.minor = minor;
        b->v.ctx = b;
        b->v.deleter = null_deleter ? NULL : delete_versioned;
        b->v.flags = flags;
        b->v.t = t;
        managed = &b->v;
    }
    else {
        b->l.t = t;
        b->l.ctx = b;
        b->l.deleter = null_deleter ? NULL : delete_legacy;
        managed = &b->l;
    }
    if (!name) {
        name = versioned ? "dltensor_versioned" : "dltensor";
    }
    else {
        /* Capsule names must outlive the capsule: keep only the known ones. */
        static const char *const known[] = {"used_dltensor", "used_dltensor_versioned",
                                            "something_else"};
        const char *n = NULL;
        for (size_t k = 0; k < 3; k++) {
            if (strcmp(name, known[k]) == 0) {
                n = known[k];
            }
        }
        if (!n) {
            free(b);
            PyErr_SetString(PyExc_ValueError, "unknown capsule name");
            return NULL;
        }
        name = n;
    }
    PyObject *capsule = PyCapsule_New(managed, name, capsule_destructor);
    if (!capsule) {
        free(b);
        return NULL;
    }
    if (!null_deleter) {
        atomic_fetch_add(&made, 1);
    }
    return capsule;
}

static PyObject *
counts(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return Py_BuildValue("(ll)", (long)atomic_load(&made), (long)atomic_load(&deleted));
}

/* ---- consuming capsules (another library's side of a Tack export) ---------------- */

typedef struct {
    void *managed;
    int versioned;
} Adopted;

static Versioned *
versioned_of(Adopted *a)
{
    return a->versioned ? a->managed : NULL;
}

static void
call_deleter(Adopted *a)
{
    if (a->versioned) {
        Versioned *v = a->managed;
        if (v->deleter) {
            v->deleter(v);
        }
    }
    else {
        Legacy *l = a->managed;
        if (l->deleter) {
            l->deleter(l);
        }
    }
    free(a);
}

/* adopt(capsule) -> int handle: renames the capsule as a consumer does. */
static PyObject *
adopt(PyObject *module, PyObject *capsule)
{
    (void)module;
    Adopted *a = malloc(sizeof *a);
    if (!a) {
        return PyErr_NoMemory();
    }
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        a->managed = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        a->versioned = 1;
        PyCapsule_SetName(capsule, "used_dltensor_versioned");
    }
    else if (PyCapsule_IsValid(capsule, "dltensor")) {
        a->managed = PyCapsule_GetPointer(capsule, "dltensor");
        a->versioned = 0;
        PyCapsule_SetName(capsule, "used_dltensor");
    }
    else {
        free(a);
        PyErr_SetString(PyExc_ValueError, "not an unconsumed DLPack capsule");
        return NULL;
    }
    return PyLong_FromVoidPtr(a);
}

/* inspect(capsule_or_handle) -> dict of the managed tensor's fields. */
static PyObject *
describe(const Tensor *t, const Versioned *v)
{
    PyObject *shape = PyTuple_New(t->ndim > 0 ? t->ndim : 0);
    PyObject *strides =
        t->strides ? PyTuple_New(t->ndim > 0 ? t->ndim : 0) : Py_NewRef(Py_None);
    for (int32_t k = 0; k < t->ndim; k++) {
        PyTuple_SET_ITEM(shape, k, PyLong_FromLongLong(t->shape[k]));
        if (t->strides) {
            PyTuple_SET_ITEM(strides, k, PyLong_FromLongLong(t->strides[k]));
        }
    }
    PyObject *d = Py_BuildValue(
        "{s:K,s:(ii),s:i,s:(iii),s:N,s:N,s:K,s:N,s:O,s:K}", "data",
        (unsigned long long)(uintptr_t)t->data, "device", t->device.device_type,
        t->device.device_id, "ndim", t->ndim, "dtype", t->dtype.code, t->dtype.bits,
        t->dtype.lanes, "shape", shape, "strides", strides, "byte_offset",
        (unsigned long long)t->byte_offset, "version",
        v ? Py_BuildValue("(II)", v->version.major, v->version.minor)
          : Py_NewRef(Py_None),
        "shape_is_null", t->shape ? Py_False : Py_True, "flags",
        v ? (unsigned long long)v->flags : 0ULL);
    return d;
}

static PyObject *
inspect_handle(PyObject *module, PyObject *handle)
{
    (void)module;
    Adopted *a = PyLong_AsVoidPtr(handle);
    if (!a) {
        return NULL;
    }
    Versioned *v = versioned_of(a);
    return describe(v ? &v->t : &((Legacy *)a->managed)->t, v);
}

static PyObject *
delete_now(PyObject *module, PyObject *handle)
{
    (void)module;
    Adopted *a = PyLong_AsVoidPtr(handle);
    if (!a) {
        return NULL;
    }
    call_deleter(a);
    Py_RETURN_NONE;
}

static void *
thread_main(void *arg)
{
    call_deleter(arg);
    return NULL;
}

/* Calls the deleter on a new thread that never holds the GIL, and waits for it with
 * the GIL released. */
static PyObject *
delete_in_thread(PyObject *module, PyObject *handle)
{
    (void)module;
    Adopted *a = PyLong_AsVoidPtr(handle);
    if (!a) {
        return NULL;
    }
    pthread_t th;
    int rc;
    Py_BEGIN_ALLOW_THREADS
        rc = pthread_create(&th, NULL, thread_main, a);
        if (rc == 0) {
            pthread_join(th, NULL);
        }
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_create failed");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Deleters called by a C atexit handler, after Py_Finalize has run. */
static Adopted *at_exit[64];
static int n_at_exit;

static void
run_at_exit(void)
{
    for (int k = 0; k < n_at_exit; k++) {
        call_deleter(at_exit[k]);
    }
    /* Proof for the test that this ran after finalization without crashing. */
    const char *msg = "counting_producer: deleters ran after finalization\n";
    fwrite(msg, 1, strlen(msg), stderr);
}

static PyObject *
delete_at_exit(PyObject *module, PyObject *handle)
{
    (void)module;
    Adopted *a = PyLong_AsVoidPtr(handle);
    if (!a) {
        return NULL;
    }
    if (n_at_exit == 0) {
        atexit(run_at_exit);
    }
    if (n_at_exit == 64) {
        PyErr_SetString(PyExc_RuntimeError, "too many");
        return NULL;
    }
    at_exit[n_at_exit++] = a;
    Py_RETURN_NONE;
}

/* ---- driving a producer's exchange table from C ------------------------------------
 */

static const ExchangeAPI *
table_of(PyObject *obj)
{
    PyObject *cap =
        PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__dlpack_c_exchange_api__");
    if (!cap) {
        return NULL;
    }
    const ExchangeAPI *api = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    Py_DECREF(cap);
    if (api && api->header.version.major != 1) {
        PyErr_SetString(PyExc_RuntimeError, "exchange table major version is not 1");
        return NULL;
    }
    return api;
}

/* exchange_export(obj) -> dict: from_py, inspect, then the deleter. */
static PyObject *
exchange_export(PyObject *module, PyObject *obj)
{
    (void)module;
    const ExchangeAPI *api = table_of(obj);
    if (!api) {
        return NULL;
    }
    Versioned *v = NULL;
    if (api->from_py(obj, &v) != 0) {
        return NULL;
    }
    PyObject *d = describe(&v->t, v);
    v->deleter(v);
    return d;
}

/* exchange_view(obj) -> dict: dltensor_from_py (no ownership). */
static PyObject *
exchange_view(PyObject *module, PyObject *obj)
{
    (void)module;
    const ExchangeAPI *api = table_of(obj);
    if (!api) {
        return NULL;
    }
    if (!api->dltensor_from_py) {
        PyErr_SetString(PyExc_RuntimeError, "no dltensor_from_py_object_no_sync");
        return NULL;
    }
    Tensor t;
    if (api->dltensor_from_py(obj, &t) != 0) {
        return NULL;
    }
    return describe(&t, NULL);
}

/* exchange_roundtrip(obj) -> a new object of obj's type over the same memory. */
static PyObject *
exchange_roundtrip(PyObject *module, PyObject *obj)
{
    (void)module;
    const ExchangeAPI *api = table_of(obj);
    if (!api) {
        return NULL;
    }
    Versioned *v = NULL;
    if (api->from_py(obj, &v) != 0) {
        return NULL;
    }
    void *out = NULL;
    if (api->to_py(v, &out) != 0) { /* steals v */
        return NULL;
    }
    return out;
}

/* exchange_to_py(obj, capsule) -> obj's type's to_py on a capsule of ours. */
static PyObject *
exchange_to_py(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *obj, *capsule;
    if (!PyArg_ParseTuple(args, "OO", &obj, &capsule)) {
        return NULL;
    }
    const ExchangeAPI *api = table_of(obj);
    if (!api) {
        return NULL;
    }
    Versioned *v = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (!v) {
        return NULL;
    }
    PyCapsule_SetName(capsule, "used_dltensor_versioned");
    void *out = NULL;
    if (api->to_py(v, &out) != 0) {
        return NULL;
    }
    return out;
}

static char alloc_error[256];
static void
set_error(void *ctx, const char *kind, const char *message)
{
    (void)ctx;
    snprintf(alloc_error, sizeof alloc_error, "%s: %s", kind, message);
}

/* exchange_allocate(obj, shape, code, bits, device_type) -> dict or error text;
 * the allocation is released again through its deleter. */
static PyObject *
exchange_allocate(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *obj, *shape_obj;
    int code, bits, device_type;
    if (!PyArg_ParseTuple(args, "OOiii", &obj, &shape_obj, &code, &bits,
                          &device_type)) {
        return NULL;
    }
    const ExchangeAPI *api = table_of(obj);
    if (!api) {
        return NULL;
    }
    int64_t shape[80];
    Py_ssize_t ndim;
    if (read_ints(shape_obj, shape, 80, &ndim) < 0) {
        return NULL;
    }
    Tensor proto;
    memset(&proto, 0, sizeof proto);
    proto.device.device_type = device_type;
    proto.ndim = (int32_t)ndim;
    proto.dtype.code = (uint8_t)code;
    proto.dtype.bits = (uint8_t)bits;
    proto.dtype.lanes = 1;
    proto.shape = shape;
    Versioned *v = NULL;
    alloc_error[0] = '\0';
    if (api->allocator(&proto, &v, NULL, set_error) != 0) {
        return PyUnicode_FromString(alloc_error);
    }
    PyObject *d = describe(&v->t, v);
    v->deleter(v);
    return d;
}

static PyObject *
exchange_stream(PyObject *module, PyObject *obj)
{
    (void)module;
    const ExchangeAPI *api = table_of(obj);
    if (!api) {
        return NULL;
    }
    void *stream = (void *)1;
    if (api->current_work_stream(1, 0, &stream) != 0) {
        return NULL;
    }
    return PyLong_FromVoidPtr(stream);
}

/* ---- Exchanger: a type that publishes an exchange table of its own -----------------
 */

static atomic_long exchanger_from_py_calls, exchanger_dlpack_calls;

typedef struct {
    PyObject_HEAD long n;
} Exchanger;

static Versioned *
exchanger_tensor(long n)
{
    Block *b = calloc(1, sizeof *b + (size_t)n * 4 + 64);
    if (!b) {
        return NULL;
    }
    DType dt = {2, 32, 1};
    fill(b->data, (size_t)n * 4, dt);
    b->shape[0] = n;
    b->strides[0] = 1;
    b->v.version.major = 1;
    b->v.version.minor = 3;
    b->v.ctx = b;
    b->v.deleter = delete_versioned;
    b->v.t.data = b->data;
    b->v.t.device.device_type = 1;
    b->v.t.ndim = 1;
    b->v.t.dtype = dt;
    b->v.t.shape = b->shape;
    b->v.t.strides = b->strides;
    atomic_fetch_add(&made, 1);
    return &b->v;
}

static int
exchanger_from_py(void *obj, Versioned **out)
{
    atomic_fetch_add(&exchanger_from_py_calls, 1);
    *out = exchanger_tensor(((Exchanger *)obj)->n);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int
exchanger_stream(int32_t type, int32_t id, void **out)
{
    (void)type;
    (void)id;
    *out = NULL;
    return 0;
}

static ExchangeAPI exchanger_v1 = {{{1, 3}, NULL}, NULL, exchanger_from_py,
                                   NULL,           NULL, exchanger_stream};
/* A future major version chaining back to the 1.x table. */
static ExchangeAPI exchanger_v2 = {
    {{2, 0}, &exchanger_v1.header}, NULL, NULL, NULL, NULL, NULL};
/* A table with no usable major version at all. */
static ExchangeAPI exchanger_v9 = {{{9, 0}, NULL}, NULL, NULL, NULL, NULL, NULL};

static PyObject *
exchanger_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    long n = 8;
    static char *kw[] = {"n", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|l", kw, &n)) {
        return NULL;
    }
    Exchanger *self = (Exchanger *)type->tp_alloc(type, 0);
    if (self) {
        self->n = n;
    }
    return (PyObject *)self;
}

static PyObject *
exchanger_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    atomic_fetch_add(&exchanger_dlpack_calls, 1);
    Versioned *v = exchanger_tensor(((Exchanger *)self)->n);
    if (!v) {
        return PyErr_NoMemory();
    }
    return PyCapsule_New(v, "dltensor_versioned", capsule_destructor);
}

static PyObject *
exchanger_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("(ii)", 1, 0);
}

static PyMethodDef exchanger_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))exchanger_dlpack,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"__dlpack_device__", exchanger_dlpack_device, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot exchanger_slots[] = {
    {Py_tp_new, exchanger_new},
    {Py_tp_methods, exchanger_methods},
    {0, NULL},
};

static PyType_Spec exchanger_spec = {"counting_producer.Exchanger", sizeof(Exchanger),
                                     0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
                                     exchanger_slots};

/* set_exchange_mode(mode): which table Exchanger publishes: "v13" (a 1.3 capsule),
 * "chain" (a 2.0 capsule chaining to 1.3), "int12" (the 1.2 int attribute), "v9"
 * (no usable major) or "none". */
static PyObject *
set_exchange_mode(PyObject *module, PyObject *mode_obj)
{
    PyObject *type = PyObject_GetAttrString(module, "Exchanger");
    if (!type) {
        return NULL;
    }
    const char *mode = PyUnicode_AsUTF8(mode_obj);
    if (!mode) {
        Py_DECREF(type);
        return NULL;
    }
    const char *names[] = {"__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"};
    for (int k = 0; k < 2; k++) {
        if (PyObject_HasAttrString(type, names[k]) &&
            PyObject_DelAttrString(type, names[k]) < 0) {
            Py_DECREF(type);
            return NULL;
        }
    }
    int rc = 0;
    ExchangeAPI *api = strcmp(mode, "chain") == 0 ? &exchanger_v2
                       : strcmp(mode, "v9") == 0  ? &exchanger_v9
                                                  : &exchanger_v1;
    if (strcmp(mode, "int12") == 0) {
        PyObject *address = PyLong_FromVoidPtr(api);
        rc = address ? PyObject_SetAttrString(type, names[1], address) : -1;
        Py_XDECREF(address);
    }
    else if (strcmp(mode, "none") != 0) {
        PyObject *cap = PyCapsule_New(api, "dlpack_exchange_api", NULL);
        rc = cap ? PyObject_SetAttrString(type, names[0], cap) : -1;
        Py_XDECREF(cap);
    }
    Py_DECREF(type);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
exchanger_calls(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return Py_BuildValue("(ll)", (long)atomic_load(&exchanger_from_py_calls),
                         (long)atomic_load(&exchanger_dlpack_calls));
}

static PyMethodDef methods[] = {
    {"make", (PyCFunction)(void (*)(void))make, METH_VARARGS | METH_KEYWORDS, NULL},
    {"counts", counts, METH_NOARGS, NULL},
    {"adopt", adopt, METH_O, NULL},
    {"inspect", inspect_handle, METH_O, NULL},
    {"delete_now", delete_now, METH_O, NULL},
    {"delete_in_thread", delete_in_thread, METH_O, NULL},
    {"delete_at_exit", delete_at_exit, METH_O, NULL},
    {"exchange_export", exchange_export, METH_O, NULL},
    {"exchange_view", exchange_view, METH_O, NULL},
    {"exchange_roundtrip", exchange_roundtrip, METH_O, NULL},
    {"exchange_to_py", exchange_to_py, METH_VARARGS, NULL},
    {"exchange_allocate", exchange_allocate, METH_VARARGS, NULL},
    {"exchange_stream", exchange_stream, METH_O, NULL},
    {"set_exchange_mode", set_exchange_mode, METH_O, NULL},
    {"exchanger_calls", exchanger_calls, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "counting_producer",
                                        NULL, -1, methods};

PyMODINIT_FUNC PyInit_counting_producer(void);

PyMODINIT_FUNC
PyInit_counting_producer(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m) {
        return NULL;
    }
    PyObject *type = PyType_FromSpec(&exchanger_spec);
    if (!type || PyModule_AddObject(m, "Exchanger", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

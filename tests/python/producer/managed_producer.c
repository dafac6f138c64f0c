/*
 * managed_producer.c: a test-only DLPack producer of CUDA managed memory, built by the
 * test session with the system C compiler (tests/python/producer/__init__.py).
 *
 * It is a CUDA library of its own, as PyTorch or CuPy would be: it opens the driver
 * named by TACK_CUDA_DRIVER (the strict stand-in) or libcuda.so.1, works in each
 * device's primary context, allocates with cuMemAllocManaged (or cuMemAlloc, for
 * ordinary device memory, or cuMemHostAlloc, for page-locked host memory), writes on
 * a stream of its own, and hands the memory out as
 * kDLCUDAManaged (or any other device type) DLPack capsules, legacy or versioned,
 * whose deleter frees the memory through the driver and counts its calls. Managed
 * and pinned memory are reachable from the host, so Python fills them through the
 * address.
 *
 * The driver's types are declared here, independent of Tack's own transcription.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack_abi.h"

/* ---- the driver, as cuda.h declares it ------------------------------------------ */

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent;

#define MAX_DEVICES 8
#define CU_MEM_ATTACH_GLOBAL 1u
#define CU_MEMHOSTALLOC_PORTABLE 1u
#define CU_STREAM_NON_BLOCKING 1u
#define CU_EVENT_DISABLE_TIMING 2u

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(int *, int);
    CUresult (*retain)(CUcontext *, int);
    CUresult (*push)(CUcontext);
    CUresult (*pop)(CUcontext *);
    CUresult (*alloc_managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*memset32)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*event_create)(CUevent *, unsigned);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*stream_wait)(CUstream, CUevent, unsigned);
    CUresult (*stream_sync)(CUstream);
    CUresult (*host_alloc)(void **, size_t, unsigned);
    CUresult (*free_host)(void *);
} cu;

/* Per device: the primary context, the producer's own stream and one event. */
static CUcontext contexts[MAX_DEVICES];
static CUstream streams[MAX_DEVICES];
static CUevent events[MAX_DEVICES];

static int
driver_error(const char *call, CUresult rc)
{
    PyErr_Format(PyExc_RuntimeError, "managed producer: %s -> CUresult %d", call,
                 (int)rc);
    return -1;
}

static int
load_driver(void)
{
    if (cu.init) {
        return 0;
    }
    const char *path = getenv("TACK_CUDA_DRIVER");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        PyErr_Format(PyExc_RuntimeError, "managed producer: %s", dlerror());
        return -1;
    }
    static const char *const names[] = {"cuInit",
                                        "cuDeviceGet",
                                        "cuDevicePrimaryCtxRetain",
                                        "cuCtxPushCurrent_v2",
                                        "cuCtxPopCurrent_v2",
                                        "cuMemAllocManaged",
                                        "cuMemAlloc_v2",
                                        "cuMemFree_v2",
                                        "cuStreamCreate",
                                        "cuMemsetD32Async",
                                        "cuEventCreate",
                                        "cuEventRecord",
                                        "cuStreamWaitEvent",
                                        "cuStreamSynchronize",
                                        "cuMemHostAlloc",
                                        "cuMemFreeHost"};
    void *found[sizeof names / sizeof names[0]];
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        found[k] = dlsym(lib, names[k]);
        if (!found[k]) {
            PyErr_Format(PyExc_RuntimeError, "managed producer: no %s", names[k]);
            return -1;
        }
    }
    _Static_assert(sizeof cu == sizeof found, "one symbol per entry point");
    memcpy(&cu, found, sizeof cu); /* POSIX: function pointers travel as void * */
    CUresult rc = cu.init(0);
    return rc ? driver_error("cuInit", rc) : 0;
}

/* Makes the device's primary context current (pushed; pop with leave). */
static int
enter(int ordinal)
{
    if (ordinal < 0 || ordinal >= MAX_DEVICES) {
        PyErr_SetString(PyExc_ValueError, "managed producer: bad ordinal");
        return -1;
    }
    if (load_driver() < 0) {
        return -1;
    }
    CUresult rc;
    if (!contexts[ordinal]) {
        int dev = 0;
        if ((rc = cu.device_get(&dev, ordinal)) ||
            (rc = cu.retain(&contexts[ordinal], dev))) {
            return driver_error("cuDevicePrimaryCtxRetain", rc);
        }
    }
    if ((rc = cu.push(contexts[ordinal]))) {
        return driver_error("cuCtxPushCurrent", rc);
    }
    if (!streams[ordinal] &&
        ((rc = cu.stream_create(&streams[ordinal], CU_STREAM_NON_BLOCKING)) ||
         (rc = cu.event_create(&events[ordinal], CU_EVENT_DISABLE_TIMING)))) {
        CUcontext none;
        cu.pop(&none);
        return driver_error("cuStreamCreate", rc);
    }
    return 0;
}

static void
leave(void)
{
    CUcontext none;
    cu.pop(&none);
}

/* Pops the context and returns None, or NULL with an exception when rc failed. */
static PyObject *
leave_with(CUresult rc, const char *call)
{
    leave();
    if (rc) {
        driver_error(call, rc);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* alloc(nbytes, ordinal=0, managed=True, *, pinned=False) -> address: managed memory,
 * ordinary device memory, or (pinned) page-locked host memory from cuMemHostAlloc. */
static PyObject *
alloc(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kw[] = {"nbytes", "ordinal", "managed", "pinned", NULL};
    Py_ssize_t nbytes;
    int ordinal = 0, managed = 1, pinned = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|ip$p", kw, &nbytes, &ordinal,
                                     &managed, &pinned) ||
        enter(ordinal) < 0) {
        return NULL;
    }
    CUdeviceptr p = 0;
    void *host = NULL;
    CUresult rc = pinned
                      ? cu.host_alloc(&host, (size_t)nbytes, CU_MEMHOSTALLOC_PORTABLE)
                  : managed ? cu.alloc_managed(&p, (size_t)nbytes, CU_MEM_ATTACH_GLOBAL)
                            : cu.alloc(&p, (size_t)nbytes);
    leave();
    if (rc) {
        driver_error(pinned    ? "cuMemHostAlloc"
                     : managed ? "cuMemAllocManaged"
                               : "cuMemAlloc",
                     rc);
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(pinned ? (CUdeviceptr)(uintptr_t)host : p);
}

/* write_async(address, nwords, value, ordinal=0): a 32-bit fill queued on the
 * producer's own stream and not waited for: a write still pending. */
static PyObject *
write_async(PyObject *module, PyObject *args)
{
    (void)module;
    unsigned long long p;
    Py_ssize_t nwords;
    unsigned value;
    int ordinal = 0;
    if (!PyArg_ParseTuple(args, "KnI|i", &p, &nwords, &value, &ordinal) ||
        enter(ordinal) < 0) {
        return NULL;
    }
    CUresult rc = cu.memset32(p, value, (size_t)nwords, streams[ordinal]);
    return leave_with(rc, "cuMemsetD32Async");
}

/* order(consumer_stream, ordinal=0): the consumer's stream waits for the producer's
 * (event record + wait), as a producer's __dlpack__(stream=...) does. */
static PyObject *
order(PyObject *module, PyObject *args)
{
    (void)module;
    unsigned long long consumer;
    int ordinal = 0;
    if (!PyArg_ParseTuple(args, "K|i", &consumer, &ordinal) || enter(ordinal) < 0) {
        return NULL;
    }
    CUresult rc = cu.event_record(events[ordinal], streams[ordinal]);
    if (!rc) {
        rc = cu.stream_wait((CUstream)(uintptr_t)consumer, events[ordinal], 0);
    }
    return leave_with(rc, "cuStreamWaitEvent");
}

/* sync(ordinal=0): waits for the producer's stream. */
static PyObject *
sync_stream(PyObject *module, PyObject *args)
{
    (void)module;
    int ordinal = 0;
    if (!PyArg_ParseTuple(args, "|i", &ordinal) || enter(ordinal) < 0) {
        return NULL;
    }
    CUresult rc = cu.stream_sync(streams[ordinal]);
    return leave_with(rc, "cuStreamSynchronize");
}

/* stream(ordinal=0) -> the producer's own stream, as an int (for a
 * __cuda_array_interface__ "stream" key). */
static PyObject *
own_stream(PyObject *module, PyObject *args)
{
    (void)module;
    int ordinal = 0;
    if (!PyArg_ParseTuple(args, "|i", &ordinal) || enter(ordinal) < 0) {
        return NULL;
    }
    leave();
    return PyLong_FromVoidPtr(streams[ordinal]);
}

/* ---- capsules -------------------------------------------------------------------- */

static atomic_long made, deleted;

/* One block per tensor: both managed structs (one is used), the shape, and where the
 * memory came from. The deleter frees the memory through the driver from any thread,
 * without the GIL, making the context current itself. */
typedef struct {
    Versioned v;
    Legacy l;
    int64_t shape[8], strides[8];
    CUdeviceptr address;
    int ordinal;
    int pinned; /* cuMemHostAlloc memory: freed with cuMemFreeHost */
} Block;

static void
release(Block *b)
{
    atomic_fetch_add(&deleted, 1);
    if (cu.push(contexts[b->ordinal]) == 0) {
        (void)(b->pinned ? cu.free_host((void *)(uintptr_t)b->address)
                         : cu.free(b->address));
        leave();
    }
    free(b);
}

static void
delete_versioned(Versioned *self)
{
    release(self->ctx);
}

static void
delete_legacy(Legacy *self)
{
    release(self->ctx);
}

static void
capsule_destructor(PyObject *capsule)
{
    /* The standard destructor: do nothing once a consumer renamed the capsule. */
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        Versioned *v = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        v->deleter(v);
    }
    else if (PyCapsule_IsValid(capsule, "dltensor")) {
        Legacy *l = PyCapsule_GetPointer(capsule, "dltensor");
        l->deleter(l);
    }
}

/* Reads up to 8 ints from a sequence. Returns their count, or -1 with an exception. */
static Py_ssize_t
read_extents(PyObject *seq, int64_t *out)
{
    PyObject *fast = PySequence_Fast(seq, "shape and strides must be sequences");
    if (!fast) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > 8) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "too many dimensions");
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        out[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, k));
    }
    Py_DECREF(fast);
    return PyErr_Occurred() ? -1 : n;
}

/* capsule(address, shape, *, strides=None, versioned=True, device_type=13,
 *         device_id=0, ordinal=0, pinned=False)
 * -> a float32 tensor over address, which its deleter frees (allocated on ordinal;
 * with cuMemFreeHost when pinned). */
static PyObject *
capsule(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kw[] = {"address",   "shape",   "strides", "versioned", "device_type",
                         "device_id", "ordinal", "pinned",  NULL};
    unsigned long long address;
    PyObject *shape_obj, *strides_obj = Py_None;
    int versioned = 1, device_type = 13, device_id = 0, ordinal = 0, pinned = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KO|$Opiiip", kw, &address,
                                     &shape_obj, &strides_obj, &versioned, &device_type,
                                     &device_id, &ordinal, &pinned)) {
        return NULL;
    }
    if (ordinal < 0 || ordinal >= MAX_DEVICES || !contexts[ordinal]) {
        PyErr_SetString(PyExc_ValueError, "managed producer: allocate on it first");
        return NULL;
    }
    Block *b = calloc(1, sizeof *b);
    if (!b) {
        return PyErr_NoMemory();
    }
    Py_ssize_t ndim = read_extents(shape_obj, b->shape);
    if (ndim < 0 ||
        (strides_obj != Py_None && read_extents(strides_obj, b->strides) != ndim)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "one stride per dimension");
        }
        free(b);
        return NULL;
    }
    b->address = address;
    b->ordinal = ordinal;
    b->pinned = pinned;
    Tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)address;
    t.device.device_type = device_type;
    t.device.device_id = device_id;
    t.ndim = (int32_t)ndim;
    t.dtype.code = 2; /* kDLFloat */
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = b->shape;
    t.strides = strides_obj == Py_None ? NULL : b->strides;
    void *managed_tensor;
    if (versioned) {
        b->v.version.major = 1;
        b->v.version.minor = 3;
        b->v.ctx = b;
        b->v.deleter = delete_versioned;
        b->v.t = t;
        managed_tensor = &b->v;
    }
    else {
        b->l.t = t;
        b->l.ctx = b;
        b->l.deleter = delete_legacy;
        managed_tensor = &b->l;
    }
    PyObject *cap =
        PyCapsule_New(managed_tensor, versioned ? "dltensor_versioned" : "dltensor",
                      capsule_destructor);
    if (!cap) {
        free(b);
        return NULL;
    }
    atomic_fetch_add(&made, 1);
    return cap;
}

static PyObject *
counts(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return Py_BuildValue("(ll)", (long)atomic_load(&made), (long)atomic_load(&deleted));
}

static PyMethodDef methods[] = {
    {"alloc", (PyCFunction)(void (*)(void))alloc, METH_VARARGS | METH_KEYWORDS, NULL},
    {"write_async", write_async, METH_VARARGS, NULL},
    {"order", order, METH_VARARGS, NULL},
    {"sync", sync_stream, METH_VARARGS, NULL},
    {"stream", own_stream, METH_VARARGS, NULL},
    {"capsule", (PyCFunction)(void (*)(void))capsule, METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"counts", counts, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "managed_producer", NULL,
                                        -1, methods};

PyMODINIT_FUNC PyInit_managed_producer(void);

PyMODINIT_FUNC
PyInit_managed_producer(void)
{
    return PyModule_Create(&module_def);
}

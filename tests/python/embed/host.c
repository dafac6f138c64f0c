/*
 * host.c: a C program that links libtack and embeds Python, the way an in situ
 * analysis does. tests/python/test_embed.py builds it with `python -m tack --cflags
 * --libs` and the interpreter's embedding flags, then runs Python scripts in it:
 *
 *     host PYTHON SCRIPT [DEVICE]
 *
 * PYTHON is the interpreter whose environment (virtual environment, sys.path) the
 * embedded one takes; DEVICE (default "cpu") is where the host's field lives. The
 * script sees a built-in module `host` with the C side's view of things (below). After
 * the script and Py_FinalizeEx the host releases every array it still holds and
 * prints `releases=N`: how often the release callback of its field ran.
 */
#include "tack/python.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_N 16
#define MAX_HELD 16

static tack_device *device;        /* the field's device (the registry's) */
static tack_array *field;          /* the C side's reference to its field */
static void *field_memory;         /* what the field wraps: malloc'd or cuMemAlloc'd */
static atomic_int releases;        /* runs of field's release callback */
static tack_array *held[MAX_HELD]; /* arrays taken from Python, released at exit */
static int nheld;

/* Counts allocations through Tack's hook, to show Python's arrays use it too. */
static atomic_long allocations;

static void *
count_alloc(void *ctx, size_t nbytes, size_t alignment)
{
    (void)ctx;
    atomic_fetch_add(&allocations, 1);
    return aligned_alloc(alignment, (nbytes + alignment - 1) / alignment * alignment);
}

static void
count_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

/* The field's release: the host may free its memory now. The memory itself is freed
 * at exit (a device pointer needs the driver). */
static void
release_field(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&releases, 1);
}

static PyObject *
fail(tack_status st)
{
    PyErr_Format(PyExc_RuntimeError, "%s (%s)", tack_last_error(),
                 tack_status_name(st));
    return NULL;
}

/* host.field(stream=-1): a new tack.Array over the host's field. */
static PyObject *
host_field(PyObject *self, PyObject *args)
{
    (void)self;
    long long stream = TACK_PY_NO_STREAM;
    if (!PyArg_ParseTuple(args, "|L", &stream)) {
        return NULL;
    }
    if (!field) {
        PyErr_SetString(PyExc_RuntimeError, "the host dropped its field already");
        return NULL;
    }
    return tack_py_from_array(field, (int64_t)stream);
}

/* host.field_ptr(): the address the host wrapped. */
static PyObject *
host_field_ptr(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromVoidPtr(field_memory);
}

/* host.drop_field(): the C side releases its reference. */
static PyObject *
host_drop_field(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    tack_array_release(field);
    field = NULL;
    Py_RETURN_NONE;
}

static void *
drop_on_thread(void *arg)
{
    (void)arg;
    tack_array_release(field);
    return NULL;
}

/* host.drop_field_on_thread(): the same, from a thread of the host's own that does
 * not hold (and never takes) the GIL. */
static PyObject *
host_drop_field_on_thread(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    pthread_t t;
    int rc;
    Py_BEGIN_ALLOW_THREADS
        rc = pthread_create(&t, NULL, drop_on_thread, NULL);
        if (rc == 0) {
            pthread_join(t, NULL);
        }
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_create failed");
        return NULL;
    }
    field = NULL;
    Py_RETURN_NONE;
}

/* host.reclaim(): tack_array_reclaim(field). None when it succeeded (the host's
 * reference is gone with it), else (status name, tack_last_error()). */
static PyObject *
host_reclaim(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    tack_status st = tack_array_reclaim(field);
    if (st == TACK_OK) {
        field = NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(ss)", tack_status_name(st), tack_last_error());
}

static PyObject *
host_releases(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(atomic_load(&releases));
}

static PyObject *
host_allocations(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(atomic_load(&allocations));
}

/* host.hold(obj): tack_py_to_array(obj), kept until the host exits (after
 * finalization); returns the C array's data address and whether its device is the
 * one the host opened. */
static PyObject *
host_hold(PyObject *self, PyObject *obj)
{
    (void)self;
    if (nheld == MAX_HELD) {
        PyErr_SetString(PyExc_RuntimeError, "holding too many");
        return NULL;
    }
    tack_array *arr = tack_py_to_array(obj);
    if (!arr) {
        return NULL;
    }
    held[nheld++] = arr;
    tack_device *cpu = NULL;
    tack_status st = tack_device_open("cpu", 0, NULL, &cpu);
    if (st != TACK_OK) {
        return fail(st);
    }
    /* Borrowed: registry devices live for the process. */
    tack_device_release(cpu);
    return Py_BuildValue("(NO)", PyLong_FromVoidPtr(tack_array_data(arr)),
                         tack_array_device(arr) == cpu ? Py_True : Py_False);
}

/* The pending exception, cleared, as (its type's name, tack_last_error()). */
static PyObject *
pending_error(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *out =
        Py_BuildValue("(ss)", ((PyTypeObject *)type)->tp_name, tack_last_error());
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return out;
}

/* host.to_array_error(obj): tack_py_to_array(obj) expected to fail; returns
 * (exception type name, tack_last_error()). */
static PyObject *
host_to_array_error(PyObject *self, PyObject *obj)
{
    (void)self;
    tack_clear_error();
    tack_array *arr = tack_py_to_array(obj);
    if (arr) {
        tack_array_release(arr);
        PyErr_SetString(PyExc_AssertionError, "tack_py_to_array succeeded");
        return NULL;
    }
    return pending_error();
}

/* host.from_array_error(stream): tack_py_from_array(field, stream) expected to fail;
 * returns (exception type name, tack_last_error()). */
static PyObject *
host_from_array_error(PyObject *self, PyObject *args)
{
    (void)self;
    long long stream;
    if (!PyArg_ParseTuple(args, "L", &stream)) {
        return NULL;
    }
    tack_clear_error();
    PyObject *obj = tack_py_from_array(field, (int64_t)stream);
    if (obj) {
        Py_DECREF(obj);
        PyErr_SetString(PyExc_AssertionError, "tack_py_from_array succeeded");
        return NULL;
    }
    return pending_error();
}

/* host.kernel_stats(): the C side's tack_kernel_get_stats and thread count. */
static PyObject *
host_kernel_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    return Py_BuildValue("{sKsKsKsKsKsi}", "compiles", (unsigned long long)s.compiles,
                         "disk_hits", (unsigned long long)s.disk_hits, "memory_hits",
                         (unsigned long long)s.memory_hits, "parallel_launches",
                         (unsigned long long)s.parallel_launches, "serial_launches",
                         (unsigned long long)s.serial_launches, "num_threads",
                         tack_kernel_num_threads());
}

/* host.default_device_is_host(): whether tack_default_device is the field's. */
static PyObject *
host_default_device_is_field_device(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    tack_device *dev = NULL;
    tack_status st = tack_default_device(&dev);
    if (st != TACK_OK) {
        return fail(st);
    }
    int same = dev == device;
    tack_device_release(dev);
    return PyBool_FromLong(same);
}

/* host.runtime_library(): the file that defines the tack_version this program
 * calls. */
static PyObject *
host_runtime_library(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Dl_info info;
    const char *(*probe)(void) = tack_version;
    if (!dladdr(*(void **)&probe, &info) || !info.dli_fname) {
        PyErr_SetString(PyExc_RuntimeError, "dladdr found no library");
        return NULL;
    }
    char real[4096];
    return PyUnicode_DecodeFSDefault(realpath(info.dli_fname, real) ? real
                                                                    : info.dli_fname);
}

static PyMethodDef host_methods[] = {
    {"runtime_library", host_runtime_library, METH_NOARGS, NULL},
    {"field", host_field, METH_VARARGS, NULL},
    {"field_ptr", host_field_ptr, METH_NOARGS, NULL},
    {"drop_field", host_drop_field, METH_NOARGS, NULL},
    {"drop_field_on_thread", host_drop_field_on_thread, METH_NOARGS, NULL},
    {"reclaim", host_reclaim, METH_NOARGS, NULL},
    {"releases", host_releases, METH_NOARGS, NULL},
    {"allocations", host_allocations, METH_NOARGS, NULL},
    {"hold", host_hold, METH_O, NULL},
    {"to_array_error", host_to_array_error, METH_O, NULL},
    {"from_array_error", host_from_array_error, METH_VARARGS, NULL},
    {"kernel_stats", host_kernel_stats, METH_NOARGS, NULL},
    {"default_device_is_field_device", host_default_device_is_field_device, METH_NOARGS,
     NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef host_module = {
    PyModuleDef_HEAD_INIT, "host", NULL, -1, host_methods, NULL, NULL, NULL, NULL,
};

static PyObject *
init_host(void)
{
    return PyModule_Create(&host_module);
}

/* A CUDA allocation the way a CUDA host makes one: in the device's primary context
 * (the one the CUDA runtime uses, and Tack too), through the driver Tack opened. */
static int
cuda_alloc(size_t nbytes)
{
    const char *driver = getenv("TACK_CUDA_DRIVER");
    void *drv = dlopen(driver ? driver : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*device_get)(int *, int) = NULL;
    int (*retain)(void **, int) = NULL;
    int (*push)(void *) = NULL;
    int (*pop)(void **) = NULL;
    int (*mem_alloc)(unsigned long long *, size_t) = NULL;
    if (!drv) {
        return -1;
    }
    *(void **)&device_get = dlsym(drv, "cuDeviceGet");
    *(void **)&retain = dlsym(drv, "cuDevicePrimaryCtxRetain");
    *(void **)&push = dlsym(drv, "cuCtxPushCurrent_v2");
    *(void **)&pop = dlsym(drv, "cuCtxPopCurrent_v2");
    *(void **)&mem_alloc = dlsym(drv, "cuMemAlloc_v2");
    int dev;
    void *ctx, *popped;
    unsigned long long dptr = 0;
    if (!device_get || !retain || !push || !pop || !mem_alloc || device_get(&dev, 0) ||
        retain(&ctx, dev) || push(ctx)) {
        return -1;
    }
    int rc = mem_alloc(&dptr, nbytes);
    pop(&popped);
    field_memory = (void *)(uintptr_t)dptr;
    return rc == 0 ? 0 : -1;
}

/* The field: host memory from malloc, or on CUDA a cuMemAlloc of the driver Tack
 * opened (TACK_CUDA_DRIVER, else libcuda.so.1), wrapped with a counting release. */
static int
make_field(const char *device_name)
{
    tack_status st = tack_device_open(device_name, 0, NULL, &device);
    if (st != TACK_OK) {
        fprintf(stderr, "host: %s\n", tack_last_error());
        return -1;
    }
    if (strcmp(device_name, "cpu") == 0) {
        field_memory = calloc(FIELD_N, sizeof(float));
    }
    else if (cuda_alloc(FIELD_N * sizeof(float)) < 0) {
        fprintf(stderr, "host: cuMemAlloc of the field failed\n");
        return -1;
    }
    int64_t shape[1] = {FIELD_N};
    st = tack_array_wrap_memory(device, field_memory, TACK_FLOAT32, 1, shape, true,
                                release_field, NULL, &field);
    if (st != TACK_OK) {
        fprintf(stderr, "host: %s\n", tack_last_error());
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: host PYTHON SCRIPT [DEVICE]\n");
        return 2;
    }
    const tack_allocator counting = {count_alloc, count_free, NULL};
    tack_set_allocator(&counting);
    if (make_field(argc > 3 ? argv[3] : "cpu") < 0) {
        return 1;
    }
    PyImport_AppendInittab("host", init_host);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    /* The interpreter named takes its environment along: its venv, its sys.path. */
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, argv[1]);
    if (!PyStatus_Exception(status)) {
        status = Py_InitializeFromConfig(&config);
    }
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        Py_ExitStatusException(status);
    }
    int rc = 1;
    if (tack_py_import() < 0) {
        PyErr_Print();
        fprintf(stderr, "host: tack_py_import: %s\n", tack_last_error());
    }
    else {
        FILE *f = fopen(argv[2], "r");
        rc = f ? PyRun_SimpleFileEx(f, argv[2], 1) : 1;
    }
    if (Py_FinalizeEx() < 0) {
        rc = rc ? rc : 120;
    }
    /* After finalization: what Python still held of these is leaked, not touched. */
    for (int k = 0; k < nheld; k++) {
        tack_array_release(held[k]);
    }
    tack_array_release(field);
    int n = atomic_load(&releases);
    if (n == 1 && strcmp(tack_device_backend_name(device), "cpu") == 0) {
        free(field_memory); /* released: nothing uses it any more */
    }
    printf("releases=%d\n", n);
    return rc;
}

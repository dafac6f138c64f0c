/*
 * module.c: the extension module tack._tack: its state, its functions and its
 * initialisation (multi-phase, PEP 489; one state per module object, no C globals
 * holding Python objects).
 */
#include "tackpy.h"

tackpy_state *
tackpy_state_of_type(PyTypeObject *type)
{
    /* The module's types are final (none sets Py_TPFLAGS_BASETYPE), so an instance's
     * type is the one PyType_FromModuleAndSpec made and names the module itself: one
     * load, not a walk of the MRO, on every method call. */
    if (!(type->tp_flags & Py_TPFLAGS_BASETYPE)) {
        return PyType_GetModuleState(type);
    }
    PyObject *module = PyType_GetModuleByDef(type, &tackpy_module_def);
    return module ? PyModule_GetState(module) : NULL;
}

PyObject *
tackpy_numpy(tackpy_state *st)
{
    if (!st->numpy) {
        st->numpy = PyImport_ImportModule("numpy");
    }
    return st->numpy;
}

static PyObject *
synchronize_fn(PyObject *module, PyObject *unused)
{
    (void)unused;
    tackpy_state *st = PyModule_GetState(module);
    tack_device *dev = NULL;
    tack_status status = tack_default_device(&dev);
    if (status == TACK_OK) {
        Py_BEGIN_ALLOW_THREADS
            status = tack_device_synchronize(dev);
        Py_END_ALLOW_THREADS
        tack_device_release(dev);
    }
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    Py_RETURN_NONE;
}

#define FASTKW(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

static PyObject *
kernel_debug_fn(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyBool_FromLong(tack_kernel_debug_default());
}

/* Registered with atexit by tack/__init__.py: the objects freed during finalization
 * are then left to the process's end (tack_process_exiting). */
static PyObject *
tackpy_process_exiting_fn(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    tack_process_exiting();
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"empty", FASTKW(tackpy_empty_fn),
     "empty(shape, dtype=None, device=None, exportable=False)\n--\n\n"
     "A new array with uninitialized elements; dtype None means tack.float32."},
    {"zeros", FASTKW(tackpy_zeros_fn),
     "zeros(shape, dtype=None, device=None, exportable=False)\n--\n\n"
     "A new array of zeros."},
    {"full", FASTKW(tackpy_full_fn),
     "full(shape, fill_value, dtype=None, device=None, "
     "exportable=False)\n--\n\n"
     "A new array with every element set to fill_value."},
    {"array", FASTKW(tackpy_array_fn),
     "array(obj, dtype=None, device=None)\n--\n\n"
     "A new array holding a copy of obj (anything NumPy can read, or a Tack array)."},
    {"copyto", FASTKW(tackpy_copyto_fn),
     "copyto(dst, src)\n--\n\n"
     "Replace the elements of dst with those of src, converting to dst's dtype."},
    {"device", FASTKW(tackpy_device_fn),
     "device(name, ordinal=0, **options)\n--\n\n"
     "A device: 'cpu', 'cuda', 'hip' or 'level_zero' ('cuda:1' names an ordinal)."},
    {"set_default_device", FASTKW(tackpy_set_default_device_fn),
     "set_default_device(name, ordinal=0, **options)\n--\n\n"
     "Make a device the default for new arrays and imports; returns it."},
    {"get_default_device", tackpy_get_default_device_fn, METH_NOARGS,
     "get_default_device()\n--\n\nThe default device."},
    {"synchronize", synchronize_fn, METH_NOARGS,
     "synchronize()\n--\n\nWait for every launch queued on the default device."},
    /* DLPack and raw pointers (dlpack_py.c) */
    {"from_dlpack", FASTKW(tackpy_from_dlpack_fn),
     "from_dlpack(x, /, *, device=None, copy=False)\n--\n\n"
     "An array over the memory of x (any DLPack producer, or a DLPack capsule).\n"
     "copy=True makes an independent contiguous copy; copy=None shares when it can."},
    {"array_from_ptr", FASTKW(tackpy_array_from_ptr_fn),
     "array_from_ptr(ptr, shape, dtype, writable=False)\n--\n\n"
     "An array over memory Tack does not own: an int address (kept alive by the\n"
     "caller) or an object exposing its memory (held while the array lives)."},
    /* kernels (kernel_py.c): private helpers of the front end in tack.kernel */
    {"_kernel_build", FASTKW(tackpy_kernel_build_fn),
     "_kernel_build(name, filename, source, backend=1)\n--\n\n"
     "Build source generated for a backend (a DLPack device type; 1, the CPU, "
     "builds C)\ninto a kernel of that backend (raises CompileError; RuntimeError "
     "for a backend\nthat runs no kernels)."},
    {"_process_exiting", tackpy_process_exiting_fn, METH_NOARGS,
     "_process_exiting()\n--\n\nTell the runtime the interpreter is exiting (atexit)."},
    {"_runtime_library", tackpy_runtime_library_fn, METH_NOARGS,
     "_runtime_library()\n--\n\nThe path of the libtack this extension calls."},
    {"_kernel_debug", kernel_debug_fn, METH_NOARGS,
     "_kernel_debug()\n--\n\nWhether a kernel without a debug mode of its own runs "
     "checked now\n(TACK_DEBUG)."},
    {"_dlpack_stats", tackpy_dlpack_stats_fn, METH_NOARGS,
     "_dlpack_stats()\n--\n\nImport counters: NumPy arrays read through their fields "
     "instead of\n__dlpack__ (numpy_direct), JAX arrays read through their buffer "
     "(buffer_direct)."},
    {"_kernel_stats", tackpy_kernel_stats_fn, METH_NOARGS,
     "_kernel_stats()\n--\n\nProcess-wide kernel counters: compiles, cache hits, "
     "launches."},
    /* CUDA kernels (nvrtc_py.c): private helpers of the front end and its tests */
    {"_nvrtc_compile", FASTKW(tackpy_nvrtc_compile_fn),
     "_nvrtc_compile(source, arch, ptx=False, name='kernel')\n--\n\n"
     "CUDA source -> CUBIN (or PTX) bytes for compute capability arch (90: sm_90);\n"
     "raises CompileError with NVRTC's log."},
    {"_nvrtc_version", tackpy_nvrtc_version_fn, METH_NOARGS,
     "_nvrtc_version()\n--\n\nNVRTC's (major, minor); loads it."},
    {"_nvrtc_supports", tackpy_nvrtc_supports_fn, METH_O,
     "_nvrtc_supports(arch)\n--\n\nWhether NVRTC makes a CUBIN for arch."},
    {"_nvrtc_stats", tackpy_nvrtc_stats_fn, METH_NOARGS,
     "_nvrtc_stats()\n--\n\nProcess-wide NVRTC counters: compiles, disk_hits, "
     "rebuilds, failures."},
    {"_rtc_cache_get", (PyCFunction)(void (*)(void))tackpy_rtc_cache_get_fn,
     METH_FASTCALL,
     "_rtc_cache_get(ext, text)\n--\n\nThe image the disk cache holds for text "
     "(everything "
     "that made it),\nin its entry ending in ext ('.spv'), or None."},
    {"_rtc_cache_put", (PyCFunction)(void (*)(void))tackpy_rtc_cache_put_fn,
     METH_FASTCALL,
     "_rtc_cache_put(ext, text, image)\n--\n\nPublish image (bytes) in the disk cache "
     "for text; a failure only loses\nthe entry."},
    {NULL, NULL, 0, NULL},
};

/* Makes a heap type immutable once its class attributes are set: nothing writes
 * into an immutable type's dict, and users cannot either afterwards. */
static int
freeze_type(PyTypeObject *type)
{
#if PY_VERSION_HEX >= 0x030E0000
    return PyType_Freeze(type);
#else
    /* What PyType_Freeze (3.14) does: the flag, then the type caches are told. */
    type->tp_flags |= Py_TPFLAGS_IMMUTABLETYPE;
    PyType_Modified(type);
    return 0;
#endif
}

static int
module_exec(PyObject *module)
{
    tackpy_state *st = PyModule_GetState(module);
    /* First: with a second runtime in the process nothing below could be trusted. */
    if (tackpy_runtime_check() < 0) {
        return -1;
    }
    if (tackpy_names_init(st) < 0 || tackpy_errors_init(module, st) < 0 ||
        tackpy_dtype_init(module, st) < 0 || tackpy_device_init(module, st) < 0 ||
        tackpy_array_init(module, st) < 0 || tackpy_dlpack_init(module, st) < 0 ||
        tackpy_exchange_init(module, st) < 0 || freeze_type(st->Array_type) < 0 ||
        tackpy_kernel_init(module, st) < 0 || tackpy_c_api_init(module) < 0) {
        return -1;
    }
    if (PyModule_AddIntConstant(module, "MAX_NDIM", TACK_MAX_NDIM) < 0 ||
        PyModule_AddStringConstant(module, "__version__", TACK_VERSION) < 0) {
        return -1;
    }
    return 0;
}

static int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    tackpy_state *st = PyModule_GetState(module);
    Py_VISIT(st->Array_type);
    Py_VISIT(st->Device_type);
    Py_VISIT(st->DType_type);
    for (int k = 0; k < TACK_DTYPE_COUNT; k++) {
        Py_VISIT(st->dtypes[k]);
    }
    Py_VISIT(st->TackError);
    for (int k = 0; k < TACK_KIND_COUNT; k++) {
        Py_VISIT(st->kind_exc[k]);
    }
    Py_VISIT(st->KernelError);
    Py_VISIT(st->numpy);
    Py_VISIT(st->dlpack_kw_max_version);
    Py_VISIT(st->dlpack_kw_max_version_stream);
    Py_VISIT(st->dlpack_max_version);
    Py_VISIT(st->Kernel_type);
    for (int k = 0; k < TACKPY_NAME_COUNT; k++) {
        Py_VISIT(st->names[k]);
    }
    return 0;
}

static int
module_clear(PyObject *module)
{
    tackpy_state *st = PyModule_GetState(module);
    Py_CLEAR(st->Array_type);
    Py_CLEAR(st->Device_type);
    Py_CLEAR(st->DType_type);
    for (int k = 0; k < TACK_DTYPE_COUNT; k++) {
        Py_CLEAR(st->dtypes[k]);
    }
    Py_CLEAR(st->TackError);
    for (int k = 0; k < TACK_KIND_COUNT; k++) {
        Py_CLEAR(st->kind_exc[k]);
    }
    Py_CLEAR(st->KernelError);
    Py_CLEAR(st->numpy);
    Py_CLEAR(st->dlpack_kw_max_version);
    Py_CLEAR(st->dlpack_kw_max_version_stream);
    Py_CLEAR(st->dlpack_max_version);
    Py_CLEAR(st->Kernel_type);
    for (int k = 0; k < TACKPY_NAME_COUNT; k++) {
        Py_CLEAR(st->names[k]);
    }
    return 0;
}

static void
module_free(void *module)
{
    module_clear(module);
    tackpy_env_watch_free(&((tackpy_state *)PyModule_GetState(module))->debug_env);
}

/* Declared truthfully: a buffer held by array_from_ptr is released with the
 * PyGILState API, which knows only the main interpreter, so subinterpreters are not
 * supported; module state and the per-type exchange cache rely on the GIL. */
static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

PyModuleDef tackpy_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tack._tack",
    .m_doc = "The C core of Tack: arrays, devices, DLPack and kernel launches.",
    .m_size = sizeof(tackpy_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__tack(void);

PyMODINIT_FUNC
PyInit__tack(void)
{
    return PyModuleDef_Init(&tackpy_module_def);
}

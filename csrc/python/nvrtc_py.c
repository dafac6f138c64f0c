/*
 * nvrtc_py.c: private helpers over the runtime compiler layer (csrc/runtime/rtc.h,
 * not installed) for the CUDA kernel front end and its tests: _nvrtc_compile,
 * _nvrtc_version, _nvrtc_supports, _nvrtc_stats, and _rtc_cache_get/_put (the disk
 * cache of an image made outside, such as the SPIR-V of tack.kernel.spirv). They
 * take NVRTC's compute capabilities as ints (90) and spell them as its architectures
 * (sm_90, compute_90).
 */
#include "tackpy.h"

#include "../runtime/rtc.h"

/* NVRTC's architecture for compute capability arch: a CUBIN's or PTX's. */
static void
spell_arch(char *buf, size_t cap, int arch, bool ptx)
{
    snprintf(buf, cap, "%s_%d", ptx ? "compute" : "sm", arch);
}

/* A compute capability as 10 * major + minor; -1 with an exception when it is not
 * an int that fits. */
static int
arch_of(tackpy_state *st, PyObject *o)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0 || v > 9999) {
        return tackpy_raise_fmt_int(
            st, TACK_ERR_INVALID_ARGUMENT,
            "arch must be a compute capability such as 90 (sm_90), not %ld", v);
    }
    return (int)v;
}

PyObject *
tackpy_nvrtc_compile_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames)
{
    tackpy_state *st = PyModule_GetState(module);
    static const tackpy_signature sig = {
        "_nvrtc_compile",
        4,
        2,
        0,
        2,
        {TACKPY_NAME_source, TACKPY_NAME_arch, TACKPY_NAME_ptx, TACKPY_NAME_name}};
    PyObject *a[4];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, a, NULL) < 0) {
        return NULL;
    }
    const char *source = PyUnicode_Check(a[0]) ? PyUnicode_AsUTF8(a[0]) : NULL;
    const char *name = !a[3]                   ? "kernel"
                       : PyUnicode_Check(a[3]) ? PyUnicode_AsUTF8(a[3])
                                               : NULL;
    if (!source || !name || !PyLong_Check(a[1])) {
        if (!PyErr_Occurred()) {
            tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE,
                             "_nvrtc_compile(source: str, arch: int, ptx=False, "
                             "name='kernel')");
        }
        return NULL;
    }
    int arch = arch_of(st, a[1]);
    int ptx = a[2] ? PyObject_IsTrue(a[2]) : 0;
    if ((arch == -1 || ptx < 0) && PyErr_Occurred()) {
        return NULL;
    }
    char target[TACK_RTC_ARCH_CAP];
    spell_arch(target, sizeof target, arch, ptx);
    void *image = NULL;
    size_t nbytes = 0;
    char *log = NULL;
    tack_status status;
    Py_BEGIN_ALLOW_THREADS
        status = tack_rtc_compile(TACK_RTC_NVRTC, source, name, target, &image, &nbytes,
                                  &log);
    Py_END_ALLOW_THREADS
    if (status != TACK_OK) {
        tackpy_raise_compile(st, status, log);
        tack_rtc_free(log);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(image, (Py_ssize_t)nbytes);
    tack_rtc_free(image);
    return out;
}

PyObject *
tackpy_nvrtc_version_fn(PyObject *module, PyObject *unused)
{
    (void)unused;
    int major, minor;
    tack_status status = tack_rtc_version(TACK_RTC_NVRTC, &major, &minor);
    if (status != TACK_OK) {
        return tackpy_raise(PyModule_GetState(module), status);
    }
    return Py_BuildValue("(ii)", major, minor);
}

PyObject *
tackpy_nvrtc_supports_fn(PyObject *module, PyObject *arg)
{
    int arch = arch_of(PyModule_GetState(module), arg);
    if (arch == -1 && PyErr_Occurred()) {
        return NULL;
    }
    char target[TACK_RTC_ARCH_CAP];
    spell_arch(target, sizeof target, arch, false);
    int yes = 0;
    tack_status status = tack_rtc_supports(TACK_RTC_NVRTC, target, &yes);
    if (status != TACK_OK) {
        return tackpy_raise(PyModule_GetState(module), status);
    }
    return PyBool_FromLong(yes);
}

PyObject *
tackpy_nvrtc_stats_fn(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    tack_rtc_stats s;
    tack_rtc_get_stats(TACK_RTC_NVRTC, &s);
    return Py_BuildValue("{sKsKsKsK}", "compiles", (unsigned long long)s.compiles,
                         "disk_hits", (unsigned long long)s.disk_hits, "rebuilds",
                         (unsigned long long)s.rebuilds, "failures",
                         (unsigned long long)s.failures);
}

/* The cache's file ending and key text of an outside image's call, or -1 with an
 * exception. */
static int
outside_args(tackpy_state *st, PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
             const char *usage, const char **ext, const char **text)
{
    if (nargs != want || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1])) {
        return tackpy_raise_fmt_int(st, TACK_ERR_BAD_TYPE, "%s", usage);
    }
    *ext = PyUnicode_AsUTF8(args[0]);
    *text = *ext ? PyUnicode_AsUTF8(args[1]) : NULL;
    return *text ? 0 : -1;
}

PyObject *
tackpy_rtc_cache_get_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *ext = NULL, *text = NULL;
    if (outside_args(PyModule_GetState(module), args, nargs, 2,
                     "_rtc_cache_get(ext: str, text: str)", &ext, &text) < 0) {
        return NULL;
    }
    void *image = NULL;
    size_t nbytes = 0;
    bool found;
    Py_BEGIN_ALLOW_THREADS
        found = tack_rtc_cache_get(ext, text, &image, &nbytes);
    Py_END_ALLOW_THREADS
    if (!found) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyBytes_FromStringAndSize(image, (Py_ssize_t)nbytes);
    tack_rtc_free(image);
    return out;
}

PyObject *
tackpy_rtc_cache_put_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *ext = NULL, *text = NULL;
    static const char usage[] = "_rtc_cache_put(ext: str, text: str, image: bytes)";
    tackpy_state *st = PyModule_GetState(module);
    if (outside_args(st, args, nargs, 3, usage, &ext, &text) < 0) {
        return NULL;
    }
    if (!PyBytes_Check(args[2])) {
        return tackpy_raise_fmt(st, TACK_ERR_BAD_TYPE, "%s", usage);
    }
    /* the bytes object is immutable and held by the caller across the call */
    const char *image = PyBytes_AS_STRING(args[2]);
    size_t nbytes = (size_t)PyBytes_GET_SIZE(args[2]);
    Py_BEGIN_ALLOW_THREADS
        tack_rtc_cache_put(ext, text, image, nbytes);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

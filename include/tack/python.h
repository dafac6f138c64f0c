/*
 * python.h: arrays handed between C and the Python package tack, for a program that
 * embeds Python (an in situ analysis) or a C extension module of its own.
 *
 * The functions come from the extension tack._tack as a capsule of function pointers
 * (the way NumPy's import_array() works), so this header needs no library beyond the
 * libtack the program already links: call tack_py_import() once, with the GIL held,
 * in each C file that includes this header, before any other tack_py_* function.
 * Every tack_py_* function must be called with the GIL held.
 *
 * One runtime: the extension uses the libtack the package carries (tack/lib), and a
 * program built with `python -m tack --cflags --libs` links that same file, so a
 * device, an array or the kernel cache is the same object on both sides.
 * tack_py_import() refuses, with ImportError, a program whose libtack is another
 * copy than the extension's.
 *
 * Errors: a function that fails sets a Python exception and records the same message
 * as tack_last_error() of this thread.
 */
#ifndef TACK_PYTHON_H
#define TACK_PYTHON_H

/* Python.h first, as Python asks of every file that includes it. */
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#include "tack/tack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The capsule's name, also its attribute path: tack._tack._C_API. */
#define TACK_PY_API_CAPSULE "tack._tack._C_API"
/* The table's version; a later one only appends members (size tells how many). */
#define TACK_PY_API_VERSION 1
/* The stream value that orders nothing (DLPack's -1): the host's work is done. */
#define TACK_PY_NO_STREAM (-1)

/*
 * The table the capsule points to. Borrowed, static in the extension: valid while
 * the extension is loaded (until the process ends). Members are only appended: a
 * member is present when size (the extension's sizeof) covers it.
 */
typedef struct tack_py_api {
    size_t size;      /* sizeof(tack_py_api) as the extension was built */
    uint32_t version; /* TACK_PY_API_VERSION of the extension */
    /* 0 when host_version (tack_version as the caller linked it) is the function
     * of the runtime the extension uses; -1 with ImportError naming both copies. */
    int (*check_runtime)(const char *(*host_version)(void));
    PyObject *(*from_array)(tack_array *arr, int64_t stream);
    tack_array *(*to_array)(PyObject *obj);
} tack_py_api;

/* The table found by tack_py_import() in this file; NULL before. */
static inline const tack_py_api **
tack_py__table(void)
{
    static const tack_py_api *table;
    return &table;
}

/* Raises RuntimeError (and records it) when tack_py_import() has not succeeded. */
static inline const tack_py_api *
tack_py__api(void)
{
    const tack_py_api *api = *tack_py__table();
    if (!api) {
        const char *msg = "tack/python.h: call tack_py_import() first";
        tack_set_error(TACK_ERR_INVALID_ARGUMENT, msg);
        PyErr_SetString(PyExc_RuntimeError, msg);
    }
    return api;
}

/*
 * Imports the package tack and takes the extension's table. Returns 0, or -1 with
 * ImportError set (and recorded for tack_last_error()): tack cannot be imported, its
 * table is older than this header, or the program's libtack is not the extension's.
 */
static inline int
tack_py_import(void)
{
    PyObject *pkg = PyImport_ImportModule("tack");
    if (!pkg) {
        tack_set_error(TACK_ERR_UNSUPPORTED, "tack/python.h: cannot import tack");
        return -1;
    }
    Py_DECREF(pkg);
    const tack_py_api *api =
        (const tack_py_api *)PyCapsule_Import(TACK_PY_API_CAPSULE, 0);
    if (!api) {
        tack_set_error(TACK_ERR_UNSUPPORTED,
                       "tack/python.h: tack has no C API capsule");
        return -1;
    }
    if (api->version < 1 ||
        api->size < offsetof(tack_py_api, to_array) + sizeof api->to_array) {
        const char *msg =
            "tack/python.h: the installed tack is older than this header: build "
            "against its own headers (python -m tack --cflags)";
        tack_set_error(TACK_ERR_UNSUPPORTED, msg);
        PyErr_SetString(PyExc_ImportError, msg);
        return -1;
    }
    if (api->check_runtime(tack_version) < 0) {
        return -1;
    }
    *tack_py__table() = api;
    return 0;
}

/*
 * A new tack.Array over arr's memory, shared, not copied. Borrows arr: the Python
 * object takes a reference of its own, and the caller keeps (and later releases) its
 * one. The memory lives until both are released (a wrapped buffer's release callback
 * runs once, then, on whichever thread drops the last reference).
 * stream, for an array on a device with streams: the stream (DLPack's numbering, a
 * CUstream on CUDA) on which the caller queued work that writes arr; Tack's later
 * work on arr, and that of every consumer that asks for it by DLPack, follows it
 * without blocking the host. TACK_PY_NO_STREAM when that work is done (the only value
 * a CPU array takes). Returns: new reference, or NULL with an exception set:
 * ValueError (arr NULL, a stream that the device has not got).
 */
static inline PyObject *
tack_py_from_array(tack_array *arr, int64_t stream)
{
    const tack_py_api *api = tack_py__api();
    return api ? api->from_array(arr, stream) : NULL;
}

/*
 * The C array of obj: a tack.Array's own (shared), or an import of anything with
 * __dlpack__ (as tack.from_dlpack(obj) makes, without a copy). Borrows obj. Returns:
 * new reference, release with tack_array_release() (from any thread, with or without
 * the GIL; a release after the interpreter finalized leaks what Python owned instead
 * of touching it), or NULL with an exception set (TypeError for an object without
 * __dlpack__, the exceptions of tack.from_dlpack otherwise).
 */
static inline tack_array *
tack_py_to_array(PyObject *obj)
{
    const tack_py_api *api = tack_py__api();
    return api ? api->to_array(obj) : NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* TACK_PYTHON_H */

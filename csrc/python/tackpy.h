/*
 * tackpy.h: what the files of the extension tack._tack share.
 *
 * The extension is a binding: it parses arguments, calls the C runtime and turns
 * statuses into exceptions. It holds no logic of its own and no C globals holding
 * Python objects: everything lives in the module state (multi-phase init, PEP 489).
 */
#ifndef TACKPY_H
#define TACKPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tack/tack.h"

/* One remembered answer to "does this type publish a DLPack exchange table?" */
#define TACKPY_EXCHANGE_CACHE 4
typedef struct tackpy_exchange_cache {
    PyTypeObject *type; /* Borrowed: compared, never dereferenced without tag */
    unsigned int tag;   /* the type's tp_version_tag when looked up; 0: empty */
    const void *api;    /* the DLPackExchangeAPI, or NULL for none */
} tackpy_exchange_cache;

/* Exception classes beyond the per-kind ones. */
typedef struct tackpy_state {
    PyTypeObject *Array_type;
    PyTypeObject *Device_type;
    PyTypeObject *DType_type;
    PyObject *dtypes[TACK_DTYPE_COUNT];  /* the tack.float32, ... singletons */
    PyObject *TackError;                 /* base of every Tack exception */
    PyObject *kind_exc[TACK_KIND_COUNT]; /* error kind -> exception class */
    PyObject *KernelError; /* SyntaxError subclass, raised by the front end */
    PyObject *numpy;       /* numpy module, imported on first use */
    /* DLPack binding (dlpack_py.c): interned names and constants, and the
     * exchange-table lookups of recent producer types. */
    PyObject *dlpack_consts;
    tackpy_exchange_cache dlpack_cache[TACKPY_EXCHANGE_CACHE];
    int dlpack_cache_next;
    PyTypeObject *Kernel_type; /* tack.Kernel (kernel_py.c) */
} tackpy_state;

typedef struct {
    PyObject_HEAD tack_array *arr; /* Owned reference */
    PyObject *weakreflist;
} tackpy_Array;

typedef struct {
    PyObject_HEAD tack_device *dev; /* Owned reference */
} tackpy_Device;

typedef struct {
    PyObject_HEAD tack_dtype dtype;
} tackpy_DType;

/* ---- module.c ---------------------------------------------------------------- */
extern PyModuleDef tackpy_module_def;
/* The state of the module that defined type (Array, Device or DType). */
tackpy_state *tackpy_state_of_type(PyTypeObject *type);
/* The numpy module. Returns: borrowed reference, or NULL with an exception set. */
PyObject *tackpy_numpy(tackpy_state *st);

/* ---- errors.c ----------------------------------------------------------------- */
int tackpy_errors_init(PyObject *module, tackpy_state *st);
/* Raises the exception of status's kind with the runtime's last message; returns
 * NULL so that a failure reads `return tackpy_raise(st, status);`. */
PyObject *tackpy_raise(tackpy_state *st, tack_status status);
/* As tackpy_raise, for functions returning int: returns -1. */
int tackpy_raise_int(tackpy_state *st, tack_status status);
/* Raises the class of kind with a formatted message; returns NULL. */
/* Whether Python can no longer be touched (finalized, or finalizing on another
 * thread): a release callback then leaks instead. */
int tackpy_python_gone(void);

/* An array over the memory an object describes with __cuda_array_interface__ (cai,
 * its value), keeping obj alive; on dev (borrowed, may be NULL: the default device
 * when it is a CUDA device, else cuda:0). New reference, or NULL with an exception
 * (cuda_interface.c). */
PyObject *tackpy_from_cuda_array_interface(tackpy_state *st, PyObject *obj,
                                           PyObject *cai, tack_device *dev);

PyObject *tackpy_raise_kind(tackpy_state *st, tack_error_kind kind, const char *fmt,
                            ...);

/* ---- dtype_type.c ------------------------------------------------------------- */
int tackpy_dtype_init(PyObject *module, tackpy_state *st);
/* Reads a dtype from a tack dtype, a name ("float32", "f32"), a NumPy dtype or type.
 * Returns 0 and sets *out, or -1 with TypeError set. */
int tackpy_dtype_from_object(tackpy_state *st, PyObject *obj, tack_dtype *out);
/* Returns: borrowed reference to the singleton. */
PyObject *tackpy_dtype_object(tackpy_state *st, tack_dtype dtype);

/* ---- device_type.c ------------------------------------------------------------ */
int tackpy_device_init(PyObject *module, tackpy_state *st);
/* Returns: new reference; steals dev. */
PyObject *tackpy_device_wrap(tackpy_state *st, tack_device *dev);
/* Reads a device from None (the default), a Device or a string like "cuda:1".
 * Returns 0 and a new reference in *out, or -1 with an exception set. */
int tackpy_device_from_object(tackpy_state *st, PyObject *obj, tack_device **out);
PyObject *tackpy_device_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);
PyObject *tackpy_set_default_device_fn(PyObject *module, PyObject *const *args,
                                       Py_ssize_t nargs, PyObject *kwnames);
PyObject *tackpy_get_default_device_fn(PyObject *module, PyObject *unused);

/* ---- array_type.c ------------------------------------------------------------- */
int tackpy_array_init(PyObject *module, tackpy_state *st);
/* Returns: new reference; steals arr (released on failure too). */
PyObject *tackpy_array_wrap(tackpy_state *st, tack_array *arr);
int tackpy_array_check(tackpy_state *st, PyObject *obj);
PyObject *tackpy_empty_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames);
PyObject *tackpy_zeros_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames);
PyObject *tackpy_full_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames);
PyObject *tackpy_array_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames);
PyObject *tackpy_copyto_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);

/* ---- dlpack_py.c --------------------------------------------------------------- */
int tackpy_dlpack_init(PyObject *module, tackpy_state *st);
PyObject *tackpy_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);
PyObject *tackpy_array_dlpack_device(PyObject *self, PyObject *unused);
PyObject *tackpy_from_dlpack_fn(PyObject *module, PyObject *const *args,
                                Py_ssize_t nargs, PyObject *kwnames);
PyObject *tackpy_array_from_ptr_fn(PyObject *module, PyObject *const *args,
                                   Py_ssize_t nargs, PyObject *kwnames);

/* ---- host_data.c ---------------------------------------------------------------- */
/* Host data read from a Python object: a contiguous Py_buffer and its dtype. */
typedef struct tackpy_host {
    Py_buffer view;  /* Owned: release with tackpy_host_release() */
    PyObject *owner; /* Owned: the object the view came from (may be a temporary) */
    tack_dtype dtype;
    int ndim;
    int64_t shape[TACK_MAX_NDIM];
    size_t nscalars;
} tackpy_host;
/* Reads obj (anything NumPy can turn into an array) as C-contiguous host data.
 * Returns 0, or -1 with an exception set (nothing to release then). */
int tackpy_host_get(tackpy_state *st, PyObject *obj, tackpy_host *out);
void tackpy_host_release(tackpy_host *h);
/* Parses a shape: an int or a sequence of ints. Returns ndim, or -1 with an
 * exception set. */
int tackpy_parse_shape(tackpy_state *st, PyObject *obj, int64_t *shape);
/* Converts a Python scalar (bool, int, float, or a sequence for vec types) into one
 * element of dtype at out (at least 16 bytes). Returns 0, or -1 with OverflowError or
 * TypeError set. */
int tackpy_scalar_to_element(tackpy_state *st, PyObject *obj, tack_dtype dtype,
                             void *out);
/* One element at p as a Python object (a tuple for vec types). New reference. */
PyObject *tackpy_element_to_object(const void *p, tack_dtype dtype);
/* arr's shape as NumPy sees its scalars (vec types add a component axis). New
 * reference, or NULL with an exception set. */
PyObject *tackpy_scalar_shape(const tack_array *arr);
/* A new NumPy array holding a copy of arr. New reference. */
PyObject *tackpy_array_to_numpy(tackpy_state *st, const tack_array *arr,
                                PyObject *dtype);

/* Argument parsing for METH_FASTCALL | METH_KEYWORDS: fills out[0..n) from positional
 * args then keywords by name; missing ones stay NULL. Returns 0, or -1 with TypeError
 * (unknown or repeated keyword, too many positionals, missing required). */
int tackpy_parse_args(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames, const char *const *names, int npos_max,
                      int nrequired, PyObject **out);

/* ---- kernel_py.c ------------------------------------------------------------------
 */
int tackpy_kernel_init(PyObject *module, tackpy_state *st);
PyObject *tackpy_kernel_build_fn(PyObject *module, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *kwnames);
PyObject *tackpy_kernel_stats_fn(PyObject *module, PyObject *unused);

#endif /* TACKPY_H */

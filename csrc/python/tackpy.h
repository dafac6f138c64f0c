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
    bool immutable;     /* its arrays are immutable by contract (JAX's) */
    bool host_only;     /* its arrays live in host memory only (NumPy's) */
    bool numpy_direct;  /* NumPy's own ndarray, read through its fields */
} tackpy_exchange_cache;

/* Every keyword name a function of the extension takes (args.c). */
// clang-format off
#define TACKPY_NAME_LIST(X)                                                         \
    X(shape) X(dtype) X(device) X(exportable) X(fill_value) X(obj) X(dst) X(src)    \
    X(copy) X(stream) X(max_version) X(dl_device) X(ptr) X(writable) X(name)        \
    X(ordinal) X(filename) X(source) X(x) X(arch) X(ptx) X(backend)                \
    X(twin_source) X(names) X(parallel) X(host_trips) X(needs_ctx)                 \
    X(restrict_body) X(partial_size) X(result_kind) X(image)                     \
    X(__dlpack__) X(__dlpack_c_exchange_api__) X(__c_dlpack_exchange_api__)      \
    X(__dlpack_device__) X(__cuda_array_interface__)
// clang-format on

typedef enum tackpy_name {
#define TACKPY__NAME_ENUM(n) TACKPY_NAME_##n,
    TACKPY_NAME_LIST(TACKPY__NAME_ENUM)
#undef TACKPY__NAME_ENUM
        TACKPY_NAME_COUNT
} tackpy_name;

/* TACK_DEBUG, watched without a getenv per kernel call (env_watch.c). */
typedef struct tackpy_env_watch {
    char **environ_seen; /* Borrowed: environ when the snapshot was taken */
    char **entries;      /* PyMem; environ_seen's entry pointers, NULL-terminated */
    size_t nentries, cap;
    const char *entry; /* Borrowed: TACK_DEBUG's entry in entries, or NULL */
} tackpy_env_watch;

typedef struct tackpy_state {
    PyTypeObject *Array_type;
    PyTypeObject *Device_type;
    PyTypeObject *DType_type;
    PyObject *dtypes[TACK_DTYPE_COUNT];  /* the tack.float32, ... singletons */
    PyObject *TackError;                 /* base of every Tack exception */
    PyObject *kind_exc[TACK_KIND_COUNT]; /* error kind -> exception class */
    PyObject *KernelError; /* SyntaxError subclass, raised by the front end */
    PyObject *numpy;       /* numpy module, imported on first use */
    /* DLPack binding: the arguments of __dlpack__(max_version=(1, 3)) (dlpack_py.c)
     * and the exchange-table lookups of recent producer types
     * (dlpack_exchange_py.c). */
    PyObject *dlpack_kw_max_version;        /* ("max_version",) */
    PyObject *dlpack_kw_max_version_stream; /* ("max_version", "stream") */
    PyObject *dlpack_max_version;           /* (1, 3) */
    tackpy_exchange_cache dlpack_cache[TACKPY_EXCHANGE_CACHE];
    int dlpack_cache_next;
    /* Imports that read a NumPy array's fields instead of its __dlpack__
     * (numpy_direct.c), for tack._tack._dlpack_stats(). */
    unsigned long long numpy_direct_imports;
    /* Imports that read a JAX array's buffer instead of its __dlpack__
     * (buffer_direct.c). */
    unsigned long long buffer_direct_imports;
    PyTypeObject *Kernel_type;          /* tack.Kernel (kernel_py.c) */
    PyObject *names[TACKPY_NAME_COUNT]; /* interned keyword names (args.c) */
    tackpy_env_watch debug_env;         /* TACK_DEBUG for kernel calls */
} tackpy_state;

typedef struct {
    PyObject_HEAD tack_array *arr; /* Owned reference */
    PyObject *weakreflist;
} tackpy_Array;

/* The C array of a tack.Array. Borrowed: valid while the object lives. */
#define TACKPY_ARR(self) (((tackpy_Array *)(self))->arr)

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
/* The state of the module that defined obj's type. */
static inline tackpy_state *
tackpy_state_of(PyObject *obj)
{
    return tackpy_state_of_type(Py_TYPE(obj));
}
/* The numpy module. Returns: borrowed reference, or NULL with an exception set. */
PyObject *tackpy_numpy(tackpy_state *st);

/* ---- env_watch.c -------------------------------------------------------------- */
/* Whether TACK_DEBUG is set, not empty and not "0" now (tack_kernel_debug_default's
 * answer), for a caller holding the GIL. */
bool tackpy_env_debug(tackpy_env_watch *w);
void tackpy_env_watch_free(tackpy_env_watch *w);

/* ---- errors.c ----------------------------------------------------------------- */
int tackpy_errors_init(PyObject *module, tackpy_state *st);
/* The one way a failure becomes an exception: the class of status's error kind.
 * tackpy_raise takes the runtime's last message (its remedy worded for Python);
 * tackpy_raise_fmt the binding's own (PyUnicode_FromFormat). Both return NULL, so a
 * failure reads `return tackpy_raise(st, status);`; the _int forms return -1. */
PyObject *tackpy_raise(tackpy_state *st, tack_status status);
PyObject *tackpy_raise_fmt(tackpy_state *st, tack_status status, const char *fmt, ...);
int tackpy_raise_int(tackpy_state *st, tack_status status);
int tackpy_raise_fmt_int(tackpy_state *st, tack_status status, const char *fmt, ...);
/* The builtin exception name of an error kind ("ValueError"), for the DLPack
 * exchange API's SetError. Static string. */
const char *tackpy_kind_builtin_name(tack_error_kind kind);

/* Whether Python can no longer be touched (finalized, or finalizing on another
 * thread): a release callback then leaks instead. */
int tackpy_python_gone(void);
/* A tack_release_fn for an object held by the arrays over its memory (its reference
 * is the ctx): dropped from any thread with the GIL taken, and leaked once Python is
 * gone. */
void tackpy_release_object(void *ctx);
/* An exporter's Py_buffer held by the arrays over its memory, allocated with
 * PyMem_RawMalloc; tackpy_release_buffer (a tack_release_fn, ctx the hold) releases
 * the view and frees the hold from any thread with the GIL taken, and leaks both once
 * Python is gone. */
typedef struct tackpy_buffer_hold {
    Py_buffer view;
} tackpy_buffer_hold;
void tackpy_release_buffer(void *ctx);

/* A stream= argument as DLPack's integer (its meaning is the runtime's rule): *given
 * false for None or no argument. 0, or -1 with DLPackError for what is not an int. */
int tackpy_stream_arg(tackpy_state *st, PyObject *stream, bool *given, int64_t *value);

/* An array over the memory an object describes with __cuda_array_interface__ (cai,
 * its value), keeping obj alive, as from_dlpack imports a kDLCUDA tensor: on
 * opts->device (borrowed, may be NULL: the default device when it is a CUDA device,
 * else cuda:0), copied when opts->copy asks. New reference, or NULL with an exception
 * (cuda_interface.c). */
PyObject *tackpy_from_cuda_array_interface(tackpy_state *st, PyObject *obj,
                                           PyObject *cai,
                                           const tack_dlpack_import_options *opts);

/* ---- args.c --------------------------------------------------------------------- */
/* A function's parameters, in order: the first npos_max may come by position, the
 * first npos_only only by position, the first nrequired must be given. */
typedef struct tackpy_signature {
    const char *fname;
    int nparams, npos_max, npos_only, nrequired;
    tackpy_name params[8];
} tackpy_signature;
/* Keywords a function with **options takes beyond its parameters. Borrowed. */
#define TACKPY_MAX_EXTRA 8
typedef struct tackpy_extra {
    Py_ssize_t n;
    PyObject *names[TACKPY_MAX_EXTRA];
    PyObject *values[TACKPY_MAX_EXTRA];
} tackpy_extra;
/* Interns TACKPY_NAME_LIST into st->names. Returns 0, or -1 with an exception. */
int tackpy_names_init(tackpy_state *st);
/* Parses a METH_FASTCALL | METH_KEYWORDS call: out[j] is the argument of parameter j
 * (borrowed) or NULL. pos_slots, when not NULL, gives the parameter of each
 * positional argument (for functions that read them by type); extra, when not NULL,
 * collects unknown keywords instead of refusing them. Returns 0, or -1 with a
 * TypeError (tack.TackTypeError) for an unknown or repeated keyword, too many
 * positionals or a missing argument. */
int tackpy_parse_slow(tackpy_state *st, const tackpy_signature *sig,
                      PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                      const int *pos_slots, PyObject **out, tackpy_extra *extra);
/* The common case inline (on the hot __dlpack__ and from_dlpack calls): positionals
 * in order and keywords that are the interned names themselves, each given once.
 * Anything else, errors included, is left to tackpy_parse_slow. */
static inline int
tackpy_parse(tackpy_state *st, const tackpy_signature *sig, PyObject *const *args,
             Py_ssize_t nargs, PyObject *kwnames, const int *pos_slots, PyObject **out,
             tackpy_extra *extra)
{
    if (pos_slots || extra || nargs > sig->npos_max) {
        return tackpy_parse_slow(st, sig, args, nargs, kwnames, pos_slots, out, extra);
    }
    for (int j = 0; j < sig->nparams; j++) {
        out[j] = j < nargs ? args[j] : NULL;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int j = sig->npos_only;
        while (j < sig->nparams && st->names[sig->params[j]] != key) {
            j++;
        }
        if (j == sig->nparams || out[j]) {
            return tackpy_parse_slow(st, sig, args, nargs, kwnames, pos_slots, out,
                                     extra);
        }
        out[j] = args[nargs + k];
    }
    for (int j = 0; j < sig->nrequired; j++) {
        if (!out[j]) {
            return tackpy_parse_slow(st, sig, args, nargs, kwnames, pos_slots, out,
                                     extra);
        }
    }
    return 0;
}
/* Parses a shape: an int or a sequence of ints. Returns ndim, or -1 with an
 * exception set. */
int tackpy_parse_shape(tackpy_state *st, PyObject *obj, int64_t *shape);
/* As tackpy_raise; a TACK_ERR_COMPILE with a compiler log (may be NULL) raises
 * CompileError with the message, a colon and the log. */
PyObject *tackpy_raise_compile(tackpy_state *st, tack_status status, const char *log);

/* ---- dtype_type.c ------------------------------------------------------------- */
int tackpy_dtype_init(PyObject *module, tackpy_state *st);
/* Reads a dtype from a tack dtype, a name ("float32", "f32"), a NumPy dtype or type.
 * Returns 0 and sets *out, or -1 with TypeError set. */
int tackpy_dtype_from_object(tackpy_state *st, PyObject *obj, tack_dtype *out);
/* Returns: borrowed reference to the singleton. */
PyObject *tackpy_dtype_object(tackpy_state *st, tack_dtype dtype);
/* The numpy.dtype of a Tack dtype (vec types: a float32 subarray). Returns: new
 * reference, or NULL with an exception (NumPy missing). */
PyObject *tackpy_dtype_to_numpy(tackpy_state *st, tack_dtype dtype);

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

/* ---- runtime_copies.c, c_api.c ----------------------------------------------- */
/* 0 when the process has one libtack for the extension; -1 with ImportError. */
int tackpy_runtime_check(void);
/* tack._tack._runtime_library(): the path of the libtack the extension calls. */
PyObject *tackpy_runtime_library_fn(PyObject *module, PyObject *unused);
/* 0 when host_version is the runtime's own tack_version; -1 with ImportError. */
int tackpy_check_runtime_of_host(const char *(*host_version)(void));
/* Adds the capsule of tack/python.h to the module. */
int tackpy_c_api_init(PyObject *module);

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
/* tack.array(obj, dtype_obj) on dev (borrowed, not NULL): a new array holding a copy
 * of obj's host data, NumPy's help taken for strides and byte order. */
PyObject *tackpy_array_from_host(tackpy_state *st, PyObject *obj, PyObject *dtype_obj,
                                 tack_device *dev);
PyObject *tackpy_copyto_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);

/* ---- dlpack_py.c --------------------------------------------------------------- */
int tackpy_dlpack_init(PyObject *module, tackpy_state *st);
PyObject *tackpy_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);
PyObject *tackpy_array_dlpack_device(PyObject *self, PyObject *unused);
PyObject *tackpy_from_dlpack_fn(PyObject *module, PyObject *const *args,
                                Py_ssize_t nargs, PyObject *kwnames);
/* tack._tack._dlpack_stats(): the import counters, for tests. */
PyObject *tackpy_dlpack_stats_fn(PyObject *module, PyObject *unused);

/* ---- numpy_direct.c ------------------------------------------------------------- */
/* Whether tp is NumPy's own ndarray type (named so by NumPy's C-API table, ABI 1 or
 * 2), whose arrays tackpy_numpy_direct_import may read. */
bool tackpy_numpy_direct_type(PyTypeObject *tp);
/* tack.from_dlpack(x) for x of such a type, without x.__dlpack__: 1 with *result the
 * new array or NULL with the import's exception; 0 (nothing done, nothing set) when x
 * is not the common case and __dlpack__ must be asked instead. */
int tackpy_numpy_direct_import(tackpy_state *st, PyObject *x,
                               const tack_dlpack_import_options *opts,
                               PyObject **result);

/* ---- buffer_direct.c ------------------------------------------------------------- */
/* tack.from_dlpack(x) for x of a type whose arrays are immutable by contract (JAX's),
 * through its buffer protocol instead of x.__dlpack__: 1 with *result the new array
 * or NULL with the import's exception; 0 (nothing done, nothing set) when x exports
 * no buffer Tack reads this way (a GPU array, an unknown format) and __dlpack__ must
 * be asked instead. */
int tackpy_buffer_direct_import(tackpy_state *st, PyObject *x,
                                const tack_dlpack_import_options *opts,
                                PyObject **result);

/* ---- dlpack_exchange_py.c -------------------------------------------------------- */
/* Publishes Tack's exchange table on tack.Array (still mutable). */
int tackpy_exchange_init(PyObject *module, tackpy_state *st);
/* The exchange table of a producer type, or NULL, whether its arrays are immutable
 * by contract (imported read-only), and whether they live in host memory only (no
 * stream to ask for, no __dlpack_device__ to call); cached per type version. */
const DLPackExchangeAPI *tackpy_exchange_api_of(tackpy_state *st, PyTypeObject *tp,
                                                bool *immutable, bool *host_only,
                                                bool *numpy_direct);
/* Whether the producer may still have work pending on the tensor's device that Tack
 * cannot order after (tack_dlpack_exchange_pending_work). */
int tackpy_exchange_pending_work(const DLPackExchangeAPI *api,
                                 const DLManagedTensorVersioned *mt);

/* ---- array_from_ptr.c ------------------------------------------------------------ */
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
/* arr's shape as NumPy sees its scalars (vec types add a component axis). New
 * reference, or NULL with an exception set. */
PyObject *tackpy_scalar_shape(const tack_array *arr);
/* A new NumPy array holding a copy of arr. New reference. */
PyObject *tackpy_array_to_numpy(tackpy_state *st, const tack_array *arr,
                                PyObject *dtype);

/* ---- scalars.c ------------------------------------------------------------------ */
/* Converts a Python scalar (bool, int, float, or a sequence for vec types) into one
 * element of dtype at out (at least 16 bytes), by the runtime's rules. Returns 0, or
 * -1 with OverflowError or TypeError set. */
int tackpy_scalar_to_element(tackpy_state *st, PyObject *obj, tack_dtype dtype,
                             void *out);
/* One element at p as a Python object (a tuple for vec types). New reference. */
PyObject *tackpy_element_to_object(const void *p, tack_dtype dtype);
/* NumPy's bool scalar (numpy.bool; numpy.bool_ before NumPy 2), told by its type's
 * name, so that it is a bool and not the float its __float__ would make it. */
bool tackpy_is_numpy_bool(PyObject *obj);
/* A complex number: Python's complex or a type with __complex__ (NumPy's complex
 * scalars). Tack has no complex dtype, and __float__ of a NumPy complex drops the
 * imaginary part with only a warning, so these are refused before any conversion. */
bool tackpy_is_complex(PyObject *obj);

/* ---- nvrtc_py.c -------------------------------------------------------------------
 */
PyObject *tackpy_nvrtc_compile_fn(PyObject *module, PyObject *const *args,
                                  Py_ssize_t nargs, PyObject *kwnames);
PyObject *tackpy_nvrtc_version_fn(PyObject *module, PyObject *unused);
PyObject *tackpy_nvrtc_supports_fn(PyObject *module, PyObject *arg);
PyObject *tackpy_nvrtc_stats_fn(PyObject *module, PyObject *unused);
PyObject *tackpy_rtc_cache_get_fn(PyObject *module, PyObject *const *args,
                                  Py_ssize_t nargs);
PyObject *tackpy_rtc_cache_put_fn(PyObject *module, PyObject *const *args,
                                  Py_ssize_t nargs);

/* ---- kernel_request_py.c -----------------------------------------------------------
 */

/* A build request for tack_kernel_build_request, with what keeps its strings alive. */
typedef struct tackpy_kernel_request {
    tack_kernel_request req;
    PyObject *source, *twin_source, *names, *image; /* Owned; NULL for a str source */
    const char **strings; /* Owned (PyMem): the names' UTF-8 */
} tackpy_kernel_request;

/* Fills *r from source: C source (a str: source alone) or an object with a
 * BuildRequest's attributes. Returns 0 (release with tackpy_kernel_request_clear once
 * the build returned), or -1 with an exception and nothing to release. */
int tackpy_kernel_request_from(tackpy_state *st, PyObject *source,
                               tackpy_kernel_request *r);
void tackpy_kernel_request_clear(tackpy_kernel_request *r);

/* ---- kernel_py.c ------------------------------------------------------------------
 */
int tackpy_kernel_init(PyObject *module, tackpy_state *st);
PyObject *tackpy_kernel_build_fn(PyObject *module, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *kwnames);
PyObject *tackpy_kernel_stats_fn(PyObject *module, PyObject *unused);

#endif /* TACKPY_H */

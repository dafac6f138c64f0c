/*
 * kernel_py.c: tack._tack.Kernel, the object @tack.kernel returns, and the
 * functions the kernel front end calls.
 *
 * A call goes straight from the interpreter into kernel_vectorcall: bind the
 * arguments, run the runtime's checks (devices, memory domains, read-only arrays
 * bound to stored parameters), make the specialization key with the runtime's
 * functions ((dtype, ndim) per array, kind per scalar, then the debug mode: fixed by
 * the decorator or, when it said nothing, TACK_DEBUG read at this call; then the
 * backend), find it in a small table, then launch on the arrays' device with the GIL
 * released (the runtime hands the launch to that device's backend; the restrict body
 * when it finds no stored array overlapping another) and convert what the kernel
 * returns. Only a miss calls back into Python: the front end spells the kernel for
 * the key's backend and builds it with _kernel_build(..., backend). The table is
 * touched only with the GIL held; launches use only the runtime's kernel pointer, which
 * lives for the whole process.
 */
#include "tackpy.h"
#include <string.h>

#include <structmember.h>

/* The key words (kernel.h); KEY_FLOAT32: a NumPy float32 (or float16) scalar, which
 * keeps its type in the kernel as in NumPy 2; its value travels as a double (exact).
 * A key row is nparams argument words, then the debug mode and the backend. */
enum {
    KEY_INT = TACK_KERNEL_KEY_INT,
    KEY_FLOAT = TACK_KERNEL_KEY_FLOAT,
    KEY_BOOL = TACK_KERNEL_KEY_BOOL,
    KEY_FLOAT32 = TACK_KERNEL_KEY_FLOAT32,
    KEY_ARRAY = TACK_KERNEL_KEY_ARRAY,
    KEY_TAIL = 2
};

/* NumPy's float32 and float16 scalar types, by name: no NumPy import needed, and
 * the test costs only calls that pass such a scalar. */
static bool
is_numpy_float32(PyObject *obj)
{
    const char *name = Py_TYPE(obj)->tp_name;
    return strcmp(name, "numpy.float32") == 0 || strcmp(name, "numpy.float16") == 0;
}

typedef struct {
    PyObject_HEAD vectorcallfunc vectorcall;
    PyObject *dict;
    PyObject *weakreflist;
    PyObject *compile;    /* the front end: compile(signature, debug, backend) */
    PyObject *name;       /* str */
    PyObject *params;     /* tuple of str */
    const char *cname;    /* Borrowed: UTF-8 of name */
    const char **cparams; /* PyMem; Borrowed strings: UTF-8 of params */
    bool *stored;         /* PyMem; stored[k]: the kernel may store to parameter k */
    bool *read_first;     /* PyMem; read_first[k]: read before the parallel loop */
    bool any_read_first;
    int nparams;
    int debug;    /* debug= as 0 or 1; -1: TACK_DEBUG at each call */
    int parallel; /* whether the outer loop runs in parallel; -1: not said */
    int nspecs, cap;
    uint32_t *keys;        /* PyMem; nspecs rows of nparams + KEY_TAIL words */
    tack_kernel **kernels; /* PyMem; nspecs; Borrowed: live for the process */
} tackpy_Kernel;

#define CAPSULE_NAME "tack.kernel"

/* ---- construction ---------------------------------------------------------------- */

static PyObject *
kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"name",  "params",   "stored",     "compile",
                         "debug", "parallel", "read_first", NULL};
    PyObject *name, *params, *stored, *compile, *debug = Py_None, *parallel = Py_None;
    PyObject *read_first = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UO!O!O|O$OO!:Kernel", kw, &name,
                                     &PyTuple_Type, &params, &PyTuple_Type, &stored,
                                     &compile, &debug, &parallel, &PyTuple_Type,
                                     &read_first)) {
        return NULL;
    }
    int debug_mode = -1, parallel_loop = -1;
    if (debug != Py_None && (debug_mode = PyObject_IsTrue(debug)) < 0) {
        return NULL;
    }
    if (parallel != Py_None && (parallel_loop = PyObject_IsTrue(parallel)) < 0) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(params);
    if (n > TACK_KERNEL_MAX_PARAMS || PyTuple_GET_SIZE(stored) != n ||
        (read_first && PyTuple_GET_SIZE(read_first) != n)) {
        PyErr_Format(PyExc_ValueError,
                     "a kernel takes at most %d parameters, with one stored flag (and "
                     "one read_first flag) each",
                     TACK_KERNEL_MAX_PARAMS);
        return NULL;
    }
    tackpy_Kernel *self = (tackpy_Kernel *)type->tp_alloc(type, 0);
    if (!self) {
        return NULL;
    }
    self->vectorcall = NULL;
    self->compile = Py_NewRef(compile);
    self->name = Py_NewRef(name);
    self->params = Py_NewRef(params);
    self->nparams = (int)n;
    self->debug = debug_mode;
    self->parallel = parallel_loop;
    self->cname = PyUnicode_AsUTF8(name);
    self->cparams = PyMem_Calloc((size_t)n + 1, sizeof(char *));
    self->stored = PyMem_Calloc((size_t)n + 1, sizeof(bool));
    self->read_first = PyMem_Calloc((size_t)n + 1, sizeof(bool));
    if (!self->cname || !self->cparams || !self->stored || !self->read_first) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *p = PyTuple_GET_ITEM(params, k);
        self->cparams[k] = PyUnicode_Check(p) ? PyUnicode_AsUTF8(p) : NULL;
        int truth = PyObject_IsTrue(PyTuple_GET_ITEM(stored, k));
        if (!self->cparams[k] || truth < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "parameter names must be str");
            }
            Py_DECREF(self);
            return NULL;
        }
        self->stored[k] = truth;
        int first = read_first ? PyObject_IsTrue(PyTuple_GET_ITEM(read_first, k)) : 0;
        if (first < 0) {
            Py_DECREF(self);
            return NULL;
        }
        self->read_first[k] = first;
        self->any_read_first |= first != 0;
    }
    return (PyObject *)self;
}

static int
kernel_traverse(PyObject *self, visitproc visit, void *arg)
{
    tackpy_Kernel *kp = (tackpy_Kernel *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(kp->dict);
    Py_VISIT(kp->compile);
    Py_VISIT(kp->name);
    Py_VISIT(kp->params);
    return 0;
}

static int
kernel_clear(PyObject *self)
{
    tackpy_Kernel *kp = (tackpy_Kernel *)self;
    Py_CLEAR(kp->dict);
    Py_CLEAR(kp->compile);
    return 0;
}

static void
kernel_dealloc(PyObject *self)
{
    tackpy_Kernel *kp = (tackpy_Kernel *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (kp->weakreflist) {
        PyObject_ClearWeakRefs(self);
    }
    kernel_clear(self);
    Py_CLEAR(kp->name);
    Py_CLEAR(kp->params);
    PyMem_Free(kp->cparams);
    PyMem_Free(kp->stored);
    PyMem_Free(kp->read_first);
    PyMem_Free(kp->keys);
    PyMem_Free(kp->kernels);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* ---- the call ---------------------------------------------------------------------
 */

/* Puts positional and keyword arguments in parameter order. The keyword `stream`,
 * which the front end refuses as a parameter name, is the launch's stream= (Borrowed
 * in *stream; NULL when not given). */
static int
bind(tackpy_Kernel *kp, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
     PyObject **out, PyObject **stream)
{
    if (nargs > kp->nparams) {
        PyErr_Format(PyExc_TypeError,
                     "kernel '%s' takes %d arguments but %zd were given", kp->cname,
                     kp->nparams, nargs);
        return -1;
    }
    for (int k = 0; k < kp->nparams; k++) {
        out[k] = k < nargs ? args[k] : NULL;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *kwname = PyTuple_GET_ITEM(kwnames, j);
        int k = 0;
        for (; k < kp->nparams; k++) {
            int eq = PyUnicode_Compare(kwname, PyTuple_GET_ITEM(kp->params, k)) == 0;
            if (eq) {
                break;
            }
        }
        /* out[0..nparams) was set above; the analyzer cannot see nparams' bound. */
        if (k == kp->nparams && !*stream &&
            PyUnicode_CompareWithASCIIString(kwname, "stream") == 0) {
            *stream = args[nargs + j];
            continue;
        }
        // NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Branch)
        if (k == kp->nparams || out[k]) {
            PyErr_Format(PyExc_TypeError, "kernel '%s' got %s argument '%U'", kp->cname,
                         k == kp->nparams ? "an unexpected keyword" : "a repeated",
                         kwname);
            return -1;
        }
        out[k] = args[nargs + j];
    }
    for (int k = 0; k < kp->nparams; k++) {
        if (!out[k]) {
            PyErr_Format(PyExc_TypeError, "kernel '%s' is missing argument '%s'",
                         kp->cname, kp->cparams[k]);
            return -1;
        }
    }
    return 0;
}

/* The state of the module that made the kernel's type. Never cached in the kernel:
 * the type holds its module, so the state lives as long as the kernel, but its
 * members are cleared when the garbage collector breaks a cycle through the module
 * (at shutdown), and a kernel may still be called from a finalizer then. Returns
 * NULL with RuntimeError set in that case. */
static tackpy_state *
kernel_state(tackpy_Kernel *kp)
{
    /* The type cannot be subclassed: Py_TYPE is the heap type made with the
     * module, whose state PyType_GetModuleState reads without a search. */
    tackpy_state *st = PyType_GetModuleState(Py_TYPE(kp));
    if (!st || !st->Array_type || !st->TackError) {
        PyErr_Format(PyExc_RuntimeError,
                     "kernel '%s' cannot run: the tack module it was made by has "
                     "been cleared (the interpreter is shutting down)",
                     kp->cname);
        return NULL;
    }
    return st;
}

/* Reads one argument into its key, its launch slot and its array (or NULL). */
static int
read_arg(tackpy_state *st, tackpy_Kernel *kp, int k, PyObject *obj, uint32_t *key,
         tack_kernel_arg *arg, const tack_array **array)
{
    *array = NULL;
    if (Py_IS_TYPE(obj, st->Array_type)) {
        tack_array *a = ((tackpy_Array *)obj)->arr;
        *key = tack_kernel_key_array(a);
        arg->data = tack_array_data(a);
        arg->shape = tack_array_shape(a);
        *array = a;
        return 0;
    }
    if (PyBool_Check(obj) || tackpy_is_numpy_bool(obj)) {
        int truth = PyObject_IsTrue(obj);
        if (truth < 0) {
            return -1;
        }
        *key = KEY_BOOL;
        arg->i = truth;
        return 0;
    }
    if (PyFloat_Check(obj)) {
        *key = KEY_FLOAT;
        arg->f = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    if (!PyLong_Check(obj) && PyObject_HasAttrString(obj, "__dlpack__")) {
        /* A NumPy array (0-d too), a torch tensor...: never read as a number. */
        PyErr_Format(PyExc_TypeError,
                     "kernel '%s': argument '%s' must be a tack.Array, an int, a float "
                     "or a bool, not %.100s; convert it with tack.array(x) (a copy) or "
                     "tack.from_dlpack(x) (shares its memory)",
                     kp->cname, kp->cparams[k], Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyLong_Check(obj) || PyIndex_Check(obj)) {
        PyObject *index = PyNumber_Index(obj);
        if (!index) {
            return -1;
        }
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
        Py_DECREF(index);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError,
                         "kernel '%s': argument '%s' does not fit in int64", kp->cname,
                         kp->cparams[k]);
            return -1;
        }
        *key = KEY_INT;
        arg->i = v;
        return 0;
    }
    if (PyNumber_Check(obj) && !tackpy_is_complex(obj)) {
        double v = PyFloat_AsDouble(obj); /* NumPy float32 and friends */
        if (!(v == -1.0 && PyErr_Occurred())) {
            *key = is_numpy_float32(obj) ? KEY_FLOAT32 : KEY_FLOAT;
            arg->f = v;
            return 0;
        }
        /* np.timedelta64, np.datetime64: numbers without a real value (TypeError) get
         * the message below; any other failure is the object's own. */
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear();
    }
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "kernel '%s': argument '%s' is a %s; wrap it with tack.array(x) "
                     "to pass its values as an array",
                     kp->cname, kp->cparams[k], PyList_Check(obj) ? "list" : "tuple");
        return -1;
    }
    PyErr_Format(PyExc_TypeError,
                 "kernel '%s': argument '%s' must be a tack.Array, an int, a float or "
                 "a bool, not %.100s",
                 kp->cname, kp->cparams[k], Py_TYPE(obj)->tp_name);
    return -1;
}

/* The signature the front end compiles for: one entry per parameter,
 * ("array", dtype name, ndim) or "int" / "float" / "bool". */
static PyObject *
signature_of(tackpy_Kernel *kp, const uint32_t *key)
{
    PyObject *sig = PyTuple_New(kp->nparams);
    for (int k = 0; sig && k < kp->nparams; k++) {
        PyObject *item;
        if (key[k] & KEY_ARRAY) {
            tack_dtype dt = (tack_dtype)((key[k] >> 8) & 0xff);
            item = Py_BuildValue("(ssi)", "array", tack_dtype_get(dt)->name,
                                 (int)(key[k] & 0xff));
        }
        else {
            item = PyUnicode_FromString(key[k] == KEY_INT       ? "int"
                                        : key[k] == KEY_FLOAT   ? "float"
                                        : key[k] == KEY_FLOAT32 ? "float32"
                                                                : "bool");
        }
        if (!item) {
            Py_CLEAR(sig);
            break;
        }
        PyTuple_SET_ITEM(sig, k, item);
    }
    return sig;
}

/* Whether this call builds the checked variant. An environment variable set from
 * Python (os.environ, monkeypatch.setenv) reaches the C environment, where the
 * module's watcher sees it (env_watch.c); the GIL orders it with such writes. */
static uint32_t
debug_of_call(tackpy_state *st, const tackpy_Kernel *kp)
{
    if (kp->debug >= 0) {
        return (uint32_t)kp->debug;
    }
    return tackpy_env_debug(&st->debug_env);
}

static tack_kernel *
find_spec(tackpy_Kernel *kp, const uint32_t *key)
{
    size_t width = (size_t)kp->nparams + KEY_TAIL;
    size_t row = width * sizeof(uint32_t);
    for (int s = 0; s < kp->nspecs; s++) {
        if (memcmp(kp->keys + (size_t)s * width, key, row) == 0) {
            return kp->kernels[s];
        }
    }
    return NULL;
}

/* A miss: the front end compiles the specialization for the key's backend (it raises
 * KernelError, CompileError or TypeError, again on every later call with the same
 * key); the build is kept only once the runtime has checked it against the call. */
static tack_kernel *
compile_spec(tackpy_state *st, tackpy_Kernel *kp, const uint32_t *key)
{
    PyObject *sig = signature_of(kp, key);
    if (!sig) {
        return NULL;
    }
    PyObject *capsule = PyObject_CallFunction(kp->compile, "(OOI)", sig,
                                              key[kp->nparams] ? Py_True : Py_False,
                                              (unsigned int)key[kp->nparams + 1]);
    Py_DECREF(sig);
    if (!capsule) {
        return NULL;
    }
    tack_kernel *k = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    Py_DECREF(capsule);
    if (!k) {
        return NULL;
    }
    /* compile is any callable: a build of another signature would be launched over
     * this call's arguments, and stored flags that hide a store would have let a
     * read-only array through. Nothing is kept unless the build is the call's. */
    tack_status status = tack_kernel_check_build(k, kp->cname, kp->nparams, kp->cparams,
                                                 key, kp->stored);
    if (status != TACK_OK) {
        tackpy_raise(st, status);
        return NULL;
    }
    tack_kernel *again = find_spec(kp, key); /* another thread got there first */
    if (again) {
        return again;
    }
    size_t width = (size_t)kp->nparams + KEY_TAIL;
    if (kp->nspecs == kp->cap) {
        int cap = kp->cap ? kp->cap * 2 : 4;
        uint32_t *keys = PyMem_Realloc(kp->keys, (size_t)cap * width * sizeof *keys);
        if (!keys) {
            PyErr_NoMemory();
            return NULL;
        }
        kp->keys = keys;
        tack_kernel **kernels =
            PyMem_Realloc(kp->kernels, (size_t)cap * sizeof(tack_kernel *));
        if (!kernels) {
            PyErr_NoMemory();
            return NULL;
        }
        kp->kernels = kernels;
        kp->cap = cap;
    }
    memcpy(kp->keys + (size_t)kp->nspecs * width, key, width * sizeof *key);
    kp->kernels[kp->nspecs++] = k;
    return k;
}

/* tack_kernel_lock's hooks over the GIL; ctx holds the thread state meanwhile. */
static void
drop_gil(void *ctx)
{
    *(PyThreadState **)ctx = PyEval_SaveThread();
}

static void
take_gil(void *ctx)
{
    PyEval_RestoreThread(*(PyThreadState **)ctx);
}

static PyObject *
kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                  PyObject *kwnames)
{
    tackpy_Kernel *kp = (tackpy_Kernel *)self;
    tackpy_state *st = kernel_state(kp);
    if (!st) {
        return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *bound[TACK_KERNEL_MAX_PARAMS];
    PyObject *const *argv = args;
    PyObject *stream = NULL;
    bool on_stream = false;
    int64_t stream_value = -1;
    if (kwnames || nargs != kp->nparams) {
        if (bind(kp, args, nargs, kwnames, bound, &stream) < 0 ||
            tackpy_stream_arg(st, stream, &on_stream, &stream_value) < 0) {
            return NULL;
        }
        argv = bound;
    }
    uint32_t key[TACK_KERNEL_MAX_PARAMS + KEY_TAIL];
    tack_kernel_arg targs[TACK_KERNEL_MAX_PARAMS];
    const tack_array *arrays[TACK_KERNEL_MAX_PARAMS];
    for (int k = 0; k < kp->nparams; k++) {
        if (read_arg(st, kp, k, argv[k], &key[k], &targs[k], &arrays[k]) < 0) {
            return NULL;
        }
    }
    /* Devices, memory domains and read-only arrays first: a launch that cannot run
     * compiles nothing. */
    tack_status status = tack_kernel_check_arrays(kp->cname, kp->nparams, arrays,
                                                  kp->cparams, kp->stored);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    unsigned flags = tack_kernel_args_disjoint(kp->nparams, arrays, kp->stored)
                         ? TACK_KERNEL_NOALIAS
                         : 0;
    if (!flags && kp->any_read_first) {
        status = tack_kernel_check_read_first(kp->cname, kp->nparams, arrays,
                                              kp->cparams, kp->read_first, kp->stored);
        if (status != TACK_OK) {
            return tackpy_raise(st, status);
        }
    }
    tack_kernel_key_tail(kp->nparams, arrays, debug_of_call(st, kp) != 0,
                         key + kp->nparams);
    tack_kernel *kernel = find_spec(kp, key);
    if (!kernel && !(kernel = compile_spec(st, kp, key))) {
        return NULL;
    }
    tack_kernel_value value = {TACK_KERNEL_RESULT_NONE, 0, 0.0};
    if (tack_kernel_args_shared(kp->nparams, arrays)) {
        flags |= TACK_KERNEL_SHARED;
    }
    /* The launch goes to the backend of the arrays' device (the checks above made
     * it one); a kernel of scalars alone runs where its key says, on the CPU. */
    tack_device *device = NULL;
    for (int k = 0; k < kp->nparams && !device; k++) {
        device = arrays[k] ? tack_array_device(arrays[k]) : NULL;
    }
    /* The GIL is the caller's lock: the runtime drops it around every launch that
     * may take long and keeps it over a short CPU one. */
    PyThreadState *saved = NULL;
    tack_kernel_lock gil = {drop_gil, take_gil, &saved};
    tack_kernel_set_caller_lock(&gil);
    status = on_stream ? tack_kernel_launch_on_stream(device, kernel, targs, flags,
                                                      stream_value, &value)
                       : tack_kernel_launch_on(device, kernel, targs, flags, &value);
    tack_kernel_set_caller_lock(NULL);
    if (status != TACK_OK) {
        return tackpy_raise(st, status);
    }
    switch (value.kind) {
    case TACK_KERNEL_RESULT_INT: return PyLong_FromLongLong(value.i);
    case TACK_KERNEL_RESULT_FLOAT: return PyFloat_FromDouble(value.f);
    case TACK_KERNEL_RESULT_BOOL: return PyBool_FromLong(value.i != 0);
    default: Py_RETURN_NONE;
    }
}

static PyObject *
kernel_get_nspecs(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(((tackpy_Kernel *)self)->nspecs);
}

static PyObject *
kernel_get_parallel(PyObject *self, void *c)
{
    (void)c;
    int parallel = ((tackpy_Kernel *)self)->parallel;
    return parallel < 0 ? Py_NewRef(Py_None) : PyBool_FromLong(parallel);
}

static PyObject *
kernel_repr(PyObject *self)
{
    const tackpy_Kernel *kp = (const tackpy_Kernel *)self;
    const char *how = kp->parallel > 0    ? " (parallel loop)"
                      : kp->parallel == 0 ? " (serial)"
                                          : "";
    return PyUnicode_FromFormat("<tack.kernel %U%s>", kp->name, how);
}

static PyGetSetDef kernel_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"_nspecializations", kernel_get_nspecs, NULL,
     "How many specializations this kernel has compiled or loaded.", NULL},
    {"parallel", kernel_get_parallel, NULL,
     "Whether the kernel's outer loop runs in parallel (None: not said).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(tackpy_Kernel, vectorcall), READONLY,
     NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(tackpy_Kernel, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(tackpy_Kernel, weakreflist), READONLY,
     NULL},
    {"name", T_OBJECT, offsetof(tackpy_Kernel, name), READONLY, "The kernel's name."},
    {"params", T_OBJECT, offsetof(tackpy_Kernel, params), READONLY,
     "The parameter names."},
    {"compile", T_OBJECT, offsetof(tackpy_Kernel, compile), READONLY,
     "The front end's compile(signature, debug, backend) callable."},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *
kernel_init_vectorcall(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *self = kernel_new(type, args, kwargs);
    if (self) {
        ((tackpy_Kernel *)self)->vectorcall = kernel_vectorcall;
    }
    return self;
}

static PyType_Slot kernel_slots[] = {
    {Py_tp_new, kernel_init_vectorcall},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, kernel_repr},
    {Py_tp_getset, kernel_getset},
    {Py_tp_members, kernel_members},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_doc,
     "Kernel(name, params, stored, compile, debug=None, *, parallel=None, "
     "read_first=None)\n--\n\n"
     "A compiled kernel: what @tack.kernel returns. Calling it launches the kernel; "
     "compile(signature, debug, backend) is called once per new argument signature, "
     "debug mode and backend (a DLPack device type), and what it returns runs only "
     "if it is the build of that call. stored: per parameter, whether the kernel "
     "stores to it. debug=None reads TACK_DEBUG at each call. parallel: whether the "
     "outer loop runs in parallel, for repr (None: not said). read_first: per "
     "parameter, whether a parallel kernel reads it before its loop (such an array "
     "overlapping a stored one is refused at each call)."},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "tack.Kernel",
    .basicsize = sizeof(tackpy_Kernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = kernel_slots,
};

/* ---- functions for the front end ------------------------------------------------- */

PyObject *
tackpy_kernel_build_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames)
{
    tackpy_state *st = PyModule_GetState(module);
    static const tackpy_signature sig = {"_kernel_build",
                                         4,
                                         4,
                                         0,
                                         3,
                                         {TACKPY_NAME_name, TACKPY_NAME_filename,
                                          TACKPY_NAME_source, TACKPY_NAME_backend}};
    PyObject *a[4];
    if (tackpy_parse(st, &sig, args, nargs, kwnames, NULL, a, NULL) < 0) {
        return NULL;
    }
    int backend = kDLCPU;
    if (a[3]) {
        long v = PyLong_Check(a[3]) ? PyLong_AsLong(a[3]) : -1;
        if (v == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (v < 0 || v > INT32_MAX) {
            PyErr_SetString(PyExc_TypeError,
                            "backend must be a DLPack device type (an int >= 0)");
            return NULL;
        }
        backend = (int)v;
    }
    const char *name = PyUnicode_Check(a[0]) ? PyUnicode_AsUTF8(a[0]) : NULL;
    const char *filename = PyUnicode_Check(a[1]) ? PyUnicode_AsUTF8(a[1]) : NULL;
    if (!name || !filename) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "name and filename must be str");
        }
        return NULL;
    }
    tackpy_kernel_request req;
    if (tackpy_kernel_request_from(st, a[2], &req) < 0) {
        return NULL;
    }
    tack_kernel *k = NULL;
    char *log = NULL;
    tack_status status;
    Py_BEGIN_ALLOW_THREADS
        status = tack_kernel_build_request(backend, name, filename, &req.req, &k, &log);
    Py_END_ALLOW_THREADS
    tackpy_kernel_request_clear(&req);
    /* Said once per process: the cache folder could not be used. */
    const char *notice = tack_kernel_cache_notice();
    if (notice && PyErr_WarnEx(PyExc_RuntimeWarning, notice, 1) < 0) {
        tack_kernel_log_free(log);
        return NULL;
    }
    if (status != TACK_OK) {
        tackpy_raise_compile(st, status, log);
        tack_kernel_log_free(log);
        return NULL;
    }
    return PyCapsule_New(k, CAPSULE_NAME, NULL);
}

PyObject *
tackpy_kernel_stats_fn(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    tack_kernel_stats s;
    tack_kernel_get_stats(&s);
    return Py_BuildValue(
        "{sKsKsKsKsKsKsKsKsKsKsi}", "compiles", (unsigned long long)s.compiles,
        "disk_hits", (unsigned long long)s.disk_hits, "memory_hits",
        (unsigned long long)s.memory_hits, "rebuilds", (unsigned long long)s.rebuilds,
        "failures", (unsigned long long)s.failures, "parallel_launches",
        (unsigned long long)s.parallel_launches, "serial_launches",
        (unsigned long long)s.serial_launches, "restrict_launches",
        (unsigned long long)s.restrict_launches, "plain_atomic_launches",
        (unsigned long long)s.plain_atomic_launches, "privatized_launches",
        (unsigned long long)s.privatized_launches, "num_threads",
        tack_kernel_num_threads());
}

/* The dtype facts the kernel front end needs, from the one dtype table: a tuple of
 * (name, alias, C element type, item size, components, class, bits of the scalar). */
static PyObject *
dtype_facts(void)
{
    PyObject *rows = PyTuple_New(TACK_DTYPE_COUNT);
    Py_ssize_t k = 0;
#define TACKPY__FACT(e, name, alias, ctype, size, code, bits, ncomp, np, cls, sc)    \
    if (rows) {                                                                      \
        PyObject *row = Py_BuildValue("(sssiiCi)", name, alias, #ctype, (int)(size), \
                                      (int)(ncomp), (int)(cls), (int)(bits));        \
        if (!row) {                                                                  \
            Py_CLEAR(rows);                                                          \
        }                                                                            \
        else {                                                                       \
            PyTuple_SET_ITEM(rows, k++, row);                                        \
        }                                                                            \
    }
    TACK_DTYPE_LIST(TACKPY__FACT)
#undef TACKPY__FACT
    return rows;
}

int
tackpy_kernel_init(PyObject *module, tackpy_state *st)
{
    st->Kernel_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &kernel_spec, NULL);
    if (!st->Kernel_type || PyModule_AddType(module, st->Kernel_type) < 0) {
        return -1;
    }
    /* What Python code writes into generated code or compares with, and must not
     * restate: the ABI, the failure codes of the launch record and the DLPack
     * device types (by their dlpack.h names). */
    static const struct {
        const char *name;
        long value;
    } constants[] = {
        {"_KERNEL_ABI", TACK_KERNEL_ABI},
        {"_KERNEL_MAX_PARTIAL_SIZE", TACK_KERNEL_MAX_PARTIAL_SIZE},
        {"_KERNEL_FAIL_INDEX", TACK_KERNEL_FAIL_INDEX},
        {"_KERNEL_FAIL_ZERO_DIVISION", TACK_KERNEL_FAIL_ZERO_DIVISION},
        {"kDLCPU", kDLCPU},
        {"kDLCUDA", kDLCUDA},
        {"kDLCUDAHost", kDLCUDAHost},
        {"kDLROCM", kDLROCM},
        {"kDLROCMHost", kDLROCMHost},
        {"kDLOneAPI", kDLOneAPI},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
        if (PyModule_AddIntConstant(module, constants[i].name, constants[i].value) <
            0) {
            return -1;
        }
    }
    PyObject *facts = dtype_facts();
    int rc = facts ? PyModule_AddObjectRef(module, "_DTYPE_FACTS", facts) : -1;
    Py_XDECREF(facts);
    return rc;
}

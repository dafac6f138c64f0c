/*
 * errors.c: Tack's exception classes and the one way a status becomes an exception.
 *
 * Each error kind has one class deriving from tack.TackError and from the builtin
 * docs/errors.md lists for it; DLPack refusals also derive from BufferError, so
 * Array API consumers that catch BufferError see them.
 */
#include "tackpy.h"
#include <stdarg.h>

typedef struct {
    tack_error_kind kind;
    const char *name; /* attribute of the tack module */
    const char *doc;
} kind_class;

static const kind_class kind_classes[] = {
    {TACK_KIND_VALUE, "TackValueError", "A bad value: shape, option, layout."},
    {TACK_KIND_TYPE, "TackTypeError", "A bad type: dtype or argument kind."},
    {TACK_KIND_INDEX, "TackIndexError", "An index outside an array."},
    {TACK_KIND_OVERFLOW, "TackOverflowError", "A value that does not fit its dtype."},
    {TACK_KIND_MEMORY, "TackMemoryError", "An allocation failed."},
    {TACK_KIND_RUNTIME, "TackRuntimeError", "A state or environment problem."},
    {TACK_KIND_READ_ONLY, "ReadOnlyError", "A host write to a non-writable array."},
    {TACK_KIND_DEVICE, "DeviceUnavailableError", "A device or its driver is missing."},
    {TACK_KIND_BUFFER, "DLPackExportError", "A DLPack export was refused."},
    {TACK_KIND_DLPACK_VALUE, "DLPackError", "A DLPack tensor was refused."},
    {TACK_KIND_DLPACK_TYPE, "DLPackTypeError", "A DLPack dtype was refused."},
    {TACK_KIND_DLPACK_DEVICE, "DLPackDeviceError",
     "A DLPack tensor is on a device the importing device cannot wrap."},
    {TACK_KIND_ZERO_DIVISION, "TackZeroDivisionError", "Integer division by zero."},
    {TACK_KIND_COMPILE, "CompileError", "A kernel failed to compile."},
};

/* The builtins each kind also derives from (NULL-terminated). */
static int
builtin_bases(tack_error_kind kind, PyObject **bases)
{
    int n = 0;
    switch (kind) {
    case TACK_KIND_VALUE: bases[n++] = PyExc_ValueError; break;
    case TACK_KIND_TYPE: bases[n++] = PyExc_TypeError; break;
    case TACK_KIND_INDEX: bases[n++] = PyExc_IndexError; break;
    case TACK_KIND_OVERFLOW: bases[n++] = PyExc_OverflowError; break;
    case TACK_KIND_MEMORY: bases[n++] = PyExc_MemoryError; break;
    case TACK_KIND_RUNTIME:
    case TACK_KIND_READ_ONLY:
    case TACK_KIND_DEVICE:
    case TACK_KIND_COMPILE: bases[n++] = PyExc_RuntimeError; break;
    case TACK_KIND_BUFFER: bases[n++] = PyExc_BufferError; break;
    case TACK_KIND_DLPACK_VALUE:
        bases[n++] = PyExc_ValueError;
        bases[n++] = PyExc_BufferError;
        break;
    case TACK_KIND_DLPACK_TYPE:
        bases[n++] = PyExc_TypeError;
        bases[n++] = PyExc_BufferError;
        break;
    case TACK_KIND_DLPACK_DEVICE:
        bases[n++] = PyExc_RuntimeError;
        bases[n++] = PyExc_BufferError;
        break;
    case TACK_KIND_ZERO_DIVISION: bases[n++] = PyExc_ZeroDivisionError; break;
    default: break;
    }
    return n;
}

static PyObject *
new_class(PyObject *module, const char *name, const char *doc, PyObject *base,
          PyObject **extra, int nextra)
{
    PyObject *bases = PyTuple_New(1 + nextra);
    if (!bases) {
        return NULL;
    }
    PyTuple_SET_ITEM(bases, 0, Py_NewRef(base));
    for (int k = 0; k < nextra; k++) {
        PyTuple_SET_ITEM(bases, 1 + k, Py_NewRef(extra[k]));
    }
    char qualified[96];
    PyOS_snprintf(qualified, sizeof qualified, "tack.%s", name);
    PyObject *cls = PyErr_NewExceptionWithDoc(qualified, doc, bases, NULL);
    Py_DECREF(bases);
    if (cls && PyModule_AddObjectRef(module, name, cls) < 0) {
        Py_CLEAR(cls);
    }
    return cls;
}

int
tackpy_errors_init(PyObject *module, tackpy_state *st)
{
    st->TackError = new_class(module, "TackError", "Base class of every Tack error.",
                              PyExc_Exception, NULL, 0);
    if (!st->TackError) {
        return -1;
    }
    for (size_t k = 0; k < sizeof kind_classes / sizeof kind_classes[0]; k++) {
        PyObject *bases[3];
        int n = builtin_bases(kind_classes[k].kind, bases);
        PyObject *cls = new_class(module, kind_classes[k].name, kind_classes[k].doc,
                                  st->TackError, bases, n);
        if (!cls) {
            return -1;
        }
        st->kind_exc[kind_classes[k].kind] = cls;
    }
    PyObject *syntax[] = {PyExc_SyntaxError};
    st->KernelError =
        new_class(module, "KernelError",
                  "Python that a Tack kernel cannot compile; filename and "
                  "lineno point at the kernel's source.",
                  st->TackError, syntax, 1);
    return st->KernelError ? 0 : -1;
}

PyObject *
tackpy_raise_kind(tackpy_state *st, tack_error_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) {
        PyObject *cls = st->kind_exc[kind] ? st->kind_exc[kind] : st->TackError;
        PyErr_SetObject(cls, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

PyObject *
tackpy_raise(tackpy_state *st, tack_status status)
{
    if (status == TACK_ERR_NO_MEMORY) {
        /* The builtin, so that code catching MemoryError from NumPy catches ours. */
        PyErr_SetString(st->kind_exc[TACK_KIND_MEMORY], tack_last_error());
        return NULL;
    }
    const char *msg = tack_last_error();
    if (!msg[0]) {
        msg = tack_status_message(status);
    }
    return tackpy_raise_kind(st, tack_status_kind(status), "%s", msg);
}

int
tackpy_raise_int(tackpy_state *st, tack_status status)
{
    tackpy_raise(st, status);
    return -1;
}

PyObject *
tackpy_raise_compile(tackpy_state *st, tack_status status, const char *log)
{
    if (status == TACK_ERR_COMPILE && log) {
        return tackpy_raise_kind(st, TACK_KIND_COMPILE, "%s:\n%s", tack_last_error(),
                                 log);
    }
    return tackpy_raise(st, status);
}

/*
 * errors.c: Tack's exception classes and the one way a failure becomes an exception.
 *
 * The classes come from the runtime's TACK_ERROR_KIND_LIST: one per error kind,
 * deriving from tack.TackError and from the builtins docs/errors.md lists for it;
 * DLPack refusals also derive from BufferError, so Array API consumers that catch
 * BufferError see them. Every exception the extension raises for a failure comes
 * from a status (which decides the class) and a message: the runtime's
 * (tackpy_raise), with the remedy worded for Python users, or the binding's own
 * (tackpy_raise_fmt).
 */
#include "tackpy.h"
#include <stdarg.h>

/* The builtins named in TACK_ERROR_KIND_LIST, by address (constant expressions). */
#define BASE_None NULL
#define BASE_ValueError &PyExc_ValueError
#define BASE_TypeError &PyExc_TypeError
#define BASE_IndexError &PyExc_IndexError
#define BASE_OverflowError &PyExc_OverflowError
#define BASE_MemoryError &PyExc_MemoryError
#define BASE_RuntimeError &PyExc_RuntimeError
#define BASE_BufferError &PyExc_BufferError
#define BASE_ZeroDivisionError &PyExc_ZeroDivisionError

/* One row per error kind, from the runtime's list. */
static const struct {
    const char *name;       /* the class, an attribute of the tack module */
    PyObject *const *base;  /* the builtin it also derives from */
    PyObject *const *base2; /* a second builtin (BufferError), or NULL */
    const char *builtin;    /* the first builtin's name */
    const char *doc;
} kind_rows[TACK_KIND_COUNT] = {
#define KIND_ROW(e, cls, b1, b2, doc) [e] = {cls, BASE_##b1, BASE_##b2, #b1, doc},
    TACK_ERROR_KIND_LIST(KIND_ROW)
#undef KIND_ROW
};

/* The remedies of status.h in Python terms, indexed by tack_remedy. */
static const char *const python_remedy[TACK_REMEDY_COUNT] = {
    [TACK_REMEDY_NONE] = "",
    [TACK_REMEDY_COPY] = "pass copy=True",
    [TACK_REMEDY_VERSIONED] =
        "request a versioned capsule with max_version=(1, 0) or "
        "later, or export a copy with copy=True",
    [TACK_REMEDY_WRITABLE_COPY] = "copy it with tack.array(a) to get a writable array",
    [TACK_REMEDY_HOST_COPY] =
        "move the tensor to host memory, then import it with "
        "copy=True",
    [TACK_REMEDY_DLPACK_1] = "ask the producer for x.__dlpack__(max_version=(1, 3))",
    [TACK_REMEDY_CPU] = "use tack.device('cpu')",
    [TACK_REMEDY_NO_STREAM] = "pass stream=None (or -1)",
    [TACK_REMEDY_OWN_DEVICE] =
        "request its own device, or the host (1, 0) with "
        "copy=True",
    [TACK_REMEDY_TO_CPU] = "copy it with a.to_device('cpu')",
};

/* The name of the builtin an exchange-API error reports for kind ("ValueError"). */
const char *
tackpy_kind_builtin_name(tack_error_kind kind)
{
    return kind > TACK_KIND_NONE && kind < TACK_KIND_COUNT ? kind_rows[kind].builtin
                                                           : "RuntimeError";
}

static PyObject *
new_class(PyObject *module, const char *name, const char *doc, PyObject *base,
          PyObject *extra1, PyObject *extra2)
{
    PyObject *bases = extra2   ? PyTuple_Pack(3, base, extra1, extra2)
                      : extra1 ? PyTuple_Pack(2, base, extra1)
                               : PyTuple_Pack(1, base);
    if (!bases) {
        return NULL;
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
    /* A remedy added to status.h without its Python wording would be a NULL entry
     * above: refuse to import rather than crash on the first error that uses it. */
    for (int r = 0; r < TACK_REMEDY_COUNT; r++) {
        if (!python_remedy[r]) {
            PyErr_Format(PyExc_SystemError,
                         "remedy %d of status.h has no Python wording in errors.c", r);
            return -1;
        }
    }
    st->TackError = new_class(module, "TackError", "Base class of every Tack error.",
                              PyExc_Exception, NULL, NULL);
    if (!st->TackError) {
        return -1;
    }
    for (int k = TACK_KIND_NONE + 1; k < TACK_KIND_COUNT; k++) {
        PyObject *base2 = kind_rows[k].base2 ? *kind_rows[k].base2 : NULL;
        st->kind_exc[k] = new_class(module, kind_rows[k].name, kind_rows[k].doc,
                                    st->TackError, *kind_rows[k].base, base2);
        if (!st->kind_exc[k]) {
            return -1;
        }
    }
    st->KernelError =
        new_class(module, "KernelError",
                  "Python that a Tack kernel cannot compile; filename and "
                  "lineno point at the kernel's source.",
                  st->TackError, PyExc_SyntaxError, NULL);
    return st->KernelError ? 0 : -1;
}

/* The one exit: the class of status's kind, with msg (consumed). */
static PyObject *
raise_message(tackpy_state *st, tack_status status, PyObject *msg)
{
    if (!msg) {
        return NULL;
    }
    tack_error_kind kind = tack_status_kind(status);
    PyObject *cls =
        kind > TACK_KIND_NONE && kind < TACK_KIND_COUNT && st->kind_exc[kind]
            ? st->kind_exc[kind]
            : st->TackError;
    PyErr_SetObject(cls, msg);
    Py_DECREF(msg);
    return NULL;
}

PyObject *
tackpy_raise_fmt(tackpy_state *st, tack_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    return raise_message(st, status, msg);
}

PyObject *
tackpy_raise(tackpy_state *st, tack_status status)
{
    const char *problem = tack_last_error_problem();
    if (!problem[0]) {
        problem = tack_status_message(status);
    }
    tack_remedy remedy = tack_last_error_remedy();
    const char *advice =
        (unsigned)remedy < TACK_REMEDY_COUNT ? python_remedy[remedy] : "";
    const char *origin = tack_last_error_origin();
    return raise_message(
        st, status,
        PyUnicode_FromFormat("%s%s%s%s%s%s", problem, advice[0] ? ": " : "", advice,
                             origin[0] ? " [" : "", origin, origin[0] ? "]" : ""));
}

int
tackpy_raise_int(tackpy_state *st, tack_status status)
{
    tackpy_raise(st, status);
    return -1;
}

int
tackpy_raise_fmt_int(tackpy_state *st, tack_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    raise_message(st, status, msg);
    return -1;
}

PyObject *
tackpy_raise_compile(tackpy_state *st, tack_status status, const char *log)
{
    if (status == TACK_ERR_COMPILE && log) {
        return tackpy_raise_fmt(st, TACK_ERR_COMPILE, "%s:\n%s", tack_last_error(),
                                log);
    }
    return tackpy_raise(st, status);
}

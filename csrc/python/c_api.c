/*
 * c_api.c: the table of tack/python.h, exported as the capsule tack._tack._C_API. It
 * hands arrays between a C program (or another extension) and Python without copies;
 * the program and the extension share one runtime (runtime_copies.c), so a
 * tack_array is the same object on both sides and only references change hands.
 *
 * The functions are called with the GIL held but without a module argument: they
 * find the module in sys.modules, which holds it while the program may call them.
 * Every failure sets a Python exception and records its message for
 * tack_last_error() too, as python.h promises.
 */
#include "tackpy.h"
#include "tack/python.h"

/* The pending exception's status for tack_last_error(): its kind, roughly. */
static tack_status
status_of_exception(PyObject *type)
{
    if (PyErr_GivenExceptionMatches(type, PyExc_MemoryError)) {
        return TACK_ERR_NO_MEMORY;
    }
    if (PyErr_GivenExceptionMatches(type, PyExc_TypeError)) {
        return TACK_ERR_BAD_TYPE;
    }
    if (PyErr_GivenExceptionMatches(type, PyExc_BufferError)) {
        return TACK_ERR_EXPORT_REFUSED;
    }
    if (PyErr_GivenExceptionMatches(type, PyExc_ValueError)) {
        return TACK_ERR_INVALID_ARGUMENT;
    }
    return TACK_ERR_UNSUPPORTED;
}

/* Records the pending Python exception as this thread's last Tack error, leaving
 * the exception pending. A failure to format it records the status alone. */
static void
record_exception(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    PyErr_Clear(); /* of str() itself; the original is restored below */
    tack_set_error(status_of_exception(type), msg);
    Py_XDECREF(text);
    PyErr_Restore(type, value, tb);
}

/* tack._tack's state, with *module a new reference to release; NULL with an
 * exception once the module is gone from sys.modules (interpreter shutdown). */
static tackpy_state *
state_now(PyObject **module)
{
    PyObject *name = PyUnicode_FromString("tack._tack");
    *module = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    if (!*module) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError,
                            "tack._tack is not imported (any more): call "
                            "tack_py_import() while Python runs");
        }
        return NULL;
    }
    return PyModule_GetState(*module);
}

static PyObject *
api_from_array(tack_array *arr, int64_t stream)
{
    PyObject *module;
    tackpy_state *st = state_now(&module);
    PyObject *result = NULL;
    if (!st) {
        goto failed;
    }
    if (!arr) {
        PyErr_SetString(PyExc_ValueError, "tack_py_from_array(): arr is NULL");
        goto failed;
    }
    /* Later work on arr follows the caller's stream; consumers asking by DLPack are
     * ordered after Tack's stream, so after the caller's too. */
    tack_status status = tack_device_follow_stream(tack_array_device(arr), stream);
    if (status != TACK_OK) {
        tackpy_raise(st, status); /* recorded by the runtime already */
        Py_DECREF(module);
        return NULL;
    }
    tack_array_retain(arr); /* the object's own reference; the caller keeps its one */
    result = tackpy_array_wrap(st, arr);
    if (result) {
        Py_DECREF(module);
        return result;
    }
failed:
    record_exception();
    Py_XDECREF(module);
    return NULL;
}

/*
 * The tack.Array's own C array, shared: for an import, the array over the producer's
 * memory. Its last release may run the producer's DLPack deleter, which the DLPack
 * rules make callable from any thread (it takes the GIL itself) and which leaks
 * rather than touches an interpreter that has finalized (NumPy's does, as do Tack's
 * own holds of Python objects: array_from_ptr, __cuda_array_interface__).
 */
static tack_array *
api_to_array(PyObject *obj)
{
    PyObject *module;
    tackpy_state *st = state_now(&module);
    if (!st) {
        record_exception();
        return NULL;
    }
    tack_array *out = NULL;
    PyObject *array = NULL;
    if (!obj) {
        PyErr_SetString(PyExc_ValueError, "tack_py_to_array(): obj is NULL");
    }
    else if (tackpy_array_check(st, obj)) {
        array = Py_NewRef(obj);
    }
    else if (!PyObject_HasAttr(obj, st->names[TACKPY_NAME___dlpack__])) {
        PyErr_Format(PyExc_TypeError,
                     "tack_py_to_array(): %.100s has no __dlpack__: pass a tack.Array "
                     "or a DLPack producer (a NumPy array, a torch.Tensor, ...)",
                     Py_TYPE(obj)->tp_name);
    }
    else {
        array = PyObject_CallMethod(module, "from_dlpack", "O", obj);
    }
    if (array) {
        out = TACKPY_ARR(array);
        tack_array_retain(out);
        Py_DECREF(array);
    }
    if (!out) {
        record_exception();
    }
    Py_DECREF(module);
    return out;
}

/* Static: the capsule hands out a borrowed pointer valid while the process runs. */
static const tack_py_api api_table = {
    .size = sizeof(tack_py_api),
    .version = TACK_PY_API_VERSION,
    .check_runtime = tackpy_check_runtime_of_host,
    .from_array = api_from_array,
    .to_array = api_to_array,
};

int
tackpy_c_api_init(PyObject *module)
{
    PyObject *capsule = PyCapsule_New((void *)&api_table, TACK_PY_API_CAPSULE, NULL);
    if (!capsule) {
        return -1;
    }
    int rc = PyModule_AddObjectRef(module, "_C_API", capsule);
    Py_DECREF(capsule);
    return rc;
}
